"""What the write path guards for Copilot CLI (histmig/apply/guards.py): a running Copilot holds its
session's ``events.jsonl`` open for appending (docs/copilot.md); while a process does, that session's
``workspace.yaml`` and index row wait (the client rewrites both when the run ends)."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping

from histmig.apply.guards import WriteGuards
from histmig.core.livewriters import open_writers


def _probe(homes: Any):
    root = Path(homes.copilot) / "session-state"
    seen: dict[str, str | None] = {}      # one /proc look per session and apply

    def check(s: Mapping[str, Any]) -> tuple[str, str] | None:
        sid = s.get("id")
        if not isinstance(sid, str):
            return None
        if sid not in seen:
            seen[sid] = None
            try:
                st = os.stat(root / sid / "events.jsonl")
                holders = open_writers([(st.st_dev, st.st_ino)]).get((st.st_dev, st.st_ino))
            except OSError:
                holders = None
            if holders:
                seen[sid] = holders[0].describe()
        if seen[sid]:
            return f"Copilot session {sid} is open for writing by {seen[sid]}", "live-session"
        return None
    return check


def guards(homes: Any) -> WriteGuards:
    return WriteGuards(live={"copilot": lambda: _probe(homes)})
