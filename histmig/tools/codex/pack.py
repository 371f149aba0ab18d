"""Codex's part of ``pack`` / ``unpack`` (docs/pack.md; histmig/toolkit/pack.py says what each hook does).

A thread is its rollout (``sessions/…`` or ``archived_sessions/…``, plain or ``.jsonl.zst``, byte for
byte) and its ``threads`` row in each state database (docs/specs/codex.md §15.2). On unpack the row is
inserted into every local state database that has the table, with the columns that database has:
``rollout_path`` names the placed file (Codex opens the thread through it: "no rollout found for thread
id" otherwise) and ``cwd`` and every other path column are re-homed by the rule ``move`` uses
(``state.rebased_path_ops``: a value that *is* a path under OLD).
"""
from __future__ import annotations

import functools
import os
import sqlite3
from pathlib import Path
from typing import Any

from histmig.core.dbread import connect_ro
from histmig.core.diagnostics import HistmigError
from histmig.toolkit.pack import Append, Entry, Rebase, append_ops, default_entry, first_json, rebased, session_lines
from histmig.tools.codex import state as codex_state

TOOL = "codex"
# thread_history_1.sqlite tables keyed by thread_id and their primary keys (docs/specs/codex.md §10)
HISTORY_TABLES = {"thread_turns": ("thread_id", "turn_id"), "thread_items": ("thread_id", "turn_id", "item_id"),
                  "thread_history_projection_state": ("thread_id",),
                  "thread_realtime_items": ("thread_id", "item_id")}
PROMPTS = "history.jsonl"       # the manifest's rows of prompt lines: [{"line": text}]


def entry(homes: Any, ref: Any) -> Entry:
    out = default_entry(Path(homes.codex), ref)
    for db in _state_dbs(homes):
        row = _thread_row(db, ref.id)
        if row is not None:
            out.rows.setdefault("threads", []).append(row)
            break       # one copy: unpack inserts it into every local state database
    for db in _history_dbs(homes):
        got = _history_rows(db, ref.id)
        if got:
            out.rows.update(got)
            break
    lines = session_lines(Path(homes.codex) / PROMPTS, "session_id", ref.id)
    if lines:
        out.rows[PROMPTS] = [{"line": line} for line in lines]
    return out


@functools.lru_cache(maxsize=2)
def _history_dbs(homes: Any) -> tuple[Path, ...]:
    return tuple(codex_state.history_dbs(homes))


def _history_rows(db: Path, thread_id: str) -> dict[str, list[dict[str, Any]]]:
    """The thread's rows of each projection table (by its indexed ``thread_id``), all columns."""
    out: dict[str, list[dict[str, Any]]] = {}
    try:
        con, tables = _history_con(str(db), _mtime(db))
        for table in tables:
            rows = _dicts(con, f"SELECT * FROM {table} WHERE thread_id = ?", (thread_id,))
            if rows:
                out[table] = rows
    except (HistmigError, sqlite3.Error):
        return {}
    return out


def _thread_row(db: Path, thread_id: str) -> dict[str, Any] | None:
    """The thread's ``threads`` row, all columns, by its primary key (one query per thread on a connection
    kept for the pack: the pack holds no table of every thread)."""
    try:
        con = _con(str(db), _mtime(db))
        got = _dicts(con, "SELECT * FROM threads WHERE id = ?", (thread_id,))
    except (HistmigError, sqlite3.Error):
        return None
    return got[0] if got else None


def _dicts(con: Any, sql: str, args: tuple = ()) -> list[dict[str, Any]]:
    """The rows as dicts of their JSON columns (a blob is left out), from plain tuples: sqlite3.Row's
    lookups by name cost more than the query (cProfile of a 2,000-thread pack, docs/bench.md)."""
    cur = con.cursor()
    cur.row_factory = None
    cur.execute(sql, args)
    cols = [d[0] for d in cur.description]
    return [{k: v for k, v in zip(cols, r) if not isinstance(v, bytes)} for r in cur]


_CONS: dict[str, tuple[int, Any]] = {}


def _history_con(db: str, mtime_ns: int) -> tuple[Any, tuple[str, ...]]:
    """One read-only connection per history database for a whole pack (opening one per thread cost
    more than its queries: docs/bench.md), and the projection tables it has; reopened when it changed."""
    con = _con(db, mtime_ns)
    got = _TABLES.get(db)
    if got is None or got[0] != mtime_ns:
        have = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        got = _TABLES[db] = (mtime_ns, tuple(t for t in HISTORY_TABLES if t in have))
    return con, got[1]


_TABLES: dict[str, tuple[int, tuple[str, ...]]] = {}


def _con(db: str, mtime_ns: int) -> Any:
    """One read-only connection per database (state or history) for a whole pack; reopened when the
    database changed."""
    got = _CONS.get(db)
    if got is not None and got[0] == mtime_ns:
        return got[1]
    if got is not None or len(_CONS) >= 4:     # the databases of the pack running now, no more
        for _m, old in _CONS.values():
            old.close()
        _CONS.clear()
        _TABLES.clear()
    con = connect_ro(db)
    _CONS[db] = (mtime_ns, con)
    return con


