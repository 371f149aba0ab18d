"""Codex's SQLite stores: ``state_5.sqlite`` (threads) and ``thread_history_1.sqlite`` (byte offsets
into paginated rollouts). Read-only here; changes are returned as plan operations.

Codex may read a state DB from several places (docs/specs/codex.md §1, docs/specs/pitfalls.md #6): the config key
``sqlite_home``, the env ``CODEX_SQLITE_HOME``, CODEX_HOME itself, and (Codex Desktop) the
``sqlite/`` subfolder. A provider flip must change every one that has the thread, or the picker and
resume keep the old provider (docs/specs/codex.md §0.4).
"""
from __future__ import annotations

import functools
import os
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Sequence

from histmig.core import shift as core_shift
from histmig.core.dbread import connect_ro
from histmig.core.diagnostics import HistmigInputError

# histmig.core.plan (SqlUpdate) is imported by the functions that build operations: a dry run only reads.
if TYPE_CHECKING:
    from histmig.core.plan import SqlShift, SqlUpdate

STATE_DB = "state_5.sqlite"
HISTORY_DB = "thread_history_1.sqlite"
TURN_OFFSETS = ("rollout_byte_offset", "rollout_end_byte_offset")
PROJECTION_OFFSET = "next_rollout_byte_offset"
PROJECTION_COLUMNS = ("thread_id", PROJECTION_OFFSET, "next_rollout_ordinal")


def sqlite_dirs(homes, cfg: dict | None = None) -> list[Path]:
    """Every folder Codex may keep its databases in, most specific first, without duplicates."""
    from histmig.tools.codex.config import load_config, sqlite_home
    try:
        cfg = load_config(homes) if cfg is None else cfg
    except HistmigInputError:
        cfg = {}
    candidates = [sqlite_home(homes, cfg), homes.codex_sqlite, Path(homes.codex), Path(homes.codex) / "sqlite"]
    out: list[Path] = []
    seen: set[str] = set()
    for c in candidates:
        if c is None:
            continue
        key = os.path.realpath(c)
        if key not in seen:
            seen.add(key)
            out.append(Path(c))
    return out


def state_dbs(homes, cfg: dict | None = None) -> list[Path]:
    return [d / STATE_DB for d in sqlite_dirs(homes, cfg) if (d / STATE_DB).is_file()]


def history_dbs(homes, cfg: dict | None = None) -> list[Path]:
    return [d / HISTORY_DB for d in sqlite_dirs(homes, cfg) if (d / HISTORY_DB).is_file()]


def _columns(con: sqlite3.Connection, table: str) -> set[str]:
    return {r[1] for r in con.execute(f"PRAGMA table_info({table})")}


def _query(path: Path, table: str, want: Sequence[str], where: str = "", args: Iterable[Any] = (),
           *, need: Sequence[str] = ()) -> list[dict]:
    """Rows of ``table`` with the wanted columns that exist; [] when the table does not. A missing
    column of ``need`` (or a missing table, when ``need`` is given) raises HistmigInputError."""
    try:
        with closing(connect_ro(path)) as con:
            have = _columns(con, table)
            missing = [c for c in need if c not in have]
            if missing:
                raise HistmigInputError(f"{table} has no {', '.join(missing)} column" if have
                                        else f"no {table} table", path=path)
            cols = [c for c in want if c in have]
            if not cols:
                return []
            sql = f"SELECT {', '.join(cols)} FROM {table} {where}"
            return [dict(r) for r in con.execute(sql, tuple(args))]
    except sqlite3.Error as e:
        raise HistmigInputError(f"cannot read {table} ({e})", path=path) from None


THREAD_COLUMNS = ("id", "model_provider", "cwd", "rollout_path", "archived", "history_mode", "model")


def thread_rows(db: Path, ids: Iterable[str] | None = None, *, strict: bool = False) -> dict[str, dict]:
    """``{thread id: row}`` from one state DB (all rows, or just ``ids``). ``strict``: a DB without
    a threads table is an error, not an empty one (for a check of the DB itself)."""
    if ids is None:
        rows = _query(db, "threads", THREAD_COLUMNS, need=("id",) if strict else ())
    else:
        ids = list(ids)
        rows = []
        for i in range(0, len(ids), 500):
            chunk = ids[i:i + 500]
            rows += _query(db, "threads", THREAD_COLUMNS, f"WHERE id IN ({', '.join('?' * len(chunk))})", chunk)
    return {r["id"]: r for r in rows}


