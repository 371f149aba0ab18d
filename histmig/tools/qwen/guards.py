"""What the write path guards for Qwen Code (histmig/apply/guards.py): a running Qwen writes
``chats/<id>.runtime.json`` (``pid``, ``session_id``, ``work_dir``, ``hostname``; docs/qwen.md) beside the
session it holds; while that pid lives on this host, the session's project folder waits whole."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from histmig.apply.guards import WriteGuards
from histmig.tools.qwen.live import live_in


def _probe():
    seen: dict[str, tuple[str, int] | None] = {}     # one look per folder and apply (a folder has many ops)

    def check(s: Mapping[str, Any]) -> tuple[str, str] | None:
        folder = s.get("folder")
        if folder and folder not in seen:
            seen[folder] = live_in(Path(folder))
        live = seen.get(folder) if folder else None
        if live:
            return f"its project folder holds live Qwen Code session {live[0]} (pid {live[1]})", "live-folder"
        return None
    return check


def guards(homes: Any) -> WriteGuards:
    return WriteGuards(live={"qwen": _probe})
