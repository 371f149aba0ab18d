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
from histmig.toolkit.pack import Entry, Rebase, default_entry, first_json, rebased
from histmig.tools.codex import state as codex_state

TOOL = "codex"


def entry(homes: Any, ref: Any) -> Entry:
    out = default_entry(Path(homes.codex), ref)
    for db in _state_dbs(homes):
        row = _rows(str(db), _mtime(db)).get(ref.id)
        if row is not None:
            out.rows.setdefault("threads", []).append(row)
            break       # one copy: unpack inserts it into every local state database
    return out


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


@functools.lru_cache(maxsize=4)
def _rows(db: str, _mtime_ns: int) -> dict[str, dict[str, Any]]:
    """Every ``threads`` row of one database, all columns (read once per pack, not once per thread)."""
    try:
        con = connect_ro(db)
        try:
            return {r["id"]: {k: r[k] for k in r.keys() if not isinstance(r[k], bytes)}
                    for r in con.execute("SELECT * FROM threads")}
        finally:
            con.close()
    except (HistmigError, sqlite3.Error):
        return {}


def rows(homes: Any, session: dict[str, Any], placed: dict[str, Path], rebase: Rebase) -> tuple[list[Any], bool]:
    """The ``threads`` inserts for every local state database that lacks the thread; ``present`` when
    one already has it (the thread was unpacked before, or recorded here)."""
    from histmig.core.plan import SqlInsert  # noqa: PLC0415 (pack, which only reads, never loads the plan model)
    packed = (session.get("rows") or {}).get("threads") or []
    if not packed or not placed:
        return [], False
    row = {k: rebased(v, rebase) for k, v in packed[0].items()}
    rollout = next(iter(placed.values()))
    row["rollout_path"] = str(rollout)
    cwd = row.get("cwd")
    if isinstance(cwd, str) and os.path.isdir(cwd):
        row["cwd"] = os.path.realpath(cwd)      # as Codex records it (state.cwd_update_ops)
    ops, present = [], False
    for db in codex_state.state_dbs(homes):
        cols = _columns(db)
        if not cols:
            continue
        if _rows(str(db), _mtime(db)).get(row["id"]) is not None:
            present = True
            continue
        values = {c: row[c] for c in cols if c in row}
        ops.append(SqlInsert(str(db), "threads", values, ("id",), {"tool": TOOL, "id": row["id"]},
                             "register unpacked thread"))
    return ops, present


def _columns(db: Path) -> list[str]:
    try:
        con = connect_ro(db)
        try:
            return [r[1] for r in con.execute("PRAGMA table_info(threads)")]
        finally:
            con.close()
    except (HistmigError, sqlite3.Error):
        return []
