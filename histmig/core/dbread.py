"""Read-only SQLite access to a client's database while the client may be writing it.

Every tool that keeps rows (Codex's state and history databases today; OpenCode, Cline and Copilot
next, docs/ARCHITECTURE.md) reads them the same way: read-only by URI, so histmig can never write
through a reading connection, and with a busy timeout, so a client's write transaction makes histmig
wait instead of fail (docs/safety.md, "A file another process writes").

A lock is first probed for :data:`PROBE_MS` (a client writing a row holds it for milliseconds): one
held longer is named at once, with the process that has the database open for writing (its client,
most likely), instead of after the whole busy timeout (docs/opencode.md, "A locked database")."""
from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any

from histmig.core.diagnostics import HistmigInputError

BUSY_TIMEOUT_MS = 5000
PROBE_MS = 1000       # how long a lock is waited for before it is named (docs/opencode.md)


class DatabaseLockedError(HistmigInputError):
    """Another process held the database's lock for longer than :data:`PROBE_MS`."""


def is_busy(e: BaseException) -> bool:
    """SQLITE_BUSY or SQLITE_LOCKED ("database is locked")."""
    code = getattr(e, "sqlite_errorcode", None)
    if isinstance(code, int):
        return code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
    return isinstance(e, sqlite3.OperationalError) and "locked" in str(e)


def locked_reason(db: Any, waited_ms: int = PROBE_MS) -> str:
    """Why a database cannot be used now, naming who most likely holds it: a process that has it
    open for writing (Linux ``/proc``; none named elsewhere)."""
    from histmig.core.livewriters import open_writers
    try:
        st = os.stat(db)
        holders = [h for hs in open_writers([(st.st_dev, st.st_ino)]).values() for h in hs if h.pid != os.getpid()]
    except OSError:
        holders = []
    who = (f"; {', '.join(h.describe() for h in holders)} has it open for writing" if holders
           else "; is its client running?")
    return f"locked by another process for over {waited_ms / 1000:g} s{who}"


def connect_ro(db: Any) -> sqlite3.Connection:
    """Read-only connection (rows as ``sqlite3.Row``) that waits for the client's writer."""
    try:
        con = sqlite3.connect(f"{Path(db).resolve().as_uri()}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_MS / 1000)
        con.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    except sqlite3.Error as e:
        raise HistmigInputError(f"cannot open database ({e})", path=db) from None
    con.row_factory = sqlite3.Row
    return con
