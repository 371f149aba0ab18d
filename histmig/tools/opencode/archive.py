"""What ``histmig archive`` keeps of an OpenCode session, and how ``histmig restore`` puts it back.

OpenCode keeps every session as rows of one SQLite database (docs/opencode.md): there is no file of a
session, and copying the whole database for each session would store it again at every change. So a
session is archived as its rows, one JSON line per row (``{"table", "row"}``): each message followed by
its parts (message ids grow with time, so a continued session's dump grows at its end and the archive's
append-aware chunks store the new rows), then the rows of every other table with a ``session_id`` column,
then the session row and its project row (they change with every turn; last, so only the dump's tail
changes). Restore inserts them back through the apply path (``SqlInsert``: journaled, undone by
``histmig undo``); the project row only when the database lacks it.
"""
from __future__ import annotations

import base64
import hashlib
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any, Iterator

import orjson

from histmig.tools.opencode.dbrows import open_db, rows as query


def files(ref: Any) -> None:
    return None               # not files: see rows()


def key_of(db: Any, sid: str) -> str:
    return f"{db}#{sid}"


def rows(ref: Any) -> tuple[str, Any, Iterator[bytes]] | None:
    """(key, version, lines) of one session: ``version`` (the session's ``time_updated``) unchanged
    means the rows need not be read again."""
    con = open_db(Path(ref.path))
    if con is None:
        return None
    with closing(con):
        srow = next(query(con, "SELECT time_updated FROM session WHERE id = ?", (ref.id,)), None)
    if srow is None:
        return None
    return key_of(ref.path, ref.id), srow["time_updated"], _lines(Path(ref.path), ref.id)


def _lines(db: Path, sid: str) -> Iterator[bytes]:
    con = open_db(db)
    if con is None:
        return
    with closing(con):
        for m in query(con, "SELECT * FROM message WHERE session_id = ? ORDER BY id", (sid,)):
            yield _line("message", m)
            for p in query(con, "SELECT * FROM part WHERE message_id = ? ORDER BY id", (m["id"],)):
                yield _line("part", p)
        for table in _session_tables(con):
            for r in query(con, f'SELECT * FROM "{table}" WHERE session_id = ? ORDER BY rowid', (sid,)):
                yield _line(table, r)
        srow = next(query(con, "SELECT * FROM session WHERE id = ?", (sid,)), None)
        if srow is not None:
            yield _line("session", srow)
            project = next(query(con, "SELECT * FROM project WHERE id = ?", (srow["project_id"],)), None)
            if project is not None:
                yield _line("project", project)


def _session_tables(con: sqlite3.Connection) -> list[str]:
    """Tables other than message and part whose rows belong to one session (a ``session_id`` column)."""
    names = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
    return [t for t in names if t not in ("message", "part", "session")
            and any(c[1] == "session_id" for c in con.execute(f'PRAGMA table_info("{t}")'))]


def _line(table: str, row: dict[str, Any]) -> bytes:
    row = {k: {"$b64": base64.b64encode(v).decode()} if isinstance(v, bytes) else v for k, v in row.items()}
    return orjson.dumps({"table": table, "row": row}) + b"\n"


def _value(v: Any) -> Any:
    return base64.b64decode(v["$b64"]) if isinstance(v, dict) and "$b64" in v else v


def current_sha256(key: str) -> str | None:
    """The sha256 of the session's rows as they are now; None when the database lacks the session."""
    db, sid = key.rsplit("#", 1)
    con = open_db(Path(db))
    if con is None:
        return None
    with closing(con):
        if next(query(con, "SELECT id FROM session WHERE id = ?", (sid,)), None) is None:
            return None
    h = hashlib.sha256()
    for ln in _lines(Path(db), sid):
        h.update(ln)
    return h.hexdigest()


def insert_ops(key: str, lines: Iterator[bytes], session: dict[str, str], reason: str) -> list[Any]:
    """The inserts that put the archived rows back (the project row only when it is missing)."""
    from histmig.core.plan import SqlInsert     # only a restore plans: an archive run never loads the plan model
    db, _sid = key.rsplit("#", 1)
    con = open_db(Path(db))
    if con is None:
        from histmig.core.diagnostics import RefusedError
        raise RefusedError("no OpenCode database to restore the session into (start OpenCode once)", path=db)
    ops: list[SqlInsert] = []
    with closing(con):
        pks = {}
        for ln in lines:
            obj = orjson.loads(ln)
            table, row = obj["table"], {k: _value(v) for k, v in obj["row"].items()}
            if table not in pks:
                pks[table] = _primary_key(con, table, row)
            if table == "project" and next(query(con, "SELECT id FROM project WHERE id = ?", (row["id"],)), None):
                continue
            ops.append(SqlInsert(db=db, table=table, row=row, key=pks[table], session=session, reason=reason))
    # parents first: the session row (and its project) before the rows that reference it
    order = {"project": 0, "session": 1, "message": 2, "part": 3}
    return sorted(ops, key=lambda o: order.get(o.table, 4))


def _primary_key(con: sqlite3.Connection, table: str, row: dict[str, Any]) -> tuple[str, ...]:
    cols = sorted((c[5], c[1]) for c in con.execute(f'PRAGMA table_info("{table}")') if c[5])
    return tuple(name for _, name in cols) or tuple(row)
