"""Where each tool keeps its history.

Precedence, per tool: its own flag (``--codex-home`` ...) > ``--home DIR`` (DIR stands in for $HOME
for every tool) > the tool's environment variable > the default under $HOME.
``--home`` beats the environment on purpose: it names a whole other home (a backup, a test tree),
and mixing that home with the live ``CODEX_HOME`` would be surprising.

Every path is made absolute here, once, against the working directory at start: plans, journals and
temps record absolute paths (a relative ``--codex-home`` used to plan and then fail as an "invalid
plan"). Absolute and normalised, not resolved: a symlinked home stays the path the user named.

Which paths there are is not known here: each tool declares its own in its row of the tool table
(``homes=`` in histmig/tools/__init__.py; docs/ARCHITECTURE.md): a :class:`HomeDir` (env variable,
default under $HOME, CLI flag), a :class:`Derived` path found from the others (a file beside a home,
an optional extra folder) or a :class:`Same` (another name for a path already declared). Core is below
the table (the layers in pyproject.toml), so :func:`resolve_homes` takes the declarations as an
argument; ``histmig.tools.resolve_homes`` is the same with the table's declarations filled in.
"""
from __future__ import annotations

import os
from dataclasses import field
from pathlib import Path
from typing import Callable, Iterable, Mapping, Union

from histmig.core.valueclass import value


@value(frozen=True)
class HomeDir:
    """A tool's home folder: ``--<flag>`` > ``--home`` > ``$<env>`` > ``$HOME/<default>``."""
    name: str       # the Homes attribute (``homes.codex``)
    env: str        # the environment variable that names it
    default: str | Callable[[Path, Mapping[str, str], bool], Path]   # below $HOME, or (base, env, --home given) -> path
    flag: str       # the CLI option without its dashes; its keyword to resolve_homes has "_" for "-"
    help: str       # the CLI option's help text
    env_subdir: str = ""    # the home below the variable's folder (a variable that names a $HOME stand-in)

    def __init__(self, name: str, env: str, default: str | Callable[[Path, Mapping[str, str], bool], Path],
                 flag: str, help: str, env_subdir: str = "") -> None:
        self.__dict__.update(name=name, env=env, default=default, flag=flag, help=help, env_subdir=env_subdir)

    def default_for(self, base: Path, env: Mapping[str, str], explicit_home: bool) -> Path:
        return base / self.default if isinstance(self.default, str) else self.default(base, env, explicit_home)

    @property
    def keyword(self) -> str:
        return self.flag.replace("-", "_")


@value(frozen=True)
class Derived:
    """A path found from the homes already resolved (``find`` gets a :class:`Found`).

    ``folder=False``: a single file the tool keeps outside its home (a plan may name it as a root).
    ``folder=True``: an optional extra folder writes may go to; None when not set."""
    name: str
    find: Callable[["Found"], Path | None]
    folder: bool = False

    def __init__(self, name: str, find: Callable[["Found"], Path | None], folder: bool = False) -> None:
        self.__dict__.update(name=name, find=find, folder=folder)


@value(frozen=True)
class Same:
    """Another name for a declared path (the manifest layout lives in the Claude home)."""
    name: str
    of: str

    def __init__(self, name: str, of: str) -> None:
        self.__dict__.update(name=name, of=of)


Spec = Union[HomeDir, Derived, Same]


@value(frozen=True)
class Found:
    """What a :class:`Derived` may look at: the homes resolved so far and how each was found."""
    base: Path                      # the $HOME stand-in
    explicit_home: bool             # --home given: the environment names no home
    env: Mapping[str, str]
    paths: Mapping[str, Path]
    named: frozenset[str]           # homes named by their flag or their variable (not defaulted)
    flagged: frozenset[str]         # homes named by their flag

    def __init__(self, base: Path, explicit_home: bool, env: Mapping[str, str], paths: Mapping[str, Path],
                 named: frozenset[str], flagged: frozenset[str]) -> None:
        self.__dict__.update(base=base, explicit_home=explicit_home, env=env, paths=paths, named=named,
                             flagged=flagged)

    def from_env(self, var: str) -> Path | None:
        """``$var`` made absolute, unless --home was given or it is unset."""
        return _absolute(self.env[var]) if not self.explicit_home and self.env.get(var) else None


@value(frozen=True)
class Homes:
    """Every path histmig reads or writes, resolved once (:func:`resolve_homes`)."""
    home: Path                      # the $HOME stand-in
    state: Path                     # histmig's own state dir (journal, backups, lock)
    # name -> path in table order (``homes.codex``); an optional folder not set is None
    paths: tuple[tuple[str, Path | None], ...] = ()
    files: frozenset[str] = frozenset()         # which of them are single files (``~/.claude.json``)
    folders: frozenset[str] = frozenset()       # which are optional extra folders (CODEX_SQLITE_HOME)
    same: tuple[tuple[str, str], ...] = ()      # other names: (alias, declared name)
    _index: dict = field(init=False, repr=False, compare=False, hash=False)

    def __init__(self, home: Path, state: Path, paths: tuple[tuple[str, Path | None], ...] = (),
                 files: frozenset[str] = frozenset(), folders: frozenset[str] = frozenset(),
                 same: tuple[tuple[str, str], ...] = ()) -> None:
        index = dict(paths)
        index.update((alias, index[of]) for alias, of in same)
        self.__dict__.update(home=home, state=state, paths=paths, files=files, folders=folders, same=same,
                             _index=index)

    def __getattr__(self, name: str) -> Path | None:
        """``homes.codex``: a path some tool declared."""
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self._index[name]
        except KeyError:
            raise AttributeError(f"no tool declares a home named {name!r}") from None

    def roots(self) -> list[Path]:
        """Every folder histmig may write under (writes are confined to these)."""
        roots = [p for n, p in self.paths if n not in self.files and n not in self.folders]
        roots += [p for n, p in self.paths if n in self.folders and p is not None]
        return roots + [r for r in tool_homes(self) if r not in roots]

    def root_files(self) -> list[Path]:
        """Single files tools keep outside their homes, in table order (a plan may name one as a root)."""
        return [p for n, p in self.paths if n in self.files and p is not None]   # an optional file: None when unset

    def to_dict(self) -> dict[str, str | None]:
        """home, the homes and files, state, the optional folders: the order ``--json`` always had."""
        items = [("home", self.home), *((n, p) for n, p in self.paths if n not in self.folders),
                 ("state", self.state), *((n, p) for n, p in self.paths if n in self.folders)]
        return {k: (str(v) if v is not None else None) for k, v in items}


