"""Copilot CLI's index database ``<home>/session-store.db`` (SQLite, WAL; schema_version 8 in 1.0.102):
``sessions(id, cwd, repository, host_type, branch, summary, created_at, updated_at)``, ``turns``, an FTS5
``search_index`` (docs/copilot.md). Read only, with a busy timeout; it is derived: the client rebuilds a
missing row when it resumes the session."""
from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any


def index_db(homes: Any) -> Path:
    return Path(homes.copilot) / "session-store.db"


def connect_ro(db: Path) -> sqlite3.Connection:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
    con.execute("PRAGMA busy_timeout = 5000")
    return con


def session_rows(db: Path) -> list[tuple[str, str | None]]:
    """``(id, cwd)`` of every row; [] when the database or its table is absent."""
    if not db.is_file():
        return []
    con = connect_ro(db)
    try:
        if not con.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='sessions'").fetchone():
            return []
        return [(r[0], r[1]) for r in con.execute("SELECT id, cwd FROM sessions ORDER BY id")]
    finally:
        con.close()