NO_COLUMN = object()   # thread_providers: the DB's threads table has no model_provider column


def thread_providers(db: Path) -> dict[str, Any]:
    """``{thread id: model_provider}`` of every threads row, in one query of two columns (a flip
    dry run only counts rows; :func:`thread_rows` builds a dict per row). ``NO_COLUMN`` as the
    value when the table has no model_provider column; {} without a threads table."""
    try:
        with closing(connect_ro(db)) as con:
            have = _columns(con, "threads")
            if "id" not in have:
                return {}
            con.row_factory = None
            if "model_provider" not in have:
                return {r[0]: NO_COLUMN for r in con.execute("SELECT id FROM threads")}
            return dict(con.execute("SELECT id, model_provider FROM threads").fetchall())
    except sqlite3.Error as e:
        raise HistmigInputError(f"cannot read threads ({e})", path=db) from None


def provider_counts(db: Path) -> dict[str, int]:
    try:
        with closing(connect_ro(db)) as con:
            return {r[0]: r[1] for r in con.execute("SELECT model_provider, COUNT(*) FROM threads GROUP BY 1")}
    except sqlite3.Error:
        return {}


def history_rows(db: Path) -> tuple[list[dict], list[dict]]:
    """Every ``thread_turns`` row with its ordinals and offsets, and every projection row, of one
    thread_history_1.sqlite; missing tables or columns raise (offsets are checked against ordinals)."""
    turn_columns = ("thread_id", "turn_id", "rollout_ordinal", TURN_OFFSETS[0], "rollout_end_ordinal", TURN_OFFSETS[1])
    turns = _query(db, "thread_turns", turn_columns, need=turn_columns)
    return turns, _query(db, "thread_history_projection_state", PROJECTION_COLUMNS, need=PROJECTION_COLUMNS)


def check_history(db: Path) -> None:
    """Raise what :func:`history_rows` raises for a database it cannot read, reading no row (doctor
    fetches the rows per thread: tools/codex/doctor_history.py)."""
    turn_columns = ("thread_id", "turn_id", "rollout_ordinal", TURN_OFFSETS[0], "rollout_end_ordinal", TURN_OFFSETS[1])
    _query(db, "thread_turns", turn_columns, "LIMIT 0", need=turn_columns)
    _query(db, "thread_history_projection_state", PROJECTION_COLUMNS, "LIMIT 0", need=PROJECTION_COLUMNS)


def turn_rows(db: Path, thread_id: str) -> list[dict]:
    return _query(db, "thread_turns", ("thread_id", "turn_id", *TURN_OFFSETS), "WHERE thread_id = ?", [thread_id])


def projection_row(db: Path, thread_id: str) -> dict | None:
    rows = _query(db, "thread_history_projection_state", PROJECTION_COLUMNS, "WHERE thread_id = ?", [thread_id])
    return rows[0] if rows else None


# ---- operations ----------------------------------------------------------------------------

@functools.lru_cache(maxsize=64)
def session_of(thread_id: str) -> dict[str, str]:
    """An operation's ``session``: one dict shared by a thread's operations, made in a row (a flip of
    8,000 threads plans three operations each). Never change an operation's session in place: it is
    its thread's other operations' too (nothing in histmig does; plans loaded from JSON get their own)."""
    return {"tool": "codex", "id": thread_id}


def provider_update_ops(homes, thread_id: str, new: str, *, providers: dict[Path, dict[str, Any]] | None = None,
                        reason: str = "provider flip") -> list[SqlUpdate]:
    """``UPDATE threads SET model_provider = new`` in every state DB that has the thread.
    ``providers`` (db -> id -> its model_provider: :func:`thread_providers`) lets a caller planning
    thousands of threads read each DB once, two columns a row (seven, as a dict a row, were 1.2 MB
    more at the peak of a flip of 8,000 sessions: docs/bench.md, "This round")."""
    return _thread_update_ops(homes, thread_id, "model_provider", new, values=providers, reason=reason)


