"""What the write path guards for Codex (histmig/apply/guards.py): its rollout-maintenance lock around
every apply that writes under the Codex home, and a thread whose writer lock is held is live."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from histmig.apply.guards import FolderLock, WriteGuards
from histmig.tools.codex import locks


def guards(homes: Any) -> WriteGuards:
    return WriteGuards(folder_locks=(FolderLock(homes.codex, locks.codex_maintenance_lock),),
                       live={"codex": _thread_probe(homes.codex)})


def _thread_probe(codex_home: Path):
    def start():
        held: dict[str, bool] = {}      # one probe per thread, not one per operation

        def check(s: Mapping[str, Any]) -> tuple[str, str] | None:
            sid = s.get("id")
            if not sid:
                return None
            if sid not in held:
                held[sid] = locks.codex_thread_locked(codex_home, sid)
            return (f"Codex thread {sid} is open (thread-writer-locks/{sid}.lock held)", "live-session") if held[sid] else None
        return check
    return start
