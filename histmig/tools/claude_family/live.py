"""Is a Claude-family session live? Claude Code registers each running session in
``<claude home>/sessions/<pid>.json`` (:func:`claude_live_registry`); the write path skips
what a live one writes to (histmig/apply/guards.py)."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping

import orjson

from histmig.core.livewriters import pid_alive
from histmig.core.paths import slug_matches


def live_probe(claude_home: Path, *, by_id: bool):
    """A LiveProbe (histmig.apply.guards): an operation's session is live when its id is a live
    session (``by_id``: the manifest layout's ids are its own) or its project folder holds one."""
    def start():
        registry: dict[str, tuple[int, str | None]] | None = None
        folders: dict[str, tuple[str, int] | None] = {}

        def check(s: Mapping[str, Any]) -> tuple[str, str] | None:
            nonlocal registry
            sid = s.get("id")
            if not (sid or s.get("folder")):
                return None
            if registry is None:
                registry = claude_live_registry(claude_home)
            if by_id and sid in registry:
                return f"live Claude Code session (pid {registry[sid][0]})", "live-session"
            folder = s.get("folder")
            if folder not in folders:
                folders[folder] = _live_in_folder(folder, registry)
            live = folders[folder]
            if live:
                return (f"its project folder holds live Claude Code session {live[0]} (pid {live[1]}); "
                        "the folder waits whole until it ends, then re-run the command", "live-folder")
            return None
        return check
    return start


def _live_in_folder(folder: str | None, live: dict[str, tuple[int, str | None]]) -> tuple[str, int] | None:
    """A live Claude session that writes into ``folder``: its transcript lies there, or it runs
    in a path whose history goes there (a slug folder moves whole or not at all: Claude keeps
    appending at the old place)."""
    if not folder:
        return None
    for sid, (pid, cwd) in sorted(live.items()):
        if os.path.lexists(os.path.join(folder, f"{sid}.jsonl")) or (cwd and slug_matches(os.path.basename(folder), cwd)):
            return sid, pid
    return None


def claude_live_sessions(claude_home: Path) -> dict[str, int]:
    """``{sessionId: pid}`` for entries of ``<claude home>/sessions/<pid>.json`` whose pid is alive."""
    return {sid: pid for sid, (pid, _cwd) in claude_live_registry(claude_home).items()}


def claude_live_registry(claude_home: Path) -> dict[str, tuple[int, str | None]]:
    """``{sessionId: (pid, cwd)}`` of the live entries: the cwd says which project folder a live
    session writes to even before its transcript exists."""
    live: dict[str, tuple[int, str | None]] = {}
    folder = Path(claude_home) / "sessions"
    if not folder.is_dir():
        return live
    for entry in folder.glob("*.json"):
        try:
            data = orjson.loads(entry.read_bytes())
            pid = int(data.get("pid") or entry.stem)
        except (OSError, ValueError, TypeError, AttributeError):
            continue
        sid, cwd = data.get("sessionId"), data.get("cwd")
        if isinstance(sid, str) and pid_alive(pid):
            live[sid] = (pid, cwd if isinstance(cwd, str) else None)
    return live
