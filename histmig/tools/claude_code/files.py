"""Claude Code files outside the transcripts that name projects or sessions (readers only).

- ``~/.claude.json`` (or ``$CLAUDE_CONFIG_DIR/.claude.json``): ``projects`` keyed by git root or
  cwd with forward slashes; the key may be absent altogether (docs/specs/claude-code.md §8, real 2.1.197).
- ``<claude home>/history.jsonl``: prompt history, one line per prompt with a ``project`` field.
- ``<claude home>/sessions/<pid>.json``: the live-session registry; an entry whose pid is alive
  means the session is open in a running client and must not be touched (§1, §11).
"""
from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any, Iterator

from histmig.core.diagnostics import HistmigError, Warning
from histmig.jsonio.jsonl import Line, open_regular, parse_json, read_lines
from histmig.core.valueclass import value


@value(frozen=True)
class ClaudeJson:
    path: Path
    raw: bytes | None          # exact bytes (None when the file does not exist)
    data: dict | None          # parsed object, None when missing or broken
    error: str | None = None

    def __init__(self, path: Path, raw: bytes | None, data: dict | None, error: str | None = None) -> None:
        object.__setattr__(self, "path", path)
        object.__setattr__(self, "raw", raw)
        object.__setattr__(self, "data", data)
        object.__setattr__(self, "error", error)

    @property
    def project_keys(self) -> list[str]:
        projects = (self.data or {}).get("projects")
        return list(projects) if isinstance(projects, dict) else []


def read_claude_json(homes: Any) -> ClaudeJson:
    path = Path(homes.claude_json)
    try:
        with open_regular(path) as fh:
            raw = fh.read()
    except HistmigError as e:
        if not path.exists() and not path.is_symlink():
            return ClaudeJson(path, None, None)
        return ClaudeJson(path, None, None, str(e))
    data, err = parse_json(raw)
    if err is None and not isinstance(data, dict):
        return ClaudeJson(path, raw, None, "not a JSON object")
    return ClaudeJson(path, raw, data if err is None else None, err)


def project_keys_under(claude_json: ClaudeJson, root: str) -> list[str]:
    """``projects`` keys equal to ``root`` or below it (keys use ``/`` even on Windows)."""
    from histmig.core.paths import is_under
    return [k for k in claude_json.project_keys if is_under(k.replace("\\", "/"), root)]


# ---- history.jsonl ---------------------------------------------------------------------------

def history_path(homes: Any) -> Path:
    return Path(homes.claude) / "history.jsonl"


@value(frozen=True)
class HistoryEntry:
    line: Line                 # exact bytes and offset, for a surgical edit of ``project``
    project: str | None
    session_id: str | None

    def __init__(self, line: Line, project: str | None, session_id: str | None) -> None:
        object.__setattr__(self, "line", line)
        object.__setattr__(self, "project", project)
        object.__setattr__(self, "session_id", session_id)


def iter_history(homes: Any) -> Iterator[HistoryEntry]:
    """Every line of history.jsonl; broken lines come with ``project`` None (kept, not fixed)."""
    path = history_path(homes)
    if not path.exists():
        return
    for line in read_lines(path):
        obj = None if line.blank else line.obj
        obj = obj if isinstance(obj, dict) else {}
        project, sid = obj.get("project"), obj.get("sessionId")
        yield HistoryEntry(line, project if isinstance(project, str) else None,
                           sid if isinstance(sid, str) else None)


def history_projects(homes: Any) -> dict[str, int]:
    """How many prompts each ``project`` has."""
    counts: dict[str, int] = {}
    for e in iter_history(homes):
        if e.project is not None:
            counts[e.project] = counts.get(e.project, 0) + 1
    return counts


# ---- live-session registry ---------------------------------------------------------------------

@value(frozen=True)
class LiveSession:
    path: Path
    pid: int | None
    session_id: str | None
    cwd: str | None
    alive: bool
    data: dict

    def __init__(self, path: Path, pid: int | None, session_id: str | None, cwd: str | None, alive: bool, data: dict) -> None:
        object.__setattr__(self, "path", path)
        object.__setattr__(self, "pid", pid)
        object.__setattr__(self, "session_id", session_id)
        object.__setattr__(self, "cwd", cwd)
        object.__setattr__(self, "alive", alive)
        object.__setattr__(self, "data", data)


def pid_alive(pid: int) -> bool:
    """Signal 0 tells whether a process exists (EPERM: it exists but is not ours)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except OSError as e:
        return e.errno == errno.EPERM
    return True


def live_registry(homes: Any) -> tuple[list[LiveSession], list[Warning]]:
    """Every ``sessions/<pid>.json`` with its liveness; unreadable entries become warnings."""
    folder = Path(homes.claude) / "sessions"
    out: list[LiveSession] = []
    warnings: list[Warning] = []
    try:
        names = sorted(p for p in folder.iterdir() if p.name.endswith(".json"))
    except OSError:
        return out, warnings
    for path in names:
        entry = _live_entry(path)
        if isinstance(entry, Warning):
            warnings.append(entry)
        else:
            out.append(entry)
    return out, warnings


def _live_entry(path: Path) -> LiveSession | Warning:
    try:
        with open_regular(path) as fh:
            data, err = parse_json(fh.read())
    except HistmigError as e:
        return Warning("claude-live-registry-unreadable", str(e), str(path))
    if err or not isinstance(data, dict):
        return Warning("claude-live-registry-unreadable", err or "not a JSON object", str(path))
    pid = data.get("pid")
    if not isinstance(pid, int) or isinstance(pid, bool):
        stem = path.stem
        pid = int(stem) if stem.isdigit() else None
    sid, cwd = data.get("sessionId"), data.get("cwd")
    return LiveSession(path, pid, sid if isinstance(sid, str) else None,
                       cwd if isinstance(cwd, str) else None,
                       pid is not None and pid_alive(pid), data)


def live_session_ids(homes: Any) -> set[str]:
    """Session ids open in a running Claude Code (live pid); these are never touched."""
    entries, _ = live_registry(homes)
    return {e.session_id for e in entries if e.alive and e.session_id}
