"""doctor_history's preload: a thread's rows read from one whole-table scan are exactly, and in the
same order, what its ``WHERE thread_id = ?`` query returns; where that cannot be made sure of (another
collation, no TEXT affinity, too many rows) the per-thread queries stay."""
from __future__ import annotations

import random
import sqlite3

import pytest

from histmig.tools.codex import doctor_history
from histmig.tools.codex.doctor_history import Histories

PROJECTION = ("CREATE TABLE thread_history_projection_state (thread_id TEXT PRIMARY KEY, "
              "next_rollout_byte_offset INTEGER, next_rollout_ordinal INTEGER)")
TURNS = ("CREATE TABLE thread_turns (thread_id {type} NOT NULL, turn_id TEXT NOT NULL, rollout_ordinal INTEGER, "
         "status TEXT, rollout_byte_offset INTEGER, rollout_end_ordinal INTEGER, rollout_end_byte_offset INTEGER, "
         "PRIMARY KEY (thread_id {collate}, turn_id))")
IDS = ["t-b", "T-B", "t-a", "10", "t-c\u00e9", "t-\U0001f600"]


def _db(path, *, type_="TEXT", collate="", values=None):
    con = sqlite3.connect(path)
    con.execute(TURNS.format(type=type_, collate=collate))
    con.execute(PROJECTION)
    rng = random.Random(5)
    rows = [(t, f"turn-{rng.randrange(100):02d}-{i}", i, "done", i * 10, i + 1, i * 10 + 9)
            for t in (values or IDS) for i in range(rng.randrange(1, 6))]
    rng.shuffle(rows)                       # inserted out of key order: the order must come from the index
    con.executemany("INSERT INTO thread_turns VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
    con.executemany("INSERT INTO thread_history_projection_state VALUES (?, ?, ?)",
                    [(t, 99, 9) for t in (values or IDS)])
    con.commit()
    con.close()
    return path


def _both(hist, ids):
    plain, pre = Histories([hist]), Histories([hist])
    pre.preload(len(ids))
    try:
        return [plain.needs_of(t) for t in ids], [pre.needs_of(t) for t in ids], pre._pre
    finally:
        plain.close()
        pre.close()


def test_preload_gives_each_threads_rows_in_query_order(tmp_path):
    hist = _db(tmp_path / "h.sqlite")
    ids = IDS + ["t-missing", "t-A"]
    plain, pre, loaded = _both(hist, ids)
    assert {table for _, table in loaded} == {"thread_turns", "thread_history_projection_state"}
    assert pre == plain
    assert [n is None for n in pre] == [False] * len(IDS) + [True, True]


@pytest.mark.parametrize("kind", ["nocase", "numeric", "too-many"])
def test_preload_declined_where_the_query_could_differ(tmp_path, kind, monkeypatch):
    if kind == "too-many":
        monkeypatch.setattr(doctor_history, "PRELOAD_ROWS", 3)
    hist = _db(tmp_path / "h.sqlite", collate="COLLATE NOCASE" if kind == "nocase" else "",
               type_="NUMERIC" if kind == "numeric" else "TEXT", values=IDS + ["010"])
    ids = IDS + ["010", "t-A"]
    plain, pre, loaded = _both(hist, ids)
    assert "thread_turns" not in {table for _, table in loaded}
    assert pre == plain
