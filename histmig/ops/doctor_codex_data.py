"""Read-only views of a Codex home for the doctor: rollouts (with the fields the state database derives
from them and every line's ordinal span), config.toml, and the state / thread-history databases.

These are small private readers; the shared adapters and stores cover the same ground for other
commands, but the doctor needs a few things they do not keep (line spans per ordinal, the provider of
the *first* session_meta next to the one a re-extraction would store).
"""
from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from histmig.diagnostics import HistmigError, HistmigInputError
from histmig.homes import Homes
from histmig.jsonl import read_lines
from histmig.stores import codex_config, codex_state

@dataclass
class Rollout:
    path: Path
    archived: bool = False
    compressed: bool = False
    id: str | None = None
    provider: str | None = None      # first session_meta model_provider (what listing filters on)
    row_provider: str | None = None  # what a re-extraction would store (last same-id value wins)
    meta_cwd: str | None = None      # the cwd a re-extraction would store in threads.cwd
    resume_cwd: str | None = None    # latest turn_context.cwd, else meta_cwd (what resume --last matches)
    git_url: str | None = None
    size: int = 0
    complete: bool = True            # ends with a newline
    spans: dict[int, tuple[int, int]] = field(default_factory=dict)  # ordinal -> (start, end)
    starts: set[int] = field(default_factory=set)                    # every line start, and EOF
    error: str | None = None

    def apply_line(self, obj: dict[str, Any]) -> None:
        kind, p = obj.get("type"), obj.get("payload")
        if not isinstance(p, dict):
            return
        if kind == "session_meta":
            self._meta(p)
        elif kind == "turn_context" and isinstance(p.get("cwd"), str):
            self.resume_cwd = p["cwd"]
        elif kind == "event_msg" and p.get("type") == "thread_settings_applied":
            ts = p.get("thread_settings") or {}
            if isinstance(ts.get("model_provider_id"), str):
                self.row_provider = ts["model_provider_id"]
            if isinstance(ts.get("cwd"), str):
                self.meta_cwd = ts["cwd"]

    def _meta(self, p: dict[str, Any]) -> None:
        if self.id is None:
            self.id = p.get("id") if isinstance(p.get("id"), str) else None
            self.provider = p.get("model_provider")
            self.row_provider = self.provider
            self.meta_cwd = p.get("cwd")
            git = p.get("git") if isinstance(p.get("git"), dict) else {}
            self.git_url = git.get("repository_url")
        elif p.get("id") == self.id:   # a later same-id session_meta overrides (copied parents do not)
            self.row_provider = p.get("model_provider", self.row_provider)
            self.meta_cwd = p.get("cwd", self.meta_cwd)

    @property
    def cwd(self) -> str | None:
        return self.resume_cwd or self.meta_cwd


def read_rollout(path: Path, *, archived: bool = False) -> Rollout:
    r = Rollout(path, archived=archived, compressed=path.name.endswith(".zst"))
    try:
        end = 0
        for line in read_lines(path):
            r.starts.add(line.offset)
            end = line.offset + (line.length or 0)
            r.complete = line.complete
            obj = line.obj
            if not isinstance(obj, dict):
                continue
            if isinstance(obj.get("ordinal"), int):
                r.spans[obj["ordinal"]] = (line.offset, end)
            r.apply_line(obj)
        r.size = end
        r.starts.add(end)
    except (HistmigError, OSError) as e:
        r.error = str(e)
    if r.error is None and r.id is None:
        r.error = "no session_meta line"
    return r


def rollout_files(codex: Path) -> Iterator[tuple[Path, bool]]:
    """(path, archived) of every rollout, plain and .zst, in sessions/ (any depth) and archived_sessions/."""
    for sub, archived in (("sessions", False), ("archived_sessions", True)):
        root = codex / sub
        if not root.is_dir():
            continue
        for p in sorted(root.rglob("rollout-*.jsonl*")):
            if p.name.endswith((".jsonl", ".jsonl.zst")) and p.is_file() and not p.is_symlink():
                yield p, archived


# ---- config and databases (through the shared stores) -------------------------------------------

@dataclass
class CodexConfig:
    provider: str = "openai"
    raw: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    path: Path | None = None

    def known(self, provider: str) -> bool:
        return codex_config.is_known_provider(self.raw, provider)


def load_config(homes: Homes) -> CodexConfig:
    path = codex_config.config_path(homes)
    try:
        raw = codex_config.load_config(homes)
    except HistmigInputError as e:
        return CodexConfig(error=str(e), path=path)
    return CodexConfig(provider=codex_config.model_provider(raw), raw=raw, path=path)


def state_db_paths(homes: Homes, config: CodexConfig) -> list[Path]:
    """Every state_5.sqlite Codex may use (codex.md §1), existing ones only, each once."""
    return codex_state.state_dbs(homes, config.raw)


def connect_ro(path: Path) -> sqlite3.Connection:
    return codex_state.connect_ro(path)


def columns(con: sqlite3.Connection, table: str) -> set[str]:
    return {r[1] for r in con.execute(f"PRAGMA table_info({table})")}


def thread_rows(db: Path) -> list[dict[str, Any]]:
    with connect_ro(db) as con:
        have = columns(con, "threads")
        want = [c for c in ("id", "rollout_path", "model_provider", "cwd", "archived") if c in have]
        rows = [dict(r) for r in con.execute(f"SELECT {', '.join(want)} FROM threads")]
    con.close()
    return rows


def history_rows(db: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(thread_turns rows, thread_history_projection_state rows) of a thread_history_1.sqlite."""
    with connect_ro(db) as con:
        turns = [dict(r) for r in con.execute(
            "SELECT thread_id, turn_id, rollout_ordinal, rollout_byte_offset, rollout_end_ordinal,"
            " rollout_end_byte_offset FROM thread_turns")]
        state = [dict(r) for r in con.execute(
            "SELECT thread_id, next_rollout_byte_offset, next_rollout_ordinal FROM thread_history_projection_state")]
    con.close()
    return turns, state


# ---- the whole home ---------------------------------------------------------------------------

@dataclass
class CodexHome:
    homes: Homes
    config: CodexConfig
    rollouts: list[Rollout]
    shadowed: list[Path]
    dbs: list[Path]

    @property
    def configured(self) -> str:
        return self.config.provider

    def by_id(self) -> dict[str, Rollout]:
        out: dict[str, Rollout] = {}
        for r in self.rollouts:   # sessions/ before archived_sessions/: the first one wins
            if r.id and r.error is None:
                out.setdefault(r.id, r)
        return out


def load(homes: Homes) -> CodexHome:
    config = load_config(homes)
    rollouts, shadowed = [], []
    for path, archived in rollout_files(homes.codex):
        if path.name.endswith(".zst") and path.with_suffix("").exists():
            shadowed.append(path)     # Codex reads the plain file; the .zst is ignored
            continue
        rollouts.append(read_rollout(path, archived=archived))
    return CodexHome(homes, config, rollouts, shadowed, state_db_paths(homes, config))
