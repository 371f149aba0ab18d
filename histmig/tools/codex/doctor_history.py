"""The offset rows of thread_history_1.sqlite, asked per thread while doctor reads the rollouts.

Each history database next to a state database is opened once; a thread's rows come from one
indexed query (``WHERE thread_id = ?``, the tables' primary keys start with it), so doctor never
holds every turn of every thread (docs/doctor.md, "How doctor reads a rollout"). A database without
such an index is read whole once, as before. A database whose tables or columns are missing is
left out here: ``doctor_db.check_offsets`` reports it with the same message ``state.history_rows`` gives.
"""
from __future__ import annotations

import os
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Iterator

from histmig.core.diagnostics import HistmigError
from histmig.tools.codex.doctor_scan import Needs
from histmig.tools.codex.state import PROJECTION_COLUMNS, TURN_OFFSETS, check_history, connect_ro

TURN_COLUMNS = ("thread_id", "turn_id", "rollout_ordinal", TURN_OFFSETS[0], "rollout_end_ordinal", TURN_OFFSETS[1])
# (table, the columns state.history_rows reads, the row's key)
TABLES = (("thread_turns", TURN_COLUMNS, ("thread_id", "turn_id")),
          ("thread_history_projection_state", PROJECTION_COLUMNS, ("thread_id",)))


# each table's offset columns: (column, how its want follows the ordinal, the ordinal's column)
# (doctor_db's module docstring)
OFFSETS = {"thread_turns": (("rollout_byte_offset", "start", "rollout_ordinal"),
                            ("rollout_end_byte_offset", "end", "rollout_end_ordinal")),
           "thread_history_projection_state": (("next_rollout_byte_offset", "next", "next_rollout_ordinal"),)}


def validate(hist: Path) -> None:
    """Raise what ``state.history_rows`` raises for a database it cannot read (same order, same text)."""
    check_history(hist)


def _indexed(con: sqlite3.Connection, table: str) -> bool:
    for index in con.execute(f"PRAGMA index_list({table})").fetchall():
        cols = [r[2] for r in con.execute(f'PRAGMA index_info("{index[1]}")')]
        if cols[:1] == ["thread_id"]:
            return True
    return False


class Histories:
    """``needs_of(thread_id)``: that thread's rows of every readable history database. Each
    process opens its own connections, on first use (doctor reads rollouts in forked workers,
    and SQLite connections must not cross a fork)."""

    def __init__(self, hists: list[Path]):
        self._dbs: list[tuple[str, dict | None]] = []
        self._cons: dict[str, sqlite3.Connection] = {}
        self._pid = os.getpid()
        for hist in hists:
            try:
                validate(hist)
                with closing(connect_ro(hist)) as con:
                    whole = None if all(_indexed(con, t) for t, _, _ in TABLES) else _grouped(con)
            except (HistmigError, sqlite3.Error):
                continue
            self._dbs.append((str(hist), whole))

    def _con(self, hist: str) -> sqlite3.Connection:
        if self._pid != os.getpid():     # a forked worker: the parent's connections are not its own
            self._cons, self._pid = {}, os.getpid()
        if hist not in self._cons:
            self._cons[hist] = connect_ro(Path(hist))
        return self._cons[hist]

    def needs_of(self, thread_id: str) -> Needs | None:
        needs = Needs()
        for hist, whole in self._dbs:
            for table, _, keys in TABLES:
                if whole is not None:
                    for row in whole[table].get(thread_id, []):
                        _add(needs, hist, table, tuple([row[k] for k in keys]), row)
                    continue
                try:
                    rows = self._rows(hist, table, thread_id)
                except (HistmigError, sqlite3.Error):
                    continue
                _add_rows(needs, hist, table, rows, len(keys))
        return needs if needs.rows else None

    def _rows(self, hist: str, table: str, thread_id: str) -> list[tuple]:
        """The thread's rows of ``table`` as plain tuples (``TABLES``' columns: a third of the
        cost of ``sqlite3.Row``, for one query per thread and table)."""
        cur = self._con(hist).cursor()
        cur.row_factory = None
        try:
            return cur.execute(_SELECT[table], (thread_id,)).fetchall()
        finally:
            cur.close()

    def close(self) -> None:
        if self._pid == os.getpid():
            for con in self._cons.values():
                con.close()
        self._cons = {}


def _add(needs: Needs, hist: str, table: str, key: tuple, row: dict) -> None:
    want = {}             # each offset column -> (kind, the ordinal it follows)
    for col, kind, ordinal in OFFSETS[table]:
        n = row.get(ordinal)
        want[col] = (kind, n)
        if type(n) is int:
            needs.ordinals.add(n)
            if kind == "next":
                needs.ordinals.add(n - 1)
        have = row.get(col)
        if type(have) is int and have >= 0:
            needs.offsets.add(have)
    needs.rows.append((hist, table, key, row, want))


def _add_rows(needs: Needs, hist: str, table: str, rows: list[tuple], nkeys: int) -> None:
    """``_add`` of each row of ``table`` given as a tuple of its ``TABLES`` columns, whose key
    columns come first."""
    cols = _COLUMNS[table]
    for r in rows:
        _add(needs, hist, table, r[:nkeys], dict(zip(cols, r)))


_COLUMNS = {table: cols for table, cols, _ in TABLES}
assert all(cols[:len(keys)] == keys for _, cols, keys in TABLES)   # _add_rows takes the key as a prefix
_SELECT = {table: f"SELECT {', '.join(cols)} FROM {table} WHERE thread_id = ?" for table, cols, _ in TABLES}


def _grouped(con: sqlite3.Connection) -> dict[str, dict[str, list[dict]]]:
    out: dict[str, dict[str, list[dict]]] = {}
    for table, cols, _ in TABLES:
        by: dict[str, list[dict]] = {}
        for r in con.execute(f"SELECT {', '.join(cols)} FROM {table}"):
            by.setdefault(r["thread_id"], []).append(dict(r))
        out[table] = by
    return out


def keys_in_order(hist: Path, table: str) -> Iterator[tuple[str, tuple]]:
    """(thread id, row key) of every row, in the order ``state.history_rows`` returns them (the
    same query), streamed: the order the repair operations are listed in."""
    cols, keys = next((c, k) for t, c, k in TABLES if t == table)
    con = connect_ro(hist)
    try:
        for r in con.execute(f"SELECT {', '.join(cols)} FROM {table}"):
            yield r["thread_id"], tuple(r[k] for k in keys)
    finally:
        con.close()
