"""Database operations: one transaction per database, expectations checked inside it.

Order: online backup into the journal folder (file created 0600) → ``BEGIN IMMEDIATE`` → re-check
every expected old value (any mismatch: roll back, refuse) → journal the old rows (durable) →
change → ``COMMIT`` → journal ``done``. Undo and recover put the journaled old values back, only
where the row still holds what we wrote. Never touches the schema.

A :class:`~histmig.core.plan.SqlShift` (byte offsets of all the rows of one key) is checked by the
rows' count and digest, journaled as one ``shift`` row holding the digests before and after, run as
one ``UPDATE`` through a registered function, and reverted by the inverse shift while the rows hold
the digest it left (docs/safety.md, "Shifted offsets").
"""
from __future__ import annotations

import base64
import errno
import hashlib
import os
import sqlite3
from contextlib import contextmanager
from itertools import chain, groupby
from typing import Any, Iterator

from histmig.apply.files import Ctx
from histmig.apply.options import Prepared
from histmig.core.dbread import PROBE_MS, is_busy, locked_reason
from histmig.core.diagnostics import StalePlanError, Warning
from histmig.core.plan import ShiftEdits, SqlDelete, SqlInsert, SqlShift, SqlUpdate
from histmig.core.shift import digests, inverse_edits, shifter

BUSY_MS = 5000


def connect(db: str, *, readonly: bool = False) -> sqlite3.Connection:
    uri = f"file:{db}?mode=ro" if readonly else f"file:{db}?mode=rw"
    con = sqlite3.connect(uri, uri=True, timeout=BUSY_MS / 1000, isolation_level=None)
    con.execute(f"PRAGMA busy_timeout={BUSY_MS}")
    return con


def where_clause(cols: dict[str, Any]) -> tuple[str, list[Any]]:
    """``"c1" IS ? AND "c2" IS ?`` and its arguments (IS: a NULL key matches NULL)."""
    return " AND ".join(f'"{c}" IS ?' for c in cols), list(cols.values())


def _mismatch(con: sqlite3.Connection, op) -> str | None:
    if isinstance(op, SqlShift):
        got, _ = shift_digests(con, op.table, op.where, op.order, op.columns)
        return None if got == op.expect else f"rows {op.where} of {op.table} hold {got}, plan expected {op.expect}"
    if isinstance(op, SqlUpdate):
        w, args = where_clause(op.key)
        row = con.execute(f'SELECT {", ".join(f"{chr(34)}{c}{chr(34)}" for c in op.expect)} '
                          f'FROM "{op.table}" WHERE {w}', args).fetchall()
        if len(row) != 1:
            return f"{len(row)} rows match {op.key}, expected 1"
        got = dict(zip(op.expect, row[0]))
        return None if got == op.expect else f"row {op.key} holds {got}, plan expected {op.expect}"
    if isinstance(op, SqlInsert):
        w, args = where_clause({k: op.row[k] for k in op.key})
        n = con.execute(f'SELECT count(*) FROM "{op.table}" WHERE {w}', args).fetchone()[0]
        return f"a row with {dict((k, op.row[k]) for k in op.key)} already exists" if n else None
    w, args = where_clause(op.where)
    n = con.execute(f'SELECT count(*) FROM "{op.table}" WHERE {w}', args).fetchone()[0]
    return None if n == op.expect_count else f"{n} rows match {op.where}, plan expected {op.expect_count}"


IN_BATCH = 400   # keys per query (SQLite's old default limit is 999 variables)


def _mismatches(con: sqlite3.Connection, ops: list) -> list[str]:
    return [m for _i, m in _mismatched(con, ops)]


def _mismatched(con: sqlite3.Connection, ops: list) -> list[tuple[int, str]]:
    """``(index in ops, why)`` of :func:`_mismatch` for every op, with a few queries instead of one
    per row: updates are grouped by (table, key columns, expected columns) and their rows fetched by
    ``IN`` batches. An update whose row is not found that way (NULL keys, type affinity) is
    re-checked on its own."""
    groups: dict[tuple, list[tuple[int, SqlUpdate]]] = {}
    out: list[tuple[int, str]] = []
    for i, op in enumerate(ops):
        if isinstance(op, SqlUpdate) and op.key and None not in op.key.values():
            groups.setdefault((op.table, tuple(op.key), tuple(op.expect)), []).append((i, op))
        elif (m := _mismatch(con, op)):
            out.append((i, m))
    for (table, keys, cols), group in groups.items():
        for i in range(0, len(group), IN_BATCH):
            out += _check_group(con, table, keys, cols, group[i:i + IN_BATCH])
    return out


