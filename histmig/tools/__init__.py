"""THE tool table: one row per tool, and the lazy lookup of each tool's hooks.

A row names a tool (canonical name, aliases), its package (``histmig.tools.<tool>``), where its home
is (a function of :class:`~histmig.core.homes.Homes`) and which other tools its move planning needs.
Hooks are found by convention inside the package and imported only when a command asks for them
(``flip``'s dry run loads no Claude code; ``scan --tool codex`` no writer):

- ``adapter``: ``<pkg>.adapter.ADAPTER``, read / discover / serialize (the protocol below)
- ``writer``: ``<pkg>.write.write``, convert's writer: ``write(conversation, target) -> Written``
- ``move``: ``<pkg>.move.plan``, ``plan(homes, pathmap, plans, opts)`` fills ``plans[name]``
- ``fields``: ``<pkg>.move.line_fields``, the path fields of one record (move's appended-tail edit)
- ``unowned``: ``<pkg>.move.unowned_fields``, ``(path) -> fields or None`` for a file no session owns
- ``doctor``: ``<pkg>.doctor.check``, ``check(homes, index, now, ignored) -> [Finding]``
- ``flip``: the module ``<pkg>.flip`` itself, the tool's model-provider re-labelling (``plan_flip``,
  ``provider_census``, ``check_new``, ``check_old``, ``tail_transform``; histmig/verbs/flip says what each does)
- ``target``: ``<pkg>.target.RULES``, how the tool receives converted sessions (id kind, folder mode,
  settings, rows to register): a ``toolkit.convert.common.TargetRules``; defaults when absent
- ``provenance``: the module ``<pkg>.provenance`` itself (``marker_of(path)``, ``folders(homes, cwd)``,
  ``files(folder)``): where a converted session records its source, and where converted copies live
- ``undo``: ``<pkg>.undo.UNDO``, a ``toolkit.undo.UndoHook``: what the tool's clients did since a
  transaction (files they moved, settings files they rewrote, rows and byte offsets they keep)
- ``guards``: ``<pkg>.guards.guards``, ``guards(homes) -> histmig.apply.guards.WriteGuards``: the locks
  its client takes (held around writes) and its live-session probe (:func:`guards_for`)
- ``samples``: ``<pkg>.samples.installed``, ``installed(homes)``: fix-ups after the bundled samples of
  the tool (``histmig/samples/<tool>/``) were copied into its home (histmig/cli/samples.py)
- ``calls``: ``<pkg>.calls.CALLS``, a ``toolkit.convert.calls.Vocabulary``: its tool calls to and from the
  neutral call vocabulary (``to_neutral``, ``from_neutral``); convert's writers map every source call
  through it (tools sharing one ``CALLS`` object copy calls between them unchanged)
- ``archive``: ``<pkg>.archive.files``, ``files(ref) -> [Path]``: the files ``histmig archive`` keeps of one
  session (default without it: the session's file, or every file below its folder); None: the tool keeps
  sessions as rows of a shared database, not archived as files (histmig/verbs/archive)
- ``archive_rows`` / ``restore_rows`` / ``current_rows``: ``<pkg>.archive.rows``, ``insert_ops``,
  ``current_sha256``: for such a tool, one session's rows as JSON lines (with a key and a version), the
  inserts that put them back, and the sha256 of its rows as they are now (histmig/tools/opencode/archive.py)
- ``search``: ``<pkg>.search.SEARCH``, a ``toolkit.search.JsonlSource``: the JSONL files of a session and
  how its lines become records, so ``histmig search`` reads raw bytes and parses only the lines holding
  the phrase; a tool without it is searched through its adapter's read
- ``pack``: the module ``<pkg>.pack`` itself, its part of ``pack`` / ``unpack`` (``entry``, ``version``,
  ``place``, ``rows``, ``rule``; histmig/toolkit/pack.py says what each does and the defaults)

Where a tool keeps its history is declared in its row (``homes=``: :class:`~histmig.core.homes.HomeDir`
with its env variable, default and CLI flag, :class:`~histmig.core.homes.Derived` paths found from
those); ``resolve_homes`` and the CLI's ``--<tool>-home`` options are driven by these declarations.

A tool without a hook module simply has no part in that verb. Adding a tool = one folder under
``histmig/tools/`` plus one :func:`register` call (a row in ``TABLE`` below for a built-in).

The adapter protocol (``ADAPTER`` in ``<pkg>/adapter.py``):

- ``name``: the tool's canonical name
- ``lossless_parts``: the Part kinds it stores without loss (used by conversion property tests)
- ``detect(path) -> bool``: cheap test whether a file belongs to this format
- ``discover(homes) -> Iterator[SessionRef]``: lazy; reads at most heads and tails; a broken file
  becomes a ref with ``error`` set, never an exception
- ``read(path_or_ref) -> Session``: the whole session; every line kept (opaque ones too)
- ``serialize(session) -> bytes``: the main file's bytes; records with ``raw`` are emitted verbatim,
  so ``serialize(read(f)) == f.read_bytes()`` for every file of the format
- optional ``paths(homes) -> Iterator[PathRef]``: the files ``discover`` lists, in its order, as refs
  of their paths alone (nothing read): ``convert`` without ``--cwd`` reads each session once; with it
  ``listed(ref) -> SessionRef``, the ref ``discover`` gives that file, asked for where the read leaves
  something to the listing (it raised, it found no cwd, or the optional ``may_flag(session)`` says
  the listing might flag the file)
"""
from __future__ import annotations

