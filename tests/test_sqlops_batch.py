"""The batched expectation check (a few ``IN`` queries) reports exactly what the per-row check
reports, on random tables: missing rows, duplicated keys, NULLs, changed values."""
from __future__ import annotations

import sqlite3

from hypothesis import given, settings
from hypothesis import strategies as st

from histmig.apply.sqlops import _mismatch, _mismatches
from histmig.core.plan import SqlUpdate

KEYS = st.tuples(st.sampled_from(["t1", "t2", "t3", None]), st.integers(0, 3))
ROWS = st.lists(st.tuples(KEYS, st.sampled_from(["a", "b", None])), max_size=12)
OPS = st.lists(st.tuples(KEYS, st.sampled_from(["a", "b", None]), st.booleans()), max_size=12)


@settings(max_examples=200, deadline=None)
@given(rows=ROWS, ops=OPS)
def test_batched_check_reports_what_the_per_row_check_reports(rows, ops):
    con = sqlite3.connect(":memory:")
    con.execute('CREATE TABLE "turns" (thread_id TEXT, n INTEGER, v TEXT)')
    con.execute('CREATE TABLE "threads" (id TEXT, v TEXT)')
    con.executemany('INSERT INTO "turns" VALUES (?, ?, ?)', [(k[0], k[1], v) for k, v in rows])
    con.executemany('INSERT INTO "threads" VALUES (?, ?)', [(k[0], v) for k, v in rows])
    sql_ops = []
    for (tid, n), v, two_keys in ops:
        if two_keys:
            sql_ops.append(SqlUpdate(db=":memory:", table="turns", key={"thread_id": tid, "n": n},
                                     set={"v": "new"}, expect={"v": v}))
        else:
            sql_ops.append(SqlUpdate(db=":memory:", table="threads", key={"id": tid}, set={"v": "new"},
                                     expect={"v": v}))
    slow = [m for op in sql_ops if (m := _mismatch(con, op))]
    assert sorted(_mismatches(con, sql_ops)) == sorted(slow)
