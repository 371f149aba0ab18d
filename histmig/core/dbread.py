"""Read-only SQLite access to a client's database while the client may be writing it.

Every tool that keeps rows (Codex's state and history databases today; OpenCode, Cline and Copilot
next, docs/ARCHITECTURE.md) reads them the same way: read-only by URI, so histmig can never write
through a reading connection, and with a busy timeout, so a client's write transaction makes histmig
wait instead of fail (docs/safety.md, "A file another process writes")."""
from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from histmig.core.diagnostics import HistmigInputError

BUSY_TIMEOUT_MS = 5000


def connect_ro(db: Any) -> sqlite3.Connection:
    """Read-only connection (rows as ``sqlite3.Row``) that waits for the client's writer."""
    try:
        con = sqlite3.connect(f"{Path(db).resolve().as_uri()}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_MS / 1000)
        con.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    except sqlite3.Error as e:
        raise HistmigInputError(f"cannot open database ({e})", path=db) from None
    con.row_factory = sqlite3.Row
    return con