import importlib
import os
import sys
from operator import attrgetter
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

from histmig.core import homes as homes_module
from histmig.core.homes import Derived, HomeDir, Same, Spec
from histmig.core.valueclass import value

# hook kind -> (module inside the tool's package, attribute of that module)
HOOKS = {"adapter": ("adapter", "ADAPTER"), "writer": ("write", "write"), "move": ("move", "plan"),
         "fields": ("move", "line_fields"), "unowned": ("move", "unowned_fields"), "doctor": ("doctor", "check"),
         "target": ("target", "RULES"), "provenance": ("provenance", None), "flip": ("flip", None),
         "undo": ("undo", "UNDO"), "guards": ("guards", "guards"), "samples": ("samples", "installed"),
         "calls": ("calls", "CALLS"), "archive": ("archive", "files"),
         "archive_rows": ("archive", "rows"), "restore_rows": ("archive", "insert_ops"),
         "current_rows": ("archive", "current_sha256"), "search": ("search", "SEARCH"),
         "pack": ("pack", None)}


@value(frozen=True)
class Tool:
    """A row of the tool table: where the tool's code is, where it keeps history, what it is also called."""

    name: str                           # canonical: what plans, findings and --json output say
    package: str                        # "histmig.tools.codex": the one folder with everything about it
    home: Callable[[Any], Any]          # Homes -> the folder the tool keeps its history in
    aliases: tuple[str, ...] = ()       # other spellings users type, any case
    needs: tuple[str, ...] = ()         # tools whose move planning must run first, also when not chosen
    homes: tuple[Spec, ...] = ()        # the paths it keeps history in, how each is found (core/homes.py)

    def __init__(self, name: str, package: str, home: Callable[[Any], Any], aliases: tuple[str, ...] = (),
                 needs: tuple[str, ...] = (), homes: tuple[Spec, ...] = ()) -> None:
        self.__dict__.update(name=name, package=package, home=home, aliases=aliases, needs=needs, homes=homes)

    def hook(self, kind: str) -> Any:
        """The tool's hook of this kind, imported now; None when the tool has no such module."""
        module, attr = HOOKS[kind]
        name = f"{self.package}.{module}"
        try:     # already imported: the lookup alone (convert asks for several hooks per session)
            module_ = sys.modules.get(name)
            if module_ is None or getattr(getattr(module_, "__spec__", None), "_initializing", False):
                # a module another thread is still importing is in sys.modules half-run (undo's file
                # threads each ask for the flip hook): the import waits for it, as `import` does
                module_ = importlib.import_module(name)
            return module_ if attr is None else getattr(module_, attr, None)
        except ModuleNotFoundError as e:
            if e.name != name:
                raise
            return None