@functools.lru_cache(maxsize=2)
def _state_dbs(homes: Any) -> tuple[Path, ...]:
    """Where the state databases are (config.toml read once per pack, not once per thread)."""
    return tuple(codex_state.state_dbs(homes))


def version(head: bytes) -> str | None:
    """``session_meta.payload.cli_version``: the Codex that recorded the thread."""
    for obj in first_json(head, 1):
        if isinstance(obj, dict) and isinstance(obj.get("payload"), dict):
            v = obj["payload"].get("cli_version")
            return v if isinstance(v, str) else None
    return None


def _mtime(db: Path) -> int:
    try:
        return os.stat(db).st_mtime_ns
    except OSError:
        return 0


def rows(homes: Any, session: dict[str, Any], placed: dict[str, Path], rebase: Rebase,
         edits: dict[str, list] | None = None) -> tuple[list[Any], bool]:
    """The ``threads`` inserts for every local state database that lacks the thread (``present`` when
    one already has it: the thread was unpacked before, or recorded here), the projection rows for every
    local history database that lacks them (offsets shifted by ``edits``: how re-homing changed the
    rollout), and the prompt lines for ``history.jsonl``."""
    if not placed:
        return [], False
    ops, present = _thread_ops(homes, session, placed, rebase)
    ops += _projection_ops(homes, session, next(iter(placed)), rebase, edits or {})
    lines = [r["line"] for r in (session.get("rows") or {}).get(PROMPTS) or [] if isinstance(r.get("line"), str)]
    if lines:
        ops.append(Append(str(Path(homes.codex) / PROMPTS), tuple(x.encode("utf-8", "surrogateescape") for x in lines),
                          {"tool": TOOL, "id": session["id"]}))
    return ops, present


def merge(homes: Any, items: list[Any]) -> list[Any]:
    """Every unpacked thread's prompt lines: one append to ``history.jsonl``."""
    return append_ops([a for a in items if isinstance(a, Append)], "prompt history of unpacked threads")


def _projection_ops(homes: Any, session: dict[str, Any], rel: str, rebase: Rebase, edits: dict[str, list]) -> list[Any]:
    from histmig.core.plan import SqlInsert  # noqa: PLC0415
    packed = session.get("rows") or {}
    if not any(packed.get(t) for t in HISTORY_TABLES):
        return []
    moves = [codex_state.shifter(e) for e in edits.get(rel, [])]

    def shifted(row: dict[str, Any]) -> dict[str, Any]:
        row = {k: rebased(v, rebase) for k, v in row.items()}
        for col in (*codex_state.TURN_OFFSETS, codex_state.PROJECTION_OFFSET):
            if isinstance(row.get(col), int):
                for moved in moves:       # one pass per --rehome: each pass's offsets are in its input
                    row[col] = moved(row[col])
        return row
    ops = []
    for db in codex_state.history_dbs(homes):
        have = _history_rows(db, session["id"])
        for table, key in HISTORY_TABLES.items():
            cols = _columns(db, table)
            if not cols or have.get(table):
                continue        # no such table here, or the thread's projection is already here
            for row in packed.get(table) or []:
                row = shifted(row)
                ops.append(SqlInsert(str(db), table, {c: row[c] for c in cols if c in row}, key,
                                     {"tool": TOOL, "id": session["id"]}, "projection of an unpacked thread"))
    return ops


def _thread_ops(homes: Any, session: dict[str, Any], placed: dict[str, Path], rebase: Rebase) -> tuple[list[Any], bool]:
    from histmig.core.plan import SqlInsert  # noqa: PLC0415 (pack, which only reads, never loads the plan model)
    packed = (session.get("rows") or {}).get("threads") or []
    if not packed:
        return [], False
    row = {k: rebased(v, rebase) for k, v in packed[0].items()}
    rollout = next(iter(placed.values()))
    row["rollout_path"] = str(rollout)
    cwd = row.get("cwd")
    if isinstance(cwd, str) and os.path.isdir(cwd):
        row["cwd"] = os.path.realpath(cwd)      # as Codex records it (state.cwd_update_ops)
    ops, present = [], False
    for db in codex_state.state_dbs(homes):
        cols = _columns(db, "threads")
        if not cols:
            continue
        if _thread_row(db, row["id"]) is not None:
            present = True
            continue
        values = {c: row[c] for c in cols if c in row}
        ops.append(SqlInsert(str(db), "threads", values, ("id",), {"tool": TOOL, "id": row["id"]},
                             "register unpacked thread"))
    return ops, present


def _columns(db: Path, table: str) -> list[str]:
    try:
        con = connect_ro(db)
        try:
            return [r[1] for r in con.execute(f"PRAGMA table_info({table})")]
        finally:
            con.close()
    except (HistmigError, sqlite3.Error):
        return []
