"""Is a Qwen Code session running? A running Qwen writes ``chats/<id>.runtime.json`` (``pid``, ``session_id``,
``work_dir``, ``hostname``; docs/qwen.md) beside the session it holds. Read by move planning and by the
write guards (tools/qwen/guards.py); imports nothing of the write path, so a dry run stays light."""
from __future__ import annotations

from pathlib import Path

import orjson

from histmig.core.livewriters import pid_alive


def _hostname() -> str:
    import socket   # noqa: PLC0415 (only when a marker names a live pid: socket + selectors cost a dry run ~3 ms)
    return socket.gethostname()


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
        if isinstance(pid, int) and pid > 0 and data.get("hostname") in (None, _hostname()) and pid_alive(pid):
            return str(data.get("session_id") or marker.name[:-len(".runtime.json")]), pid
    return None

