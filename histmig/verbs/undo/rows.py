"""The inverse of journaled database rows, checked against the rows as they are now.

An updated row goes back to its old values only while it still holds what the transaction wrote
(columns the transaction did not set may have changed: a client's ``updated_at``); an inserted
row is deleted; a deleted row is inserted again; shifted rows (one journal row per thread and
table, histmig/core/shift.py) shift back while they hold the digest the shift left. Byte offsets into a rollout
(a tool's ``UndoHook.offset_tables``) of a file continued since the apply are not put back from the
journal: the tool's undo hook recomputes them from the file edits of the inverse plan, so rows a
client added after the apply move with the bytes too (docs/codex.md, "Byte offsets").
"""
from __future__ import annotations

import sqlite3
from typing import Any

from histmig.apply.sqlops import (IN_BATCH, decode_value, decode_values, journaled_edits, rows_by_key, shift_now,
                                  shift_where, where_clause)
from histmig.core.diagnostics import HistmigInputError
from histmig.verbs.undo.files import Member
from histmig.core.plan import Op, SqlDelete, SqlInsert, SqlShift, SqlUpdate
from histmig.core.shift import inverse_edits
from histmig.core.dbread import connect_ro


def _q(name: str) -> str:
    return '"' + name + '"'


class RowReader:
    """Read-only connections to the databases of one transaction, opened once each."""

    def __init__(self) -> None:
        self.cons: dict[str, sqlite3.Connection | None] = {}

    def con(self, db: str) -> sqlite3.Connection | None:
        if db not in self.cons:
            try:
                self.cons[db] = connect_ro(db)
            except (sqlite3.Error, OSError, HistmigInputError):
                self.cons[db] = None
        return self.cons[db]

    def close(self) -> None:
        for con in self.cons.values():
            if con is not None:
                con.close()


def inverse_row(reader: RowReader, db: str, row: dict, offset_tables: frozenset[str]) -> Member:
    """The row's Member; byte-offset rows are marked (``offsets``): the caller drops them when it
    recomputes the thread's offsets instead (a rollout continued since the apply). An updated row
    whose current values :func:`prefetch_updates` read goes to :func:`updated_row` instead."""
    label = f"{db} {row['table']} {row.get('key') or row.get('where') or ''}"
    con = reader.con(db)
    if con is None:
        return Member.kept(label, f"cannot open {db}", "row-changed")
    try:
        ops = _INVERSE[row["kind"]](con, db, row)
    except sqlite3.Error as e:
        return Member.kept(label, f"cannot read {db}: {e}", "row-changed")
    return _member(label, ops, row, offset_tables)


def updated_row(db: str, row: dict, now: tuple, offset_tables: frozenset[str]) -> Member:
    """:func:`inverse_row` of an updated row whose current values :func:`prefetch_updates` read
    (its connection is open, no query is left to fail): the same Member, a few calls fewer per row
    (a flip's undo inverts tens of thousands of rows)."""
    table = row["table"]
    label = f"{db} {table} {row.get('key', '')}"
    ops = _inverse_update(db, row, now)
    m = Member(label, ops) if ops.__class__ is list else Member.kept(label, ops, "row-changed")
    m.offsets = table in offset_tables
    return m


def _member(label: str, ops: list[Op] | str, row: dict, offset_tables: frozenset[str]) -> Member:
    m = Member.kept(label, ops, "row-changed") if isinstance(ops, str) else Member(label, ops)
    m.offsets = row["table"] in offset_tables
    return m


def share_parts(row: dict, seen: dict) -> None:
    """Give ``row`` the one copy of what many rows of a record repeat: its table's name, its column
    lists (as tuples), its session dict and the text values of its key. The inverse operations keep
    these; each row parsed from the journal has its own copies (a flip's undo inverts tens of
    thousands of rows: ~500 bytes a row). Nothing changes them in place (plan operations are frozen)."""
    table = row.get("table")
    if table.__class__ is str:
        row["table"] = seen.setdefault(table, table)
    for name in ("order", "columns"):
        cols = row.get(name)
        if cols.__class__ is list and all(c.__class__ is str for c in cols):
            cols = tuple(seen.setdefault(c, c) for c in cols)
            row[name] = seen.setdefault(cols, cols)
    for name in ("key", "where"):
        key = row.get(name)
        if key.__class__ is dict:
            for k, v in key.items():
                if v.__class__ is str:
                    key[k] = seen.setdefault(v, v)
    for name in ("where", "old", "new"):     # a thread's shifted tables; a flip's one old and one new value
        values = row.get(name)
        if values.__class__ is dict and len(values) <= 4 and all(v.__class__ in _SHARED for v in values.values()):
            # the types in the key too: 1 and True are equal, and one must not stand for the other
            row[name] = seen.setdefault(("dict", *((k, v.__class__, v) for k, v in values.items())), values)
    if "session" in row:
        row["session"] = shared_session(row["session"], seen)


