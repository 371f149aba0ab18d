"""Can a backup be trusted? Checks used before any backup is put back, and the rule for backups no
journal record names (docs/safety.md "Damaged backups and journals").

    verify_backup(folder, rec) -> reason | None     # before restoring from rec's backup
    unnamed_backups(folder, records) -> (drop, keep) # backups in b/ that no intent names
    sql_probe(ops) -> dict | None                    # what begin records to tell a committed database

A backup is used only when it holds exactly the bytes its intent journaled (size and sha256 of
the original; a hard link may be longer: an agent kept appending to the old inode). A backup that
no intent names is normal for a crash between making it and journaling its intent (the file is
then untouched), and otherwise means records were lost from the end of the journal (truncated by
an outside fault): recover keeps such a backup and says so instead of reporting success.
"""
from __future__ import annotations

import hashlib
import os
import sqlite3
from pathlib import Path
from typing import Any

from histmig.apply import fsio

CHUNK = 1 << 20


def verify_backup(folder: Path, rec: dict[str, Any], *, prefix_sha: str | None = None,
                  hashed: bool = True) -> str | None:
    """None when ``rec``'s backup (``b/<name>``) holds the journaled bytes, else why not.
    ``prefix_sha``: the sha256 of its first journaled-size bytes, when the caller already read
    them (undo's diff); ``hashed=False``: the size checks only (the caller compares the hash)."""
    backup = rec.get("backup") or {}
    path = Path(folder) / "b" / backup.get("name", "")
    if backup.get("kind") == "sqlite":
        want = {"sha256": backup.get("sha256"), "size": backup.get("size")}
    else:
        want = {"sha256": (rec.get("pre") or {}).get("sha256"), "size": (rec.get("pre") or {}).get("size")}
    try:
        size = os.lstat(path).st_size
    except FileNotFoundError:
        return f"backup {path} is missing"
    if want["size"] is None:
        return None      # an intent of an older histmig: nothing to check against
    exact = backup.get("kind") != "link"     # a hard link is the old inode: appends may follow the size
    if size < want["size"] or (exact and size != want["size"]):
        return f"backup {path} has {size} bytes, the journal says {want['size']}; not used"
    # no hash: a streamed rewrite that never got as far as its "ready" record (never replaced)
    if want["sha256"] is not None and hashed and (prefix_sha or _sha_prefix(path, want["size"])) != want["sha256"]:
        return f"backup {path} does not match its journaled sha256; not used"
    return None


def _sha_prefix(path: Path, size: int) -> str:
    """sha256 of the first ``size`` bytes, read without touching atime (a hard-link backup is the
    user's old inode: restored by a rename, its times must be the original's)."""
    with os.fdopen(fsio.open_read(path), "rb") as fh:
        h, left = hashlib.sha256(), size
        while left > 0 and (chunk := fh.read(min(CHUNK, left))):
            h.update(chunk)
            left -= len(chunk)
    return h.hexdigest()


# -- backups no intent names ---------------------------------------------------------------------
def unnamed_backups(folder: Path, records: list[dict[str, Any]]) -> tuple[list[Path], list[tuple[Path, str]]]:
    """Backups in ``b/`` that no intent names: ``(safe to drop, kept with the reason)``.

    Safe: the file the backup was made for (``begin`` lists every operation's path) still holds
    the backup's bytes — the crash came before the intent, so the file was never touched. Kept:
    the file changed (a hard link's inode left the path, a copy's bytes differ from the file's,
    a database holds the planned new values) or nothing says which file it belongs to: the records
    of a change that happened were lost."""
    named = {r["backup"]["name"] for r in records if r["kind"] == "intent" and r.get("backup")}
    begin = next((r for r in records if r["kind"] == "begin"), None)
    ops = {e[0]: e for e in (begin or {}).get("ops", [])}
    bdir = Path(folder) / "b"
    drop, keep = [], []
    for p in sorted(bdir.iterdir()) if bdir.is_dir() else []:
        if p.name in named:
            continue
        why = _changed_since(p, ops.get(_op_number(p.name)), begin is not None)
        if why is None:
            drop.append(p)
        else:
            keep.append((p, why))
    return drop, keep


def _op_number(name: str) -> int | None:
    head = name.split(".", 1)[0]
    return int(head) if head.isdigit() else None


