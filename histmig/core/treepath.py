"""The branch of a tree of entries that ends at the last one: its ids from that leaf back to the root.

A session file that is a tree (Pi after ``/tree``) names each entry's parent; the branch a client
continues from is the path from the last entry up. Finding it needs every entry's parent, one small
pair per entry: up to :data:`SPILL` pairs they are held in a dict, past that in a private temporary
database on disk (histmig/core/tempdb.py), so memory stays flat whatever the entry count ("Read only
what you use", docs/ARCHITECTURE.md).
"""
from __future__ import annotations

import itertools
import sqlite3
from typing import Iterable, Iterator

from histmig.core import tempdb

SPILL = 100_000          # pairs held in memory before they go to disk (~15 MB of short ids)
BATCH = 10_000
WHAT = "a branched session's entry ids"


class SpilledIds:
    """A set of ids kept in a private on-disk SQLite table: ``id in ids`` is one indexed look-up."""

    def __init__(self, con: sqlite3.Connection):
        self._con = con

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, str):
            return False
        try:
            return self._con.execute("SELECT 1 FROM keep WHERE id = ?", (key,)).fetchone() is not None
        except tempdb.Error as e:
            raise tempdb.failed(WHAT, e) from e

    def __iter__(self) -> Iterator[str]:
        return (r[0] for r in self._con.execute("SELECT id FROM keep"))

    def __len__(self) -> int:
        return self._con.execute("SELECT count(*) FROM keep").fetchone()[0]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, (set, frozenset, SpilledIds)) and set(self) == set(other)

    __hash__ = None  # type: ignore[assignment]

    def close(self) -> None:
        self._con.close()


def branch_ids(pairs: Iterable[tuple[str, str | None]]) -> set[str] | SpilledIds:
    """The ids from the last pair's id back to the root, each step to the id's parent (a later pair for
    the same id wins; a parent never seen ends the walk, and so does a cycle)."""
    parents: dict[str, str | None] = {}
    leaf = None
    it = iter(pairs)
    for key, parent in it:
        parents[key], leaf = parent, key
        if len(parents) >= SPILL:
            return _spilled(parents, it, leaf)
    out: set[str] = set()
    while leaf is not None and leaf not in out:
        out.add(leaf)
        leaf = parents.get(leaf)
    return out


def _spilled(parents: dict[str, str | None], rest: Iterator[tuple[str, str | None]], leaf: str) -> SpilledIds:
    con = tempdb.connect(WHAT)
    try:
        con.execute("CREATE TABLE parent (id TEXT PRIMARY KEY, parent TEXT) WITHOUT ROWID")
        con.execute("CREATE TABLE keep (id TEXT PRIMARY KEY) WITHOUT ROWID")
        con.execute("BEGIN")
        con.executemany("INSERT OR REPLACE INTO parent VALUES (?, ?)", parents.items())
        parents.clear()
        while batch := list(itertools.islice(rest, BATCH)):
            con.executemany("INSERT OR REPLACE INTO parent VALUES (?, ?)", batch)
            leaf = batch[-1][0]
        key: str | None = leaf
        while key is not None:
            if con.execute("INSERT OR IGNORE INTO keep VALUES (?)", (key,)).rowcount == 0:
                break                                          # a cycle: the id is on the branch already
            row = con.execute("SELECT parent FROM parent WHERE id = ?", (key,)).fetchone()
            key = row[0] if row is not None else None
        con.execute("COMMIT")
    except tempdb.Error as e:
        con.close()
        raise tempdb.failed(WHAT, e) from e
    return SpilledIds(con)