TABLE: dict[str, Tool] = {}


def register(tool: Tool) -> Tool:
    """Add (or replace) a row. The order of registration is the order tools are listed, scanned,
    diagnosed and their operations laid out in a plan."""
    TABLE[tool.name] = tool
    return tool


register(Tool("codex", "histmig.tools.codex", attrgetter("codex"), aliases=("codex-cli",), homes=(
    HomeDir("codex", "CODEX_HOME", ".codex", "codex-home", "Codex home (default $CODEX_HOME or ~/.codex)."),
    # Codex's state databases may live elsewhere; a --codex-home or --home names a whole home instead
    Derived("codex_sqlite", lambda f: None if "codex" in f.flagged else f.from_env("CODEX_SQLITE_HOME"),
            folder=True))))
# ``claude``: doctor's finding codes say ``claude.``; ``~/.claude.json`` lies outside the Claude home,
# inside it when the home was named (CLAUDE_CONFIG_DIR or --claude-home)
register(Tool("claude-code", "histmig.tools.claude_code", attrgetter("claude"),
              aliases=("claude", "claude_code", "claudecode"), homes=(
    HomeDir("claude", "CLAUDE_CONFIG_DIR", ".claude", "claude-home",
            "Claude Code config home (default $CLAUDE_CONFIG_DIR or ~/.claude)."),
    Derived("claude_json", lambda f: (f.paths["claude"] if "claude" in f.named else f.base) / ".claude.json"))))
register(Tool("mini-cc", "histmig.tools.mini_cc", attrgetter("mini_cc"), aliases=("mini_cc", "minicc"), homes=(
    HomeDir("mini_cc", "MINI_CC_HOME", ".mini_cc", "mini-cc-home", "mini-cc home (default $MINI_CC_HOME or ~/.mini_cc)."),
)))
# the manifest layout lives in the Claude home's project folders, which Claude Code's move renames
register(Tool("manifest", "histmig.tools.manifest", attrgetter("manifest"), needs=("claude-code",),
              homes=(Same("manifest", "claude"),)))
# Qwen Code keeps sessions in its runtime folder: $QWEN_RUNTIME_DIR, else $QWEN_HOME, else ~/.qwen (docs/qwen.md)
register(Tool("qwen", "histmig.tools.qwen", attrgetter("qwen"), aliases=("qwen-code", "qwen_code", "qwencode"), homes=(
    HomeDir("qwen", "QWEN_RUNTIME_DIR", lambda base, env, explicit: (
        Path(os.path.abspath(env["QWEN_HOME"])) if not explicit and env.get("QWEN_HOME") else base / ".qwen"),
        "qwen-home", "Qwen Code home (default $QWEN_RUNTIME_DIR, $QWEN_HOME or ~/.qwen)."),
)))
# GEMINI_CLI_HOME names a $HOME stand-in: the home is its .gemini (docs/specs/gemini.md §1)
register(Tool("gemini", "histmig.tools.gemini", attrgetter("gemini"), aliases=("gemini-cli", "gemini_cli", "geminicli"),
              homes=(HomeDir("gemini", "GEMINI_CLI_HOME", ".gemini", "gemini-home",
                             "Gemini CLI home (default $GEMINI_CLI_HOME/.gemini or ~/.gemini).", env_subdir=".gemini"),)))


# Pi keeps sessions in <agent dir>/sessions/--<slug>--/, or in a flat session dir named by
# $PI_CODING_AGENT_SESSION_DIR or settings.json ``sessionDir`` (histmig/tools/pi/layout.py)
register(Tool("pi", "histmig.tools.pi", attrgetter("pi"), aliases=("pi-coding-agent", "pi-agent"), homes=(
    HomeDir("pi", "PI_CODING_AGENT_DIR", ".pi/agent", "pi-home",
            "Pi agent dir (default $PI_CODING_AGENT_DIR or ~/.pi/agent)."),
    Derived("pi_sessions", lambda f: _pi_session_dir(f), folder=True))))