def _check_group(con, table: str, keys: tuple, cols: tuple, ops: list[tuple[int, SqlUpdate]]) -> list[tuple[int, str]]:
    """The group's rows by :func:`rows_by_key`, the full key matched here. The group's ``keys``
    and ``cols`` are ``tuple(op.key)`` and ``tuple(op.expect)`` (:func:`_mismatched`): each op's
    values in that order are ``tuple(op.key.values())`` and ``tuple(op.expect.values())``."""
    want = [(i, op, tuple(op.key.values())) for i, op in ops]
    found = rows_by_key(con, table, keys, cols, [k for _i, _op, k in want])
    out = []
    for i, op, k in want:
        rows = found.get(k)
        if rows is not None and len(rows) == 1 and rows[0] == tuple(op.expect.values()):
            continue                           # the common case: the row holds what the plan expects
        if rows is None:
            m = _mismatch(con, op)             # the slow, exact check decides
        elif len(rows) != 1:
            m = f"{len(rows)} rows match {op.key}, expected 1"
        else:
            m = f"row {op.key} holds {dict(zip(cols, rows[0]))}, plan expected {op.expect}"
        if m:
            out.append((i, m))
    return out


def rows_by_key(con, table: str, keys: tuple, cols: tuple, key_values: list[tuple]) -> dict[tuple, list[tuple]]:
    """``{key values: [the cols' values, ...]}`` of the rows whose first key column holds the first of
    one of ``key_values`` (at most ``IN_BATCH`` of them): one query by that column (``IN``, which its
    index serves; a row-value ``IN`` over all key columns is not planned with the index), so a row
    of another full key may be among them: the caller matches full keys. Plain tuples (a
    ``sqlite3.Row`` per row, sliced, cost most of the loop)."""
    names = ", ".join(f'"{c}"' for c in (*keys, *cols))
    firsts = list(dict.fromkeys(k[0] for k in key_values))
    sql = f'SELECT {names} FROM "{table}" WHERE "{keys[0]}" IN ({", ".join("?" * len(firsts))})'
    nk = len(keys)
    found: dict[tuple, list[tuple]] = {}
    cur = con.cursor()
    cur.row_factory = None
    try:
        for row in cur.execute(sql, firsts):
            found.setdefault(row[:nk], []).append(row[nk:])
    finally:
        cur.close()
    return found


def check_expectations(db: str, ops: list) -> list[tuple[int | None, str]]:
    """``(index in ops, why)`` for each op whose row no longer holds what the plan expects; index
    None when the database itself cannot be read (every op is affected)."""
    try:
        con = connect(db, readonly=True)
    except sqlite3.Error as e:
        return [(None, f"{db}: cannot open database ({e})")]
    try:
        return [(i, f"{db}: {m}") for i, m in _mismatched(con, ops)]
    except sqlite3.Error as e:
        return [(None, f"{db}: {e}")]
    finally:
        con.close()


def encode_value(v: Any) -> Any:
    """A row value as JSON for the journal (bytes as ``{"$b64": ...}``); :func:`decode_value` inverts it."""
    return {"$b64": base64.b64encode(v).decode()} if isinstance(v, bytes) else v


def decode_value(v: Any) -> Any:
    return base64.b64decode(v["$b64"]) if isinstance(v, dict) and "$b64" in v else v


# SQLite result codes -> the errno the rest of the apply path speaks (the CLI then prints one
# "error: <file>: <cause>" line, and the engine rolls back as for any OSError)
_ERRNO = {sqlite3.SQLITE_FULL: errno.ENOSPC, sqlite3.SQLITE_IOERR: errno.EIO, sqlite3.SQLITE_PERM: errno.EPERM,
          sqlite3.SQLITE_NOMEM: errno.ENOMEM, sqlite3.SQLITE_BUSY: errno.EBUSY, sqlite3.SQLITE_LOCKED: errno.EBUSY,
          sqlite3.SQLITE_READONLY: errno.EACCES, sqlite3.SQLITE_CANTOPEN: errno.ENOENT}
_OWN_WORDS = (errno.ENOSPC, errno.EIO, errno.EPERM, errno.ENOMEM)   # else SQLite's message says more


def as_os_error(e: sqlite3.Error, path: str) -> OSError:
    """A sqlite3 error as an ``OSError`` naming ``path`` ("database or disk is full" becomes
    ENOSPC, "No space left on device")."""
    code = getattr(e, "sqlite_errorcode", None)
    code = code & 0xFF if isinstance(code, int) else -1
    err = _ERRNO.get(code, errno.EIO)
    if code in (sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_IOERR) and _disk_full(path):
        err = errno.ENOSPC     # SQLite could not create its journal file: no inode or block left
    return OSError(err, os.strerror(err) if err in _OWN_WORDS else str(e), path)