def shared_session(session: Any, seen: dict) -> Any:
    """The one copy in ``seen`` of a ``{"tool", "id"}`` session dict (anything else as it is): every
    journaled row and intent of a session parses its own."""
    if session.__class__ is dict and session.keys() == {"tool", "id"} and all(
            v.__class__ is str for v in session.values()):
        return seen.setdefault(("session", session["tool"], session["id"]), session)
    return session


_SHARED = frozenset({str, int, bool, type(None)})   # (not float: 0.0 == -0.0) values of a dict shared
_SCALAR = frozenset({str, int})     # key values an IN query finds as they are (not bool, float, NULL, bytes)


def prefetch_updates(reader: RowReader, db: str, rows: list[dict]) -> dict[int, tuple]:
    """The current values of updated rows (index in ``rows`` -> the ``new`` columns' values), read
    with one ``IN`` query per 400 rows by the first key column instead of one query per row (the
    apply's own check does the same: histmig/apply/sqlops.py ``rows_by_key``). A row not found
    exactly once that way (NULL or non-scalar keys, type affinity, a row gone) is left out: the
    per-row query decides it, as before."""
    con = reader.con(db)
    if con is None:
        return {}
    # (table, key columns, new columns) -> [(index, key values)]: the values in the group's column order
    groups: dict[tuple, list[tuple[int, tuple]]] = {}
    for i, row in enumerate(rows):
        key = row.get("key")
        if row["kind"] != "update" or not key:
            continue
        values = tuple(key.values())
        if all(map(_SCALAR.__contains__, map(type, values))):
            groups.setdefault((row["table"], tuple(key), tuple(row["new"])), []).append((i, values))
    out: dict[int, tuple] = {}
    try:
        for (table, keys, cols), want in groups.items():
            for s in range(0, len(want), IN_BATCH):
                part = want[s:s + IN_BATCH]
                found = rows_by_key(con, table, keys, cols, [k for _i, k in part])
                for i, k in part:
                    got = found.get(k)
                    if got is not None and len(got) == 1:
                        out[i] = got[0]
    except sqlite3.Error:
        return {}          # the per-row queries report it
    return out


def _update(con, db: str, row: dict) -> list[Op] | str:
    w, args = where_clause(row["key"])
    got = con.execute(f'SELECT {", ".join(map(_q, row["new"]))} FROM {_q(row["table"])} WHERE {w}',
                      args).fetchall()
    if len(got) != 1:
        return f"row {row['key']} is gone from {row['table']}; not restored"
    return _inverse_update(db, row, got[0])


def _inverse_update(db: str, row: dict, values: tuple) -> list[Op] | str:
    """The inverse of an update whose row holds ``values`` now (in ``row["new"]``'s column order)."""
    new = decode_values(row["new"])
    now = dict(zip(new, values))
    if now == row["old"]:
        return []
    if now != new:
        return f"row {row['key']} of {row['table']} changed since the transaction ({now}); not restored"
    return [SqlUpdate(db=db, table=row["table"], key=row["key"], set=row["old"], expect=new,
                      session=row.get("session"), reason="undo")]


def _insert(con, db: str, row: dict) -> list[Op] | str:
    w, args = where_clause(row["key"])
    n = con.execute(f'SELECT count(*) FROM {_q(row["table"])} WHERE {w}', args).fetchone()[0]
    if n == 0:
        return []
    return [SqlDelete(db=db, table=row["table"], where=row["key"], expect_count=n, session=row.get("session"),
                      reason="undo: inserted by the transaction")]


def _delete(con, db: str, row: dict) -> list[Op] | str:
    ops: list[Op] = []
    for r in row["rows"]:
        vals = {k: decode_value(v) for k, v in r.items()}
        w, args = where_clause(vals)
        if con.execute(f'SELECT count(*) FROM {_q(row["table"])} WHERE {w}', args).fetchone()[0]:
            continue
        ops.append(SqlInsert(db=db, table=row["table"], row=vals, key=tuple(vals), session=row.get("session"),
                             reason="undo: deleted by the transaction"))
    return ops


def _shift(con, db: str, row: dict) -> list[Op] | str:
    """A journaled shift (histmig/core/shift.py): rows still holding the digest it left go back by the
    inverse shift, checked against their digest now; rows as they were before it need nothing."""
    state, now = shift_now(con, row)
    if state == "old":
        return []
    if state == "changed":
        return (f"rows {row['where']} of {row['table']} changed since the transaction ({now['count']} row(s), "
                f"{row['count']} shifted); not restored")
    return [SqlShift(db=db, table=row["table"], where=shift_where(row), order=tuple(row["order"]),
                     columns=tuple(row["columns"]),
                     edits=inverse_edits(journaled_edits(row)), expect=now, session=row.get("session"),
                     reason="undo")]


_INVERSE = {"update": _update, "insert": _insert, "delete": _delete, "shift": _shift}
