"""Read-only row access to OpenCode's database (histmig/core/dbread.py: read-only, busy timeout)."""
from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any, Iterator

from histmig.core.dbread import connect_ro


def has_tables(con: sqlite3.Connection) -> bool:
    names = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    return {"session", "message", "part", "project"} <= names


def row_dict(row: sqlite3.Row) -> dict[str, Any]:
    return {k: row[k] for k in row.keys()}


def rows(con: sqlite3.Connection, sql: str, args: tuple = ()) -> Iterator[dict[str, Any]]:
    for r in con.execute(sql, args):
        yield row_dict(r)


def open_db(path: Path) -> sqlite3.Connection | None:
    """A read-only connection to an OpenCode database, None when there is none (or not OpenCode's)."""
    if not path.is_file():
        return None
    con = connect_ro(path)
    try:
        if has_tables(con):
            return con
    except sqlite3.Error:
        pass
    con.close()
    return None


def session_rows(path: Path) -> list[dict[str, Any]]:
    con = open_db(path)
    if con is None:
        return []
    with closing(con):
        return list(rows(con, "SELECT * FROM session ORDER BY id"))
