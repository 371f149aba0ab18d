"""Where each tool keeps its history.

Precedence, per tool: its own flag (``--codex-home`` ...) > ``--home DIR`` (DIR stands in for $HOME
for every tool) > the tool's environment variable > the default under $HOME.
``--home`` beats the environment on purpose: it names a whole other home (a backup, a test tree),
and mixing that home with the live ``CODEX_HOME`` would be surprising.

Every path is made absolute here, once, against the working directory at start: plans, journals and
temps record absolute paths (a relative ``--codex-home`` used to plan and then fail as an "invalid
plan"). Absolute and normalised, not resolved: a symlinked home stays the path the user named.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, asdict
from pathlib import Path
from typing import Callable, Iterable, Mapping


@dataclass(frozen=True)
class Homes:
    home: Path              # the $HOME stand-in
    codex: Path             # CODEX_HOME
    claude: Path            # CLAUDE_CONFIG_DIR (also the root of the manifest layout)
    claude_json: Path       # ~/.claude.json or $CLAUDE_CONFIG_DIR/.claude.json
    mini_cc: Path           # MINI_CC_HOME
    state: Path             # histmig's own state dir (journal, backups, lock)
    codex_sqlite: Path | None = None  # CODEX_SQLITE_HOME when set

    @property
    def manifest(self) -> Path:
        """The manifest layout lives under the Claude home (projects/<hash>/sessions/<id>/)."""
        return self.claude

    def roots(self) -> list[Path]:
        """Every folder histmig may write under (writes are confined to these)."""
        roots = [self.codex, self.claude, self.mini_cc]
        if self.codex_sqlite:
            roots.append(self.codex_sqlite)
        return roots + [r for r in tool_homes(self) if r not in roots]

    def to_dict(self) -> dict[str, str | None]:
        return {k: (str(v) if v is not None else None) for k, v in asdict(self).items()}


def _no_more_homes(homes: Homes) -> Iterable[Path]:
    return ()


# Every tool's home, set by the tool table (histmig/tools/__init__.py) when it loads, so the home of a
# tool registered there is a root too; core cannot import the table (the layers in pyproject.toml).
tool_homes: Callable[[Homes], Iterable[Path]] = _no_more_homes


def resolve_homes(
    *,
    home: str | os.PathLike | None = None,
    codex_home: str | os.PathLike | None = None,
    claude_home: str | os.PathLike | None = None,
    mini_cc_home: str | os.PathLike | None = None,
    state_dir: str | os.PathLike | None = None,
    env: Mapping[str, str] | None = None,
) -> Homes:
    env = os.environ if env is None else env
    explicit_home = home is not None
    base = _absolute(home if explicit_home else (env.get("HOME") or os.path.expanduser("~")))

    def pick(flag, var: str, default: Path) -> tuple[Path, bool]:
        if flag is not None:
            return _absolute(flag), True
        if not explicit_home and env.get(var):
            return _absolute(env[var]), True
        return default, False

    codex, _ = pick(codex_home, "CODEX_HOME", base / ".codex")
    claude, claude_custom = pick(claude_home, "CLAUDE_CONFIG_DIR", base / ".claude")
    mini_cc, _ = pick(mini_cc_home, "MINI_CC_HOME", base / ".mini_cc")
    claude_json = claude / ".claude.json" if claude_custom else base / ".claude.json"

    if state_dir is not None:
        state = _absolute(state_dir)
    elif env.get("HISTMIG_STATE_DIR"):
        state = _absolute(env["HISTMIG_STATE_DIR"])
    elif not explicit_home and os.path.isabs(env.get("XDG_STATE_HOME") or ""):
        # a relative XDG_STATE_HOME is invalid and to be ignored (XDG Base Directory spec)
        state = Path(env["XDG_STATE_HOME"]) / "histmig"
    else:
        state = base / ".local" / "state" / "histmig"

    sqlite_home = None
    if not explicit_home and codex_home is None and env.get("CODEX_SQLITE_HOME"):
        sqlite_home = _absolute(env["CODEX_SQLITE_HOME"])
    return Homes(home=base, codex=codex, claude=claude, claude_json=claude_json,
                 mini_cc=mini_cc, state=state, codex_sqlite=sqlite_home)


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