def _disk_full(path: str) -> bool:
    try:
        st = os.statvfs(os.path.dirname(path) or ".")
    except OSError:
        return False
    return st.f_bavail == 0 or (st.f_files > 0 and st.f_favail == 0)


def probe_lock(db: str) -> None:
    """Whether the write lock can be had within ``PROBE_MS`` (``BEGIN IMMEDIATE``, rolled back at once:
    nothing is written). A lock held longer (the client's own long transaction) is named now, with the
    process that has the database open for writing, instead of after the busy timeout (docs/opencode.md
    "A locked database"); a client writing a row is waited out. The transaction still takes the lock
    itself (with ``BUSY_MS``): the probe only decides how soon a held lock is reported."""
    try:
        con = sqlite3.connect(f"file:{db}?mode=rw", uri=True, timeout=PROBE_MS / 1000, isolation_level=None)
    except sqlite3.Error as e:
        raise as_os_error(e, db) from None
    try:
        con.execute(f"PRAGMA busy_timeout={PROBE_MS}")
        con.execute("BEGIN IMMEDIATE")
        con.execute("ROLLBACK")
    except sqlite3.Error as e:
        if is_busy(e):
            raise OSError(errno.EBUSY, locked_reason(db, PROBE_MS), db) from None
        raise as_os_error(e, db) from None
    finally:
        con.close()


def apply_db(ctx: Ctx, db: str, preps: list[Prepared]) -> None:
    n = preps[0].n
    probe_lock(db)
    bname = f"{n}.sqlite"
    bpath = str(ctx.journal.backups / bname)
    ctx.fs.sql("sql-backup", db)
    try:
        backup = _backup(ctx, db, bpath, bname)
    except BaseException:
        try:
            os.unlink(bpath)        # not journaled yet: nobody else would ever remove it
        except FileNotFoundError:
            pass
        raise
    try:
        with _transaction(ctx.fs, db) as con:
            bad = _mismatches(con, [p.op for p in preps])
            if bad:
                raise StalePlanError("database changed during apply:\n  " + "\n  ".join(f"{db}: {m}" for m in bad))
            ctx.journal.append_stream("intent", {"n": n, "method": "sql", "path": db, "backup": backup,
                                                 "ops": [p.n for p in preps]},
                                      "rows", (_journal_row(con, p.op) for p in preps))
            _execute_all(con, [p.op for p in preps])
    except sqlite3.Error as e:
        raise as_os_error(e, db) from None
    ctx.journal.append("done", n=n)


def _backup(ctx: Ctx, db: str, bpath: str, bname: str) -> dict:
    """SQLite's online backup into ``bpath`` (created 0600 first), with its size and sha256 so
    recover and undo can tell a damaged copy (:mod:`histmig.apply.backups`). A failure names the
    file it could not write (a full state folder) or read."""
    os.close(ctx.fs.open_write(bpath))       # created 0600 before SQLite writes into it
    try:
        src = connect(db, readonly=True)
    except sqlite3.Error as e:
        raise as_os_error(e, db) from None
    try:
        dst = sqlite3.connect(bpath)
        try:
            src.backup(dst)
        finally:
            dst.close()
    except sqlite3.Error as e:
        raise as_os_error(e, bpath) from None
    finally:
        src.close()
    h, size = hashlib.sha256(), 0
    with open(bpath, "rb") as fh:
        while chunk := fh.read(1 << 20):
            h.update(chunk)
            size += len(chunk)
    return {"name": bname, "kind": "sqlite", "sha256": h.hexdigest(), "size": size}


@contextmanager
def _transaction(fs, db: str) -> Iterator[sqlite3.Connection]:
    """``BEGIN IMMEDIATE`` … ``COMMIT`` (counted by the facade as ``sql-commit``); rolled back on any
    exception, including a fault injected at the commit."""
    con = connect(db)
    try:
        con.execute("BEGIN IMMEDIATE")
        yield con
        fs.sql("sql-commit", db)
        con.execute("COMMIT")
    except BaseException:
        if con.in_transaction:
            con.execute("ROLLBACK")
        raise
    finally:
        con.close()


# -- shifted offsets (histmig/core/shift.py): rows checked and journaled by count and digest ------------
def _names(cols) -> str:
    return ", ".join(f'"{c}"' for c in cols)


