"""Is a Claude-family session live? Claude Code registers each running session in
``<claude home>/sessions/<pid>.json`` (histmig.core.locks.claude_live_registry); the write path skips
what a live one writes to (histmig/apply/guards.py)."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping

from histmig.core import locks
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
                registry = locks.claude_live_registry(claude_home)
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