def _no_more_homes(homes: Homes) -> Iterable[Path]:
    return ()


# Set by the tool table (histmig/tools/__init__.py) when it loads; core cannot import the table (the
# layers in pyproject.toml). ``tool_homes``: the homes of rows that declare none (their ``home``
# only), so those are roots too. ``tool_guards``: Homes -> the write guards of every tool
# (histmig.apply.guards.WriteGuards), the apply engine's default when its caller passes none. Both are
# installed before any Homes exists: the resolver that fills in the table's declarations is
# ``histmig.tools.resolve_homes``, and importing it loads the table.
tool_homes: Callable[[Homes], Iterable[Path]] = _no_more_homes
tool_guards: Callable[[Homes], object] | None = None


def home_flags(specs: Iterable[Spec]) -> list[HomeDir]:
    """The declared homes, each with its CLI flag, in declaration order."""
    return [s for s in specs if isinstance(s, HomeDir)]


def resolve_homes(
    *,
    home: str | os.PathLike | None = None,
    state_dir: str | os.PathLike | None = None,
    env: Mapping[str, str] | None = None,
    specs: Iterable[Spec],
    **flags: str | os.PathLike | None,
) -> Homes:
    """The homes for these flags (``codex_home=`` ...: one keyword per declared home, its flag's name)
    from ``specs`` (the tool table's declarations: ``histmig.tools.resolve_homes`` passes them)."""
    specs = tuple(specs)
    unknown = sorted(set(flags) - {s.keyword for s in specs if isinstance(s, HomeDir)})
    if unknown:
        raise TypeError(f"resolve_homes() got an unexpected keyword argument {unknown[0]!r}")
    env = os.environ if env is None else env
    explicit_home = home is not None
    base = _absolute(home if explicit_home else (env.get("HOME") or os.path.expanduser("~")))

    paths: dict[str, Path] = {}
    named: set[str] = set()
    flagged: set[str] = set()
    for s in (s for s in specs if isinstance(s, HomeDir)):
        if flags.get(s.keyword) is not None:
            paths[s.name] = _absolute(flags[s.keyword])
            named.add(s.name)
            flagged.add(s.name)
        elif not explicit_home and env.get(s.env):
            paths[s.name] = _absolute(os.path.join(env[s.env], s.env_subdir))
            named.add(s.name)
        else:
            paths[s.name] = s.default_for(base, env, explicit_home)
    found = Found(base, explicit_home, env, dict(paths), frozenset(named), frozenset(flagged))

    ordered = [(s.name, paths[s.name] if isinstance(s, HomeDir) else s.find(found))
               for s in specs if not isinstance(s, Same)]
    derived = [s for s in specs if isinstance(s, Derived)]
    return Homes(home=base, state=_state(state_dir, env, explicit_home, base), paths=tuple(ordered),
                 files=frozenset(s.name for s in derived if not s.folder),
                 folders=frozenset(s.name for s in derived if s.folder),
                 same=tuple((s.name, s.of) for s in specs if isinstance(s, Same)))


def xdg(var: str, fallback: str, sub: str) -> Callable[[Path, Mapping[str, str], bool], Path]:
    """A :class:`HomeDir` default in an XDG base folder: ``$<var>/<sub>`` (an absolute ``$var`` only,
    and not with --home), else ``$HOME/<fallback>/<sub>`` (XDG Base Directory spec)."""
    def default(base: Path, env: Mapping[str, str], explicit_home: bool) -> Path:
        if not explicit_home and os.path.isabs(env.get(var) or ""):
            return Path(os.path.normpath(env[var])) / sub
        return base / fallback / sub
    return default


def _state(state_dir, env: Mapping[str, str], explicit_home: bool, base: Path) -> Path:
    if state_dir is not None:
        return _absolute(state_dir)
    if env.get("HISTMIG_STATE_DIR"):
        return _absolute(env["HISTMIG_STATE_DIR"])
    if not explicit_home and os.path.isabs(env.get("XDG_STATE_HOME") or ""):
        # a relative XDG_STATE_HOME is invalid and to be ignored (XDG Base Directory spec)
        return Path(env["XDG_STATE_HOME"]) / "histmig"
    return base / ".local" / "state" / "histmig"


def _absolute(path: str | os.PathLike) -> Path:
    """``~`` expanded, joined to the working directory when relative, normalised (plans accept only
    normalised absolute paths). A ``..`` is taken the way the kernel takes it: the part up to the
    last ``..`` is resolved (``link/..`` is the link target's parent), the rest stays as named."""
    p = os.path.expanduser(os.fspath(path))
    if not os.path.isabs(p):
        p = os.path.join(os.getcwd(), p)
    parts = p.split(os.sep)
    if ".." in parts:
        last = len(parts) - 1 - parts[::-1].index("..")
        p = os.path.join(os.path.realpath(os.sep.join(parts[:last + 1]) or os.sep), *parts[last + 1:])
    return Path(os.path.normpath(p))
