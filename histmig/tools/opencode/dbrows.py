"""Read-only row access to OpenCode's database (histmig/core/dbread.py: read-only, busy timeout)."""
from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any, Iterator

from histmig.core.dbread import BUSY_TIMEOUT_MS, PROBE_MS, DatabaseLockedError, connect_ro, is_busy, locked_reason
from histmig.core.diagnostics import HistmigInputError


def has_tables(con: sqlite3.Connection) -> bool:
    names = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    return {"session", "message", "part", "project"} <= names


def blob_json(value: Any) -> Any:
    """orjson's ``default`` for a row: a BLOB cell (bytes where OpenCode writes TEXT; invalid UTF-8 or a
    foreign writer) as ``{"$blob_base64": ...}``, so a dump of the row names it instead of failing."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        import base64       # only a hostile row needs it (scan's import budget, tests/test_startup.py)
        return {"$blob_base64": base64.b64encode(bytes(value)).decode()}
    raise TypeError(f"{type(value).__name__} in a row")


def row_dict(row: sqlite3.Row) -> dict[str, Any]:
    return {k: row[k] for k in row.keys()}


def rows(con: sqlite3.Connection, sql: str, args: tuple = ()) -> Iterator[dict[str, Any]]:
    for r in con.execute(sql, args):
        yield row_dict(r)


def open_db(path: Path) -> sqlite3.Connection | None:
    """A read-only connection to an OpenCode database, None when there is none (or not OpenCode's).
    A file SQLite cannot read (corrupt, not a database) raises HistmigInputError naming it: taking it
    for "no database" hid it from scan and doctor. A lock held past ``PROBE_MS`` (OpenCode's own write
    lock in a rollback-journal database) raises DatabaseLockedError naming the likely holder, after
    ``PROBE_MS`` rather than the whole busy timeout; the rows are then read with the usual timeout."""
    if not path.is_file():
        return None
    con = connect_ro(path)
    try:
        con.execute(f"PRAGMA busy_timeout = {PROBE_MS}")
        ours = has_tables(con)
        con.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        if ours:
            return con
    except sqlite3.DatabaseError as e:
        con.close()
        if is_busy(e):
            raise DatabaseLockedError(locked_reason(path), path=path) from None
        raise HistmigInputError(f"cannot read database ({e})", path=path) from None
    con.close()
    return None


def session_rows(path: Path) -> list[dict[str, Any]]:
    con = open_db(path)
    if con is None:
        return []
    with closing(con):
        return list(rows(con, "SELECT * FROM session ORDER BY id"))
