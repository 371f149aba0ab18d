"""ShiftEdits (histmig/core/patches.py): a shift's edits as one column of ints, the same sequence of
``(offset, delta)`` pairs a tuple held, and what a move's plan and journal hold per edited line."""
from __future__ import annotations

import pickle
import tracemalloc

import orjson
import pytest
from hypothesis import given, strategies as st

from histmig.core.plan import ShiftEdits, SqlShift, op_from_dict
from histmig.core.diagnostics import RefusedError

ints = st.integers(min_value=-(2 ** 63), max_value=2 ** 63 - 1)
edit_lists = st.lists(st.tuples(ints, ints), max_size=40)


@given(edit_lists)
def test_it_is_the_tuple_of_pairs_it_was_made_from(edits):
    e = ShiftEdits(edits)
    assert e == tuple(edits) and e == list(edits) and tuple(e) == tuple(edits) and len(e) == len(edits)
    assert e == ShiftEdits(tuple(edits)) and hash(e) == hash(tuple(edits))
    assert [e[i] for i in range(len(e))] == list(edits)
    assert pickle.loads(pickle.dumps(e)) == e
    assert sorted(e) == sorted(edits)


@given(edit_lists)
def test_its_journal_text_reads_back_as_the_same_edits(edits):
    e = ShiftEdits(edits)
    text = e.b64()
    assert ShiftEdits.from_b64(text) == e and orjson.loads(orjson.dumps({"e": text}))["e"] == text
    assert len(text) <= 4 * ((16 * len(edits) + 2) // 3)        # 16 bytes an edit, base64


def test_a_journal_row_of_either_form_gives_the_edits():
    from histmig.apply.sqlops import journaled_edits
    edits = [(5, 3), (90, -2), (2 ** 40, 7)]
    assert journaled_edits({"edits": [list(x) for x in edits]}) == edits        # a journal before edits_b64
    assert journaled_edits({"edits_b64": ShiftEdits(edits).b64()}) == edits
    for bad in ("not base64!", "AAAA"):                                         # (4 bytes: not 16 an edit)
        with pytest.raises(ValueError):
            journaled_edits({"edits_b64": bad})


def test_a_plan_file_shift_with_other_than_integer_pairs_is_refused():
    base = {"kind": "sql-shift", "db": "/x.sqlite", "table": "t", "where": {"k": 1}, "order": ["i"],
            "columns": ["a"], "expect": {"count": 1, "digest": "0" * 64}}
    assert op_from_dict({**base, "edits": [[1, 2]]}).edits == ((1, 2),)
    for bad in ([[1.5, 2]], [["1", 2]], [[1, 2, 3]], [[2 ** 63, 1]]):
        with pytest.raises(RefusedError):
            op_from_dict({**base, "edits": bad})
    with pytest.raises(TypeError):
        ShiftEdits([(1.5, 2)])


def test_an_edit_costs_16_bytes_not_a_pair_object():
    """A move edits every line holding the folder's path: a Codex thread's offset rows move by one
    edit per line, and the plan holds them until the commit (docs/bench.md, "Memory and line count")."""
    edits = [(i * 4096 + 1000, 7) for i in range(20_000)]
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        op = SqlShift(db="/x.sqlite", table="thread_turns", where={"thread_id": "t"}, order=("turn_id",),
                      columns=("rollout_byte_offset",), edits=edits, expect={"count": 1, "digest": "0" * 64})
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert op.edits == edits
    assert held < 20 * len(edits)        # 16 bytes an edit and the array's slack; a tuple of pairs: 64


@given(st.lists(st.tuples(st.integers(0, 10 ** 9), st.integers(-500, 500)), max_size=60,
                unique_by=lambda e: e[0]), st.lists(st.integers(0, 10 ** 9 + 1000), max_size=30),
       st.integers(0, 10 ** 9), st.booleans())
def test_the_column_forms_of_shift_inverse_and_needed_equal_the_pair_forms(edits, offsets, top, single):
    """A planner's edits (sorted, one per offset) go through the array forms; the pair forms are the
    reference (tests/test_sql_shift.py checks those against a row-by-row shift)."""
    from histmig.core.shift import inverse_edits, needed, shifter, sorted_edits
    pairs = sorted(edits)
    col = sorted_edits(edits)
    assert col == [(a, d) for a, d in pairs if d]
    assert [shifter(col)(x) for x in offsets] == [shifter(pairs)(x) for x in offsets]
    assert inverse_edits(col) == inverse_edits(pairs)
    assert needed(col, top, single) == needed([(a, d) for a, d in pairs if d], top, single)
