"""OpenCode's part of ``pack`` / ``unpack`` (docs/pack.md; histmig/toolkit/pack.py says what each hook does).

An OpenCode session is rows, not files (docs/opencode.md): its ``session`` row, its ``message`` and
``part`` rows and its ``project`` row travel as data; no file of the database is packed. On unpack the
rows are inserted into the local database (OpenCode must have run once here: the schema is its own),
``session.directory`` / ``path`` and ``project.worktree`` / ``sandboxes`` re-homed by ``move``'s own
rule (``move.session_op`` / ``move.project_op``). A session already in the local database is skipped
when its session row is the same and refused when it differs.
"""
from __future__ import annotations

import sqlite3
from contextlib import closing
from typing import Any

from histmig.core.diagnostics import HistmigError
from histmig.toolkit.pack import Entry, Rebase
from histmig.tools.opencode import dbrows
from histmig.tools.opencode.layout import db_path

TOOL = "opencode"
TABLES = ("project", "session", "message", "part")


def entry(homes: Any, ref: Any) -> Entry:
    out = Entry()
    try:
        con = dbrows.open_db(db_path(homes))
    except (HistmigError, sqlite3.Error):
        return out
    if con is None:
        return out
    with closing(con):
        session = list(dbrows.rows(con, "SELECT * FROM session WHERE id = ?", (ref.id,)))
        if not session:
            return out
        out.rows["session"] = session
        out.rows["project"] = list(dbrows.rows(con, "SELECT * FROM project WHERE id = ?", (session[0]["project_id"],)))
        out.rows["message"] = list(dbrows.rows(con, "SELECT * FROM message WHERE session_id = ? ORDER BY id", (ref.id,)))
        out.rows["part"] = list(dbrows.rows(con, "SELECT * FROM part WHERE session_id = ? ORDER BY id", (ref.id,)))
        out.version = session[0].get("version")
    return out


class _Map:
    """What ``move.session_op`` / ``project_op`` ask of a path map: ``rebase``."""

    def __init__(self, rebase: Rebase):
        self.rebase = rebase


def rows(homes: Any, session: dict[str, Any], placed: dict, rebase: Rebase) -> tuple[list[Any], Any]:
    from histmig.core.plan import SqlInsert  # noqa: PLC0415
    from histmig.tools.opencode.move import project_op, session_op  # noqa: PLC0415
    packed = {t: [dict(r) for r in (session.get("rows") or {}).get(t, [])] for t in TABLES}
    if not packed["session"]:
        return [], False
    db = str(db_path(homes))
    pm = _Map(rebase)
    s = packed["session"][0]
    if (op := session_op(db, s, pm)) is not None:
        s.update(op.set)
    for p in packed["project"]:
        if (op := project_op(db, p, pm)) is not None:
            p.update(op.set)
    try:
        con = dbrows.open_db(db_path(homes))
    except (HistmigError, sqlite3.Error):
        con = None
    if con is None:
        raise HistmigError(f"OpenCode session {s['id']}: no OpenCode database here; start OpenCode once, then "
                           "unpack again", path=db)
    with closing(con):
        local = list(dbrows.rows(con, "SELECT * FROM session WHERE id = ?", (s["id"],)))
        if local:
            return [], "identical" if local[0] == s else "differs"
        have_project = {r["id"] for r in dbrows.rows(con, "SELECT id FROM project")}
        columns = {t: [r[1] for r in con.execute(f"PRAGMA table_info({t})")] for t in TABLES}
    unit = {"tool": TOOL, "id": s["id"]}
    ops = [SqlInsert(db, "project", _fit(p, columns["project"]), ("id",), None, "unpacked OpenCode project")
           for p in packed["project"] if p["id"] not in have_project]
    for table in ("session", "message", "part"):
        ops += [SqlInsert(db, table, _fit(r, columns[table]), ("id",), unit, "unpacked OpenCode session")
                for r in packed[table]]
    return ops, False


def _fit(row: dict[str, Any], columns: list[str]) -> dict[str, Any]:
    return {c: row[c] for c in columns if c in row}
