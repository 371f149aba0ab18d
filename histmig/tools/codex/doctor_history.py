"""The offset rows of thread_history_1.sqlite, asked per thread while doctor reads the rollouts.

Each history database next to a state database is opened once; a thread's rows come from one
indexed query (``WHERE thread_id = ?``, the tables' primary keys start with it), so doctor never
holds every turn of every thread (docs/doctor.md, "How doctor reads a rollout"). A database without
such an index is read whole once, as before. A database whose tables or columns are missing is
left out here: ``doctor_db.check_offsets`` reports it with the same message ``state.history_rows`` gives.

When most rollouts are to be read (a cold run), each table of at most ``PRELOAD_ROWS`` rows is instead
read once in the order of the index the per-thread query searches (``preload``), so each thread's rows
are exactly those, in the same order, that its query returns: one query instead of one per thread and
table, whose fixed cost (a statement, a lock, a page-1 check) was most of the per-thread cost. Above
the cap the per-thread queries stay, so memory stays flat.
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

PRELOAD_ROWS = 100_000   # rows of one table held at once by ``preload`` (about 30 MB of tuples)
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
        self._pre: dict[tuple[str, str], dict[str, list[tuple]]] = {}   # (hist, table) -> thread id -> rows
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
                pre = self._pre.get((hist, table))
                if pre is not None:
                    rows = pre.get(thread_id, [])
                else:
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

    def preload(self, threads: int) -> None:
        """Read each indexed table whole once (``_preloaded``) when ``threads`` rollouts are to be
        read and it holds at most ``PRELOAD_ROWS`` rows and not many more than those threads'
        queries would return (a warm run that reads a few rollouts keeps its few queries)."""
        for hist, whole in self._dbs:
            if whole is not None:
                continue
            for table, _, _ in TABLES:
                try:     # a connection of its own, closed before the reads fork
                    with closing(connect_ro(Path(hist))) as con:
                        con.row_factory = None
                        pre = _preloaded(con, table, threads)
                except (HistmigError, sqlite3.Error):
                    pre = None
                if pre is not None:
                    self._pre[(hist, table)] = pre

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


def _preloaded(con: sqlite3.Connection, table: str, threads: int) -> dict[str, list[tuple]] | None:
    """Every row of ``table`` grouped by thread id, each group as ``WHERE thread_id = ?`` returns it,
    or None when that cannot be made sure of (then the per-thread queries stay). Exactly the same
    rows in the same order when: the per-thread query searches one index by its first column; the
    whole read scans that index (``INDEXED BY``, no sort), which holds each thread's entries together
    in the order the search visits them; the index compares thread ids as bytes (BINARY) and the
    column has TEXT affinity (a stored number is text), so ``=`` on a str is Python's ``==`` on a str."""
    if not 0 < threads:
        return None
    count = con.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
    if count > PRELOAD_ROWS or count > 16 * threads + 1024:
        return None
    index = _searched_index(con, table)
    if index is None:
        return None
    cols = _COLUMNS[table]
    whole = f"SELECT {', '.join(cols)} FROM {table} INDEXED BY \"{index}\" ORDER BY thread_id"
    plan = " ".join(str(r[-1]) for r in con.execute("EXPLAIN QUERY PLAN " + whole))
    if plan not in (f"SCAN {table} USING INDEX {index}", f"SCAN {table} USING COVERING INDEX {index}"):
        return None
    by: dict[str, list[tuple]] = {}
    for r in con.execute(whole):
        if type(r[0]) is str:          # another type is never equal to a str parameter (a BLOB id)
            by.setdefault(r[0], []).append(r)
    return by


def _searched_index(con: sqlite3.Connection, table: str) -> str | None:
    """The index ``_SELECT[table]`` searches, when it compares the thread id as TEXT, BINARY."""
    plan = [str(r[-1]) for r in con.execute("EXPLAIN QUERY PLAN " + _SELECT[table], ("",))]
    if len(plan) != 1:
        return None
    words = plan[0].split()
    if words[:2] != ["SEARCH", table] or words[-1] != "(thread_id=?)":
        return None
    if words[2:4] == ["USING", "INDEX"] and len(words) == 6:
        index = words[4]
    elif words[2:5] == ["USING", "COVERING", "INDEX"] and len(words) == 7:
        index = words[5]
    else:
        return None
    first = [r for r in con.execute(f'PRAGMA index_xinfo("{index}")') if r[0] == 0]
    if len(first) != 1 or first[0][2] != "thread_id" or str(first[0][4]).upper() != "BINARY":
        return None
    decl = next((str(r[2]).upper() for r in con.execute(f"PRAGMA table_info({table})") if r[1] == "thread_id"), "")
    if "INT" in decl or not any(word in decl for word in ("CHAR", "CLOB", "TEXT")):
        return None                    # not TEXT affinity (SQLite's rules, in their order)
    return index


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