def _changed_since(backup: Path, entry: list | None, has_begin: bool) -> str | None:
    if entry is None:
        where = "the journal's begin record is lost" if not has_begin else "no planned operation has its number"
        return f"{where}: cannot tell which file it belongs to"
    path = entry[2]
    if backup.name.endswith(".sqlite"):
        probe = entry[3] if len(entry) > 3 else None
        return None if probe is None or not _committed(path, probe) else \
            f"{path} holds the planned new rows, but the journal has no record of the change"
    try:
        bst, fst = os.lstat(backup), os.lstat(path)
    except FileNotFoundError:
        return f"{path} is gone, but the journal has no record of removing it"
    if (bst.st_dev, bst.st_ino) == (fst.st_dev, fst.st_ino) or _starts_with(path, backup, bst.st_size):
        return None
    return f"{path} no longer holds the backup's bytes, but the journal has no record of the change"


def _starts_with(path: str, backup: Path, size: int) -> bool:
    """The file begins with the backup's bytes (an agent may have appended since; histmig's own
    rewrites never leave the old bytes as a prefix of the new ones)."""
    try:
        with os.fdopen(fsio.open_read(path), "rb") as a, os.fdopen(fsio.open_read(backup), "rb") as b:
            left = size
            while left > 0:
                x, y = a.read(min(CHUNK, left)), b.read(min(CHUNK, left))
                if x != y or not y:
                    return False
                left -= len(y)
    except OSError:
        return False
    return True


# -- databases: one probe tells whether the transaction committed --------------------------------
def sql_probe(ops: list) -> dict | None:
    """The first operation of a database's group whose effect is visible by one query: all of a
    group commits together, so that one row tells whether the transaction did."""
    from histmig.apply.sqlops import encode_value
    from histmig.core.plan import SqlDelete, SqlInsert, SqlShift, SqlUpdate
    shifts = [op for op in ops if isinstance(op, SqlShift)]
    for op in ops:
        if isinstance(op, SqlUpdate) and op.set != {k: op.expect.get(k) for k in op.set}:
            return {"table": op.table, "key": {k: encode_value(v) for k, v in op.key.items()},
                    "set": {k: encode_value(v) for k, v in op.set.items()}}
        if isinstance(op, SqlInsert):
            return {"table": op.table, "key": {k: encode_value(op.row[k]) for k in op.key}, "exists": True}
        if isinstance(op, SqlDelete) and op.expect_count:
            return {"table": op.table, "key": {k: encode_value(v) for k, v in op.where.items()}, "exists": False}
    return next((p for op in shifts if (p := _shift_probe(op)) is not None), None)


def _shift_probe(op) -> dict | None:
    """A shift's probe: its rows' digest before and after (the shifted one read from the database
    now, before the transaction begins), when the shift moves something; a committed transaction
    leaves them ``new``. None when the rows are not as planned (the transaction will refuse) or the
    shift moves nothing."""
    from histmig.apply.sqlops import connect, encode_value, shift_digests
    try:
        con = connect(op.db, readonly=True)
        try:
            old, new = shift_digests(con, op.table, op.where, op.order, op.columns, op.edits)
        finally:
            con.close()
    except sqlite3.Error:
        return None
    if old != op.expect or new == old:
        return None
    return {"table": op.table, "key": {k: encode_value(v) for k, v in op.where.items()},
            "shift": {"order": list(op.order), "columns": list(op.columns), "count": old["count"],
                      "old": old["digest"], "new": new["digest"]}}


def _committed(db: str, probe: dict) -> bool:
    """Does the database hold the probe's planned result? Unreadable counts as yes (keep)."""
    from histmig.apply.sqlops import decode_value, where_clause, connect
    key = {k: decode_value(v) for k, v in probe["key"].items()}
    w, args = where_clause(key)
    t = probe["table"]
    try:
        con = connect(db, readonly=True)
        try:
            if "shift" in probe:
                from histmig.apply.sqlops import shift_state
                return shift_state(con, {"table": t, "where": probe["key"], **probe["shift"]}) != "old"
            if "set" in probe:
                cols = list(probe["set"])
                row = con.execute(f'SELECT {", ".join(chr(34) + c + chr(34) for c in cols)} FROM "{t}" WHERE {w}',
                                  args).fetchone()
                return row is not None and list(row) == [decode_value(probe["set"][c]) for c in cols]
            n = con.execute(f'SELECT count(*) FROM "{t}" WHERE {w}', args).fetchone()[0]
            return (n > 0) == probe["exists"]
        finally:
            con.close()
    except sqlite3.Error:
        return True