def shift_rows(con: sqlite3.Connection, table: str, where: dict[str, Any], order, columns) -> sqlite3.Cursor:
    """A cursor over the matching rows' ``order`` key values, then ``columns``, as plain tuples: read
    as they come (the digest is order-free), never fetched into a list."""
    w, args = where_clause(where)
    cur = con.cursor()
    cur.row_factory = None
    return cur.execute(f'SELECT {_names((*order, *columns))} FROM "{table}" WHERE {w}', args)


def shift_digests(con: sqlite3.Connection, table: str, where: dict[str, Any], order, columns,
                  edits=None) -> tuple[dict, dict | None]:
    """``(count and digest of the rows now, of the rows shifted by edits)`` (histmig/core/shift.py), one pass."""
    cur = shift_rows(con, table, where, order, columns)
    try:
        return digests(cur, len(order), edits)
    finally:
        cur.close()


def _shift_in_place(con: sqlite3.Connection, table: str, where: dict[str, Any], columns, edits) -> None:
    """``UPDATE table SET c = shifted(c), ... WHERE where``: SQLite walks the rows and calls the
    shift for each value, so no row is held here (a registered function rather than a CASE per
    edit: a move may edit thousands of lines, past SQLite's expression depth)."""
    con.create_function("histmig_shift", 1, shifter(edits), deterministic=True)
    w, args = where_clause(where)
    sets = ", ".join(f'"{c}" = histmig_shift("{c}")' for c in columns)
    con.execute(f'UPDATE "{table}" SET {sets} WHERE {w}', args)


def _shift_record(con: sqlite3.Connection, op: SqlShift) -> dict[str, Any]:
    """The journal's one row for a shift: what recover and undo need to tell the rows' state (old
    or new digest) and to move them back; small whatever the number of rows."""
    old, new = shift_digests(con, op.table, op.where, op.order, op.columns, op.edits)
    return {"kind": "shift", "table": op.table, "where": {k: encode_value(v) for k, v in op.where.items()},
            "order": list(op.order), "columns": list(op.columns), "edits_b64": op.edits.b64(),
            "count": old["count"], "old": old["digest"], "new": new["digest"]}


def journaled_edits(row: dict[str, Any]) -> ShiftEdits:
    """A journaled shift's edits: ``edits_b64`` (:meth:`ShiftEdits.b64`), or, in a journal written
    before it, ``edits`` as ``[[offset, delta], ...]``."""
    if "edits_b64" in row:
        return ShiftEdits.from_b64(row["edits_b64"])
    return ShiftEdits(row["edits"])


def shift_state(con: sqlite3.Connection, row: dict[str, Any]) -> str:
    """``"old"``, ``"new"`` or ``"changed"``: what a journaled shift's rows hold now (old wins when the
    shift moved nothing)."""
    return shift_now(con, row)[0]


def shift_now(con: sqlite3.Connection, row: dict[str, Any]) -> tuple[str, dict]:
    """:func:`shift_state` and the count and digest it read (undo's inverse expects them)."""
    got, _ = shift_digests(con, row["table"], shift_where(row), row["order"], row["columns"])
    if got["count"] == row["count"] and got["digest"] == row["old"]:
        return "old", got
    return ("new" if got["count"] == row["count"] and got["digest"] == row["new"] else "changed"), got


def decode_values(values: dict[str, Any]) -> dict[str, Any]:
    """Journaled column values decoded (only a ``{"$b64": ...}`` needs it): ``values`` itself when none
    does (undo shares one dict among the rows that repeat it, histmig/verbs/undo/rows.py
    ``share_parts``; nothing changes it in place)."""
    if dict not in map(type, values.values()):
        return values
    return {k: decode_value(v) for k, v in values.items()}


def shift_where(row: dict[str, Any]) -> dict[str, Any]:
    """A journaled shift's key, its values decoded."""
    return decode_values(row["where"])


def _journal_row(con: sqlite3.Connection, op) -> dict[str, Any]:
    row = _row_change(con, op)
    if op.session:       # undo treats a session's rows and files as one unit
        row["session"] = op.session
    return row


def _row_change(con: sqlite3.Connection, op) -> dict[str, Any]:
    if isinstance(op, SqlShift):
        return _shift_record(con, op)
    if isinstance(op, SqlUpdate):
        return {"kind": "update", "table": op.table, "key": op.key, "old": op.expect,
                "new": {k: encode_value(v) for k, v in op.set.items()}}
    if isinstance(op, SqlInsert):
        return {"kind": "insert", "table": op.table, "key": {k: op.row[k] for k in op.key},
                "new": {k: encode_value(v) for k, v in op.row.items()}}
    w, args = where_clause(op.where)
    cur = con.execute(f'SELECT * FROM "{op.table}" WHERE {w}', args)
    cols = [d[0] for d in cur.description]
    return {"kind": "delete", "table": op.table, "rows": [{c: encode_value(v) for c, v in zip(cols, r)} for r in cur]}


