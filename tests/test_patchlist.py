"""A PatchList (histmig/core/patches.py) is the tuple of patches it replaced: same items, same
answers, same plan bytes; and it holds a patch per line in a few bytes, not ~90."""
from __future__ import annotations

import pickle
import tracemalloc

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from histmig.core.diagnostics import RefusedError
from histmig.core.plan import Fingerprint, Patch, PatchList, WriteFile, op_from_dict

VALUES = st.sampled_from([b"", b"a", b"/old/p", b"/new/project", b"\x00\xff"])


@st.composite
def patch_tuples(draw) -> tuple[Patch, ...]:
    """Sorted, apart patches (a plan's), with recurring values."""
    out, at = [], 0
    for _ in range(draw(st.integers(0, 40))):
        at += draw(st.integers(0, 50))
        old, new = draw(VALUES), draw(VALUES)
        out.append(Patch(at, old, new))
        at += len(old)
    return tuple(out)


@settings(max_examples=200, deadline=None)
@given(patch_tuples(), st.integers(-45, 45), st.integers(-45, 45))
def test_a_patch_list_reads_as_its_tuple(patches, i, j):
    pl = PatchList(patches)
    assert len(pl) == len(patches) and bool(pl) == bool(patches)
    assert pl == patches and patches == pl and pl == list(patches) and pl == PatchList(list(patches))
    assert tuple(pl) == patches and list(pl.rows()) == [(p.offset, p.old, p.new) for p in patches]
    assert pl[i:j] == list(patches[i:j])
    if -len(patches) <= i < len(patches):
        assert pl[i] == patches[i]
    assert pl.same_length() == all(len(p.old) == len(p.new) for p in patches)
    assert pl.delta() == sum(p.delta for p in patches)
    assert list(pl.deltas()) == [(p.offset, p.delta) for p in patches if p.delta]
    assert pl.ordered()
    for k, p in enumerate(patches):
        assert pl.old_end(k) == p.offset + len(p.old)
        assert pl.first_at(p.offset) == next(n for n, q in enumerate(patches) if q.offset >= p.offset)
    assert pickle.loads(pickle.dumps(pl)) == patches
    both = pl + patches
    assert both == patches + patches and pl == patches          # ``+`` makes a new list


def test_overlapping_or_unsorted_patches_are_not_ordered():
    assert not PatchList([Patch(5, b"abc", b"x"), Patch(6, b"", b"y")]).ordered()
    assert not PatchList([Patch(9, b"", b""), Patch(3, b"", b"")]).ordered()
    assert PatchList([Patch(5, b"abc", b"x"), Patch(8, b"", b"y")]).ordered()


@settings(max_examples=50, deadline=None)
@given(patch_tuples())
def test_a_plan_holding_a_patch_list_has_the_tuples_bytes(patches):
    fp = Fingerprint(dev=1, ino=2, size=3, mtime_ns=4, sha256="0" * 64)
    op = WriteFile(path="/h/f.jsonl", expect=fp, patches=patches)
    assert isinstance(op.patches, PatchList)
    d = op.to_dict()
    assert d["patches"] == [p.to_dict() for p in patches]       # what a tuple of Patch wrote
    again = op_from_dict(orjson.loads(orjson.dumps(d)))
    assert again == op and hash(again) == hash(op)


@settings(max_examples=100, deadline=None)
@given(patch_tuples(), patch_tuples())
def test_a_spilled_list_lets_go_of_its_pair_lookup_and_still_grows_as_a_new_one(first, more):
    """Every WriteFile spills what it is given: its list keeps no dict of pairs (232 bytes for one),
    and one appended to afterwards (or unpickled) is the list built in one go."""
    pl = PatchList(first).spill()
    assert pl._ids is None and pl == first
    pl.extend(more)
    pl.extend(PatchList(more).spill())
    assert pl == first + more + more and len(pl.pairs) == len(set(pl.pairs))
    again = pickle.loads(pickle.dumps(PatchList(first).spill()))
    again.extend(more)
    assert again == first + more and len(again.pairs) == len(set(again.pairs))


def test_a_patch_per_line_costs_a_few_bytes():
    """A move of a 100,000-line transcript: one patch per line, the same two values."""
    old, new = b'"/tmp/proj"', b'"/tmp/proj-moved"'
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        pl = PatchList()
        for k in range(100_000):
            pl.extend([Patch(1_000_000 + 400 * k, old, new)])
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(pl) == 100_000
    assert held < 100_000 * 16, held          # a tuple of Patch objects held ~90 bytes a line


@pytest.mark.parametrize("offset", [2 ** 63, -(2 ** 63) - 1, 1.5, "7"])
def test_a_plan_files_impossible_offset_is_refused(offset):
    """A hand-edited plan: refused by name, never a traceback."""
    fp = Fingerprint(dev=1, ino=2, size=3, mtime_ns=4, sha256="0" * 64).to_dict()
    d = {"kind": "write", "path": "/h/f.jsonl", "expect": fp,
         "patches": [{"offset": offset, "old": "", "new": "eA=="}]}
    with pytest.raises(RefusedError, match="invalid plan"):
        op_from_dict(d)