# GitHub Copilot CLI keeps sessions in $COPILOT_HOME/session-state/<uuid>/ (default ~/.copilot; docs/copilot.md)
register(Tool("copilot", "histmig.tools.copilot", attrgetter("copilot"), aliases=("copilot-cli", "github-copilot"), homes=(
    HomeDir("copilot", "COPILOT_HOME", ".copilot", "copilot-home", "Copilot CLI home (default $COPILOT_HOME or ~/.copilot)."),
)))
# Cline CLI keeps sessions in <data>/sessions/<sid>/: <data> is $CLINE_DATA_DIR (not with --home or
# --cline-home), else <cline home>/data (histmig/tools/cline/adapter.py)
register(Tool("cline", "histmig.tools.cline", attrgetter("cline"), aliases=("cline-cli",), homes=(
    HomeDir("cline", "CLINE_DIR", ".cline", "cline-home", "Cline CLI home (default $CLINE_DIR or ~/.cline)."),
    Derived("cline_data", lambda f: None if "cline" in f.flagged else f.from_env("CLINE_DATA_DIR"), folder=True))))


def _pi_session_dir(found: Any) -> Any:
    """Pi's flat session dir: $PI_CODING_AGENT_SESSION_DIR (not with --home or --pi-home), else
    ``sessionDir`` in the agent dir's settings.json; None when neither is set."""
    from histmig.tools.pi.layout import settings_session_dir
    if "pi" not in found.flagged and found.from_env("PI_CODING_AGENT_SESSION_DIR") is not None:
        return found.from_env("PI_CODING_AGENT_SESSION_DIR")
    return settings_session_dir(found.paths["pi"])


# OpenCode keeps every session in one SQLite database in its data folder ($XDG_DATA_HOME/opencode);
# $OPENCODE_DB names another file (histmig/tools/opencode/layout.py)
register(Tool("opencode", "histmig.tools.opencode", attrgetter("opencode"), aliases=("opencode-ai", "open-code"), homes=(
    HomeDir("opencode", "XDG_DATA_HOME", homes_module.xdg("XDG_DATA_HOME", ".local/share", "opencode"),
            "opencode-home", "OpenCode data folder (default $XDG_DATA_HOME/opencode or ~/.local/share/opencode).",
            env_subdir="opencode"),
    Derived("opencode_db", lambda f: _opencode_db(f)))))


def _opencode_db(found: Any) -> Any:
    """$OPENCODE_DB (not with --home or --opencode-home); None (``opencode.db`` in the data folder) when unset."""
    from histmig.tools.opencode.layout import db_from_env
    value = None if "opencode" in found.flagged or found.explicit_home else found.env.get("OPENCODE_DB")
    return db_from_env(found.paths["opencode"], value) if value else None


class _Names(Mapping[str, str]):
    """A live view of the table as name -> adapter module (the old ``FORMATS``)."""

    def __getitem__(self, name: str) -> str:
        return f"{TABLE[name].package}.{HOOKS['adapter'][0]}"

    def __iter__(self) -> Iterator[str]:
        return iter(list(TABLE))

    def __len__(self) -> int:
        return len(TABLE)


class _Aliases(Mapping[str, str]):
    """A live view of every alias -> its canonical name."""

    def _all(self) -> dict[str, str]:
        return {a: t.name for t in TABLE.values() for a in t.aliases}

    def __getitem__(self, alias: str) -> str:
        return self._all()[alias]

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())


FORMATS: Mapping[str, str] = _Names()
ALIASES: Mapping[str, str] = _Aliases()


def names() -> tuple[str, ...]:
    """Every canonical tool name, in table order."""
    return tuple(TABLE)


def canonical(name: str) -> str:
    """The canonical tool name for ``name`` or one of its aliases (any case)."""
    if name in TABLE:      # a canonical name as it is (no alias is one): convert asks per session
        return name
    key = name.strip().lower()
    key = ALIASES.get(key, key)
    if key not in TABLE:
        from histmig.core.diagnostics import UsageError
        raise UsageError(f"unknown tool {name!r} (choose from {', '.join(TABLE)}; "
                         f"also accepted: {', '.join(ALIASES)})")
    return key