def _execute_all(con: sqlite3.Connection, ops: list) -> None:
    """Every op in order; runs of updates with the same statement go through one ``executemany``.
    A run is told by the statement's shape (table, set and key columns); the statement itself is
    written once per run, not once per row (a flip and its undo update tens of thousands)."""
    for shape, run in groupby(ops, key=_update_shape):
        if shape is None:
            for op in run:
                _execute(con, op)
        else:
            first = next(run)
            con.executemany(_update_sql(first), ([*o.set.values(), *o.key.values()] for o in chain((first,), run)))


def _update_shape(op) -> tuple | None:
    """What :func:`_update_sql` depends on: equal shapes, equal statements."""
    return (op.table, tuple(op.set), tuple(op.key)) if isinstance(op, SqlUpdate) else None


def _update_sql(op: SqlUpdate) -> str:
    w, _ = where_clause(op.key)
    sets = ", ".join(f'"{c}" = ?' for c in op.set)
    return f'UPDATE "{op.table}" SET {sets} WHERE {w}'


def _execute(con: sqlite3.Connection, op) -> None:
    """One insert, delete or shift (updates run in :func:`_execute_all`)."""
    if isinstance(op, SqlShift):
        _shift_in_place(con, op.table, op.where, op.columns, op.edits)
    elif isinstance(op, SqlInsert):
        cols = ", ".join(f'"{c}"' for c in op.row)
        con.execute(f'INSERT INTO "{op.table}" ({cols}) VALUES ({", ".join("?" for _ in op.row)})',
                    list(op.row.values()))
    elif isinstance(op, SqlDelete):
        w, args = where_clause(op.where)
        con.execute(f'DELETE FROM "{op.table}" WHERE {w}', args)


def revert_db(fs, rec: dict[str, Any], *, strict: bool) -> list[Warning]:
    """Put journaled old values back where the row still holds what we wrote (idempotent).
    ``strict`` (undo): a row changed since apply is reported and left alone."""
    db, warnings = rec["path"], []
    try:
        with _transaction(fs, db) as con:
            for row in reversed(rec["rows"]):
                msg = _revert_row(con, row)
                if msg:
                    warnings.append(Warning("row-changed", msg, db))
    except sqlite3.Error as e:
        raise as_os_error(e, db) from None
    return warnings


def _revert_row(con: sqlite3.Connection, row: dict[str, Any]) -> str | None:
    t = row["table"]
    if row["kind"] == "shift":
        return _revert_shift(con, row)
    if row["kind"] == "update":
        w, args = where_clause(row["key"])
        new = {k: decode_value(v) for k, v in row["new"].items()}
        got = con.execute(f'SELECT {", ".join(chr(34) + c + chr(34) for c in new)} FROM "{t}" WHERE {w}',
                          args).fetchone()
        if got is None:
            return f"row {row['key']} is gone; not restored"
        if dict(zip(new, got)) == row["old"]:
            return None
        if dict(zip(new, got)) != new:
            return f"row {row['key']} changed since apply; not restored"
        sets = ", ".join(f'"{c}" = ?' for c in row["old"])
        con.execute(f'UPDATE "{t}" SET {sets} WHERE {w}', [*row["old"].values(), *args])
    elif row["kind"] == "insert":
        w, args = where_clause(row["key"])
        con.execute(f'DELETE FROM "{t}" WHERE {w}', args)
    else:
        for r in row["rows"]:
            vals = {k: decode_value(v) for k, v in r.items()}
            w, args = where_clause(vals)
            if con.execute(f'SELECT count(*) FROM "{t}" WHERE {w}', args).fetchone()[0] == 0:
                cols = ", ".join(f'"{c}"' for c in vals)
                con.execute(f'INSERT INTO "{t}" ({cols}) VALUES ({", ".join("?" for _ in vals)})',
                            list(vals.values()))
    return None


def _revert_shift(con: sqlite3.Connection, row: dict[str, Any]) -> str | None:
    """The inverse shift, only while the rows hold the digest the shift left (a crash before the
    commit left them old: nothing to do; a client changed them since: named, left alone)."""
    state = shift_state(con, row)
    if state == "changed":
        return f"rows {row['where']} of {row['table']} changed since apply; not restored"
    if state == "new":
        _shift_in_place(con, row["table"], shift_where(row), row["columns"], inverse_edits(journaled_edits(row)))
    return None