def cwd_update_ops(homes, thread_id: str, new_cwd: str, *, rows: dict[Path, dict[str, dict]] | None = None,
                   reason: str = "project move") -> list[SqlUpdate]:
    """``UPDATE threads SET cwd = realpath(new_cwd)`` in every state DB that has the thread: Codex
    filters ``--last`` and the picker on this column after canonicalising (docs/specs/codex.md §15.2)."""
    canonical = os.path.realpath(new_cwd) if os.path.isdir(new_cwd) else new_cwd
    return _thread_update_ops(homes, thread_id, "cwd", canonical, rows=rows, reason=reason)


def _thread_update_ops(homes, thread_id, column, value, *, rows=None, values=None, reason) -> list[SqlUpdate]:
    """``rows``: db -> id -> row; ``values``: db -> id -> the row's ``column`` (``NO_COLUMN`` without
    one); neither: each DB queried for the thread."""
    from histmig.core.plan import SqlUpdate
    ops = []
    for db in state_dbs(homes) if rows is None and values is None else list(rows if values is None else values):
        if values is not None:
            have = values[db].get(thread_id, NO_COLUMN)
        else:
            row = (thread_rows(db, [thread_id]) if rows is None else rows[db]).get(thread_id)
            have = NO_COLUMN if row is None or column not in row else row[column]
        if have is NO_COLUMN or have == value:
            continue
        ops.append(SqlUpdate(db=str(db), table="threads", key={"id": thread_id}, set=_one(column, value),
                             expect=_one(column, have), session=session_of(thread_id), reason=reason))
    return ops


def _one(column: str, value: Any) -> dict[str, Any]:
    """``{column: value}``, one dict for the operations in a row that hold the same (a flip's 8,000
    ``set`` and ``expect``: 2.6 MB of equal dicts). Shared like :func:`session_of`'s: never changed
    in place. ``typed``: 1, 1.0 and True stay three values."""
    try:
        return _shared_one(column, value)
    except TypeError:                          # (an unhashable value: its own dict)
        return {column: value}


@functools.lru_cache(maxsize=64, typed=True)
def _shared_one(column: str, value: Any) -> dict[str, Any]:
    return {column: value}


def rebased_path_ops(homes, rebase, *, rows: dict[Path, dict[str, dict]], skip: set[str] = frozenset(),
                     reason: str = "folder move") -> list[SqlUpdate]:
    """Stored absolute paths other than ``cwd`` that ``rebase`` maps (it returns None for a path
    outside the moved folder): ``threads.rollout_path`` of each row (a moved home: Codex otherwise
    fails with "no rollout found for thread id"), except threads in ``skip``, and Codex Desktop's
    ``project_roots.path``. Each row is re-pointed from its own value, in its own database."""
    from histmig.core.plan import SqlUpdate
    ops = []
    for db, by_id in rows.items():
        for tid, row in sorted(by_id.items()):
            new = rebase(row.get("rollout_path"))
            if new is not None and new != row["rollout_path"] and tid not in skip:
                ops.append(SqlUpdate(db=str(db), table="threads", key={"id": tid}, set={"rollout_path": new},
                                     expect={"rollout_path": row["rollout_path"]}, session=session_of(tid),
                                     reason=reason))
        for root in _query(db, "project_roots", ("project_id", "position", "path")):
            new = rebase(root.get("path"))
            if new is not None and new != root["path"] and "project_id" in root and "position" in root:
                ops.append(SqlUpdate(db=str(db), table="project_roots",
                                     key={"project_id": root["project_id"], "position": root["position"]},
                                     set={"path": new}, expect={"path": root["path"]}, reason=reason))
    return ops


# the offsets live in histmig/core/shift.py (the write path shifts them too); named here for the
# Codex planners that import them from this module
shift, shifter = core_shift.shift, core_shift.shifter

TURN_KEY = ("turn_id",)
# (table, key columns that identify a thread's rows, offset columns): one SqlShift each per thread
OFFSET_TABLES = (("thread_turns", TURN_KEY, TURN_OFFSETS),
                 ("thread_history_projection_state", ("thread_id",), (PROJECTION_OFFSET,)))


