"""Where each tool keeps its history.

Precedence, per tool: its own flag (``--codex-home`` ...) > ``--home DIR`` (DIR stands in for $HOME
for every tool) > the tool's environment variable > the default under $HOME.
``--home`` beats the environment on purpose: it names a whole other home (a backup, a test tree),
and mixing that home with the live ``CODEX_HOME`` would be surprising.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, asdict
from pathlib import Path
from typing import Mapping


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
        return roots

    def to_dict(self) -> dict[str, str | None]:
        return {k: (str(v) if v is not None else None) for k, v in asdict(self).items()}


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
    base = Path(home) if explicit_home else Path(env.get("HOME") or os.path.expanduser("~"))
    base = base.expanduser()

    def pick(flag, var: str, default: Path) -> tuple[Path, bool]:
        if flag is not None:
            return Path(flag).expanduser(), True
        if not explicit_home and env.get(var):
            return Path(env[var]).expanduser(), True
        return default, False

    codex, _ = pick(codex_home, "CODEX_HOME", base / ".codex")
    claude, claude_custom = pick(claude_home, "CLAUDE_CONFIG_DIR", base / ".claude")
    mini_cc, _ = pick(mini_cc_home, "MINI_CC_HOME", base / ".mini_cc")
    claude_json = claude / ".claude.json" if claude_custom else base / ".claude.json"

    if state_dir is not None:
        state = Path(state_dir).expanduser()
    elif env.get("HISTMIG_STATE_DIR"):
        state = Path(env["HISTMIG_STATE_DIR"]).expanduser()
    elif not explicit_home and env.get("XDG_STATE_HOME"):
        state = Path(env["XDG_STATE_HOME"]).expanduser() / "histmig"
    else:
        state = base / ".local" / "state" / "histmig"

    sqlite_home = None
    if not explicit_home and codex_home is None and env.get("CODEX_SQLITE_HOME"):
        sqlite_home = Path(env["CODEX_SQLITE_HOME"]).expanduser()
    return Homes(home=base, codex=codex, claude=claude, claude_json=claude_json,
                 mini_cc=mini_cc, state=state, codex_sqlite=sqlite_home)