def tool(name: str) -> Tool:
    return TABLE[canonical(name)]


def hook(name: str, kind: str) -> Any:
    """One tool's hook (see the table in this module's docstring), or None."""
    return tool(name).hook(kind)


class _Hooks(Mapping[str, Any]):
    """name -> that tool's hook of one kind, imported on first use (``hooks("writer")["codex"]``)."""

    def __init__(self, kind: str):
        self.kind = kind

    def __getitem__(self, name: str) -> Any:
        found = hook(name, self.kind)
        if found is None:
            raise KeyError(name)
        return found

    def __iter__(self) -> Iterator[str]:
        return iter(list(TABLE))

    def __len__(self) -> int:
        return len(TABLE)


def hooks(kind: str) -> Mapping[str, Any]:
    return _Hooks(kind)


def adapter(name: str) -> Any:
    found = hook(name, "adapter")
    if found is None:
        raise ModuleNotFoundError(f"no adapter for {name}", name=FORMATS[canonical(name)])
    return found


def adapters() -> Iterator[Any]:
    """Every adapter that is available, in table order."""
    for row in list(TABLE.values()):
        found = row.hook("adapter")
        if found is not None:
            yield found


def homes_of(homes: Any) -> list[Any]:
    """Every tool's home, in table order, each once (the manifest layout shares the Claude home)."""
    out: list[Any] = []
    for row in TABLE.values():
        home = row.home(homes)
        if home not in out:
            out.append(home)
    return out


def specs() -> list[Spec]:
    """Every row's declared paths, in table order."""
    return [spec for row in TABLE.values() for spec in row.homes]


_every_spec = specs     # resolve_homes' own ``specs`` argument hides the function inside it


def home_flags() -> list[HomeDir]:
    """Every row's declared home with a CLI flag (``--codex-home`` ...), in table order."""
    return homes_module.home_flags(specs())


def resolve_homes(*, specs: Any = None, **options: Any) -> Any:
    """Where every tool keeps its history (histmig/core/homes.py: flag > ``--home`` > env > default), from
    the paths the rows declare (``specs`` overrides them). Importing this module installs the table's
    roots and write guards first, so every Homes it makes comes with them."""
    return homes_module.resolve_homes(specs=_every_spec() if specs is None else specs, **options)


def guards_for(homes: Any) -> Any:
    """Every tool's write guards for ``homes`` (its ``guards`` hook), merged in table order: the locks
    the apply engine holds and the live-session probes it runs (histmig/apply/guards.py)."""
    from histmig.apply.guards import WriteGuards
    out = WriteGuards()
    for row in list(TABLE.values()):
        made = row.hook("guards")
        if made is not None:
            out = out + made(homes)
    return out


def undeclared_homes(homes: Any) -> list[Any]:
    """The homes of rows that declare none (``homes=()``): resolve_homes does not know them."""
    return [row.home(homes) for row in list(TABLE.values()) if not row.homes]


homes_module.tool_homes = undeclared_homes   # a registered tool's home is a root writes may go to
homes_module.tool_guards = guards_for  # the apply engine's guards when its caller passes none


def files_of(homes: Any) -> list[Any]:
    """Single files tools keep outside their homes (``~/.claude.json``), in table order."""
    return homes.root_files()


def move_order(chosen: set[str]) -> list[str]:
    """The tools whose move hooks run for ``chosen``, in the order they run: a tool others need
    goes first together with the tools that need it (they read what it left waiting), then the
    rest in table order. Plans lay out operations in table order whatever this order is."""
    wanted = set(chosen) | {n for t in chosen for n in TABLE[t].needs}
    needed = [n for n in TABLE if any(n in TABLE[t].needs for t in wanted)]
    first = [n for n in needed if n in wanted]
    first += [t for t in TABLE if t in wanted and t not in first and any(n in first for n in TABLE[t].needs)]
    return first + [t for t in TABLE if t in wanted and t not in first]