class Rows:
    """What a :class:`~histmig.core.plan.SqlShift` of one thread's rows of one table needs: their count
    and digest (histmig/core/shift.py) and the largest offset (an edit at or after it moves none:
    :func:`histmig.core.shift.needed`)."""

    __slots__ = ("digest", "top")

    def __init__(self) -> None:
        self.digest, self.top = core_shift.Digest(), -1

    def add(self, row: tuple, nkey: int) -> None:
        self.digest.add(row)
        self.top = max([self.top, *(v for v in row[nkey:] if v.__class__ is int)])


def _thread_rows(db: Path, table: str, key: Sequence[str], cols: Sequence[str],
                 thread_id: str | None = None) -> tuple[tuple[str, ...], dict[str, Rows]]:
    """``(offset columns the table has, {thread id: Rows})`` of ``table``, from one unordered pass (the
    digest is order-free): every thread's, or ``thread_id``'s. Nothing but the per-thread sums is
    kept (a 1.6 GB home holds ~50,000 turn rows). A table without the key columns or any of ``cols``
    has no rows to shift (as before: an older schema is left alone)."""
    out: dict[str, Rows] = {}
    where, args = ("WHERE thread_id = ?", (thread_id,)) if thread_id is not None else ("", ())
    try:
        with closing(connect_ro(db)) as con:
            have = _columns(con, table)
            cols = tuple(c for c in cols if c in have)
            if not cols or any(c not in have for c in ("thread_id", *key)):
                return cols, out
            con.row_factory = None
            names = ", ".join(f'"{c}"' for c in (*key, *cols))
            for tid, *row in con.execute(f'SELECT thread_id, {names} FROM "{table}" {where}', args):
                rows = out.get(tid)
                if rows is None:
                    rows = out[tid] = Rows()
                rows.add(tuple(row), len(key))
    except sqlite3.Error as e:
        raise HistmigInputError(f"cannot read {table} ({e})", path=db) from None
    return cols, out


class HistoryIndex:
    """Per history DB, table and thread, the count, digest and largest offset of the thread's rows
    (:class:`Rows`), read in one pass per table (a flip of thousands of threads would otherwise open
    each DB twice per thread). Per thread, not per row: a flip's plan stays O(threads)."""

    def __init__(self, dbs: Sequence[Path]):
        self.rows: dict[Path, dict[str, tuple[tuple[str, ...], dict[str, Rows]]]] = {
            db: {table: _thread_rows(db, table, key, cols) for table, key, cols in OFFSET_TABLES} for db in dbs}


def offset_shift_ops(homes, thread_id: str, edits: Sequence[tuple[int, int]], *,
                     dbs: Sequence[Path] | None = None, index: HistoryIndex | None = None,
                     reason: str = "keep byte offsets in step") -> list[SqlShift]:
    """SqlShift ops that keep ``thread_history_1.sqlite`` pointing at the same lines after the
    rollout changed by ``edits`` = [(byte offset of the edit in the original, length delta)]: one per
    offset table and database holding rows of the thread that an edit moves. Without ``index`` the
    thread's rows are read now (undo: the database as it is now, rows Codex added since included)."""
    edits = core_shift.sorted_edits(edits)
    if not edits:
        return []
    from histmig.core.plan import SqlShift
    ops: list[SqlShift] = []
    where = {"thread_id": thread_id}             # (one for the thread's operations, as its session)
    for db in (list(index.rows) if index is not None else history_dbs(homes) if dbs is None else dbs):
        for table, key, cols in OFFSET_TABLES:
            have, by_thread = index.rows[db][table] if index is not None else \
                _thread_rows(db, table, key, cols, thread_id)
            rows = by_thread.get(thread_id)
            if rows is None:
                continue
            need = core_shift.needed(edits, rows.top, rows.digest.count == 1 and len(have) == 1)
            if need:
                ops.append(SqlShift(db=str(db), table=table, where=where, order=key,
                                    columns=have, edits=need, expect=rows.digest.expect(),
                                    session=session_of(thread_id), reason=reason))
    return ops


def offsets_for(homes, thread_id: str) -> dict[str, Any]:
    """Every stored offset of a thread (for checks and tests): ``{"turns": [...], "next": n}``."""
    out: dict[str, Any] = {"turns": [], "next": None}
    for db in history_dbs(homes):
        out["turns"] += turn_rows(db, thread_id)
        proj = projection_row(db, thread_id)
        if proj:
            out["next"] = proj.get(PROJECTION_OFFSET)
    return out
