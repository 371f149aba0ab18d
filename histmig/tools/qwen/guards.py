"""What the write path guards for Qwen Code (histmig/apply/guards.py): a running Qwen writes
``chats/<id>.runtime.json`` (``pid``, ``session_id``, ``work_dir``, ``hostname``; docs/qwen.md) beside the
session it holds; while that pid lives on this host, the session's project folder waits whole."""
from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Any, Mapping

import orjson

from histmig.apply.guards import WriteGuards


def live_in(folder: Path) -> tuple[str, int] | None:
    """(session id, pid) of a live Qwen session in this project folder, or None."""
    try:
        markers = sorted((folder / "chats").glob("*.runtime.json"))
    except OSError:
        return None
    for marker in markers:
        try:
            data = orjson.loads(marker.read_bytes())
        except (OSError, orjson.JSONDecodeError):
            continue
        pid = data.get("pid") if isinstance(data, dict) else None
        if isinstance(pid, int) and pid > 0 and data.get("hostname") in (None, socket.gethostname()) and _alive(pid):
            return str(data.get("session_id") or marker.name[:-len(".runtime.json")]), pid
    return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _probe():
    def check(s: Mapping[str, Any]) -> tuple[str, str] | None:
        folder = s.get("folder")
        live = live_in(Path(folder)) if folder else None
        if live:
            return f"its project folder holds live Qwen Code session {live[0]} (pid {live[1]})", "live-folder"
        return None
    return check


def guards(homes: Any) -> WriteGuards:
    return WriteGuards(live={"qwen": _probe})
