"""The spool (histmig/core/spool.py): a long column of numbers kept in an unlinked temporary file is
the same sequence it was in memory, for every reader of a PatchList and a shift's edits; a forked
worker or a full temporary folder keeps it in memory; a move of a long transcript writes the same
bytes with its patches spilled, and undo puts them back."""
from __future__ import annotations

import os
import pickle
import signal
import time
from array import array
from bisect import bisect_left

import pytest
from hypothesis import given, settings, strategies as st

from histmig.core import spool
from histmig.core.patches import Patch, PatchList, ShiftEdits
from histmig.core.plan import SqlShift, WriteFile, Fingerprint
from histmig.core.spool import SPILL_MIN, Column

from test_move_fixtures import claude_records, homes, jl, sid, tool_trees


def _spilled(values: list[int], typecode: str = "q") -> Column:
    col = Column(typecode, values).spill()
    assert col.spilled == (len(values) >= SPILL_MIN)
    return col


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=2 ** 40), min_size=SPILL_MIN, max_size=3 * SPILL_MIN),
       st.data())
def test_a_spilled_column_reads_as_the_numbers_it_held(values, data):
    values.sort()
    col = _spilled(values)
    n = len(values)
    assert len(col) == n and list(col) == values and col.array().tolist() == values
    k = data.draw(st.integers(min_value=-n, max_value=n - 1))
    assert col[k] == values[k]
    i, j = data.draw(st.integers(0, n)), data.draw(st.integers(0, n))
    assert col[i:j].tolist() == values[i:j]
    probe = data.draw(st.integers(min_value=0, max_value=2 ** 40))
    assert bisect_left(col, probe) == bisect_left(values, probe)
    assert col == Column("q", values) and col == values and pickle.loads(pickle.dumps(col)) == col
    with pytest.raises(IndexError):
        col[n]
    col.append(7)                          # read back into memory, then grown
    assert not col.spilled and list(col) == values + [7]


def test_a_short_column_stays_in_memory():
    assert not Column("q", range(SPILL_MIN - 1)).spill().spilled
    short = array("q", range(SPILL_MIN - 1))
    assert spool.spill(short) is short and spool.in_memory(short) is short       # a plain array, no Column
    assert not isinstance(PatchList(_long_patches(3)).spill().offsets, Column)


def _long_patches(n: int) -> list[Patch]:
    return [Patch(100 * i + 7, b'"/old/app"', b'"/new/app2"' if i % 3 else b'"/new/x"') for i in range(n)]


def test_a_spilled_patch_list_answers_as_one_in_memory():
    patches = _long_patches(3 * SPILL_MIN + 5)
    mem, out = PatchList(patches), PatchList(patches).spill()
    assert isinstance(out.offsets, Column) and isinstance(out.which, Column) and not isinstance(mem.offsets, Column)
    assert out == mem and list(out) == patches and len(out) == len(patches)
    assert list(out.rows(10, 2000)) == list(mem.rows(10, 2000)) and list(out.rows()) == list(mem.rows())
    for at in (0, 7, 8, 100 * SPILL_MIN, 10 ** 9):
        assert out.first_at(at) == mem.first_at(at) and out.first_at(at, 50) == mem.first_at(at, 50)
    assert [out.old_end(k) for k in (0, 1, len(out) - 1)] == [mem.old_end(k) for k in (0, 1, len(mem) - 1)]
    assert out.ordered() and out.same_length() == mem.same_length() and out.delta() == mem.delta()
    assert list(out.deltas()) == list(mem.deltas()) and out[5] == mem[5] and out[3:9] == mem[3:9]
    assert pickle.loads(pickle.dumps(out)) == mem


def test_an_operation_spills_its_long_patches_and_shift_edits_and_writes_the_same_plan():
    patches = _long_patches(2 * SPILL_MIN)
    fp = Fingerprint(size=10 ** 6, sha256="0" * 64)
    op = WriteFile(path="/x/a.jsonl", expect=fp, patches=patches)
    assert isinstance(op.patches.offsets, Column)
    assert op.to_dict() == WriteFile(path="/x/a.jsonl", expect=fp, patches=patches[:10]).to_dict() | {
        "patches": [p.to_dict() for p in patches]}
    edits = [(100 * i, 3) for i in range(SPILL_MIN)]
    shift = SqlShift(db="/x.sqlite", table="t", where={"k": 1}, order=("i",), columns=("a",), edits=edits,
                     expect={"count": 1, "digest": "0" * 64})
    assert isinstance(shift.edits._flat, Column) and shift.edits == edits and shift.edits[-1] == edits[-1]
    assert ShiftEdits.from_b64(shift.edits.b64()) == edits
    assert pickle.loads(pickle.dumps(shift.edits)) == edits == ShiftEdits(edits)


def test_a_forked_worker_keeps_its_columns_in_memory():
    Column("q", range(SPILL_MIN)).spill()          # the parent's spool exists
    pid = os.fork()
    if pid == 0:                                   # a worker never writes the parent's file
        code = 0 if not Column("q", range(SPILL_MIN)).spill().spilled else 1
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_a_spool_that_cannot_be_written_keeps_the_column_in_memory(monkeypatch):
    def full(*_a):
        raise OSError(28, "No space left on device")
    fresh = spool._Spool()
    monkeypatch.setattr(spool, "SPOOL", fresh)
    monkeypatch.setattr(spool.os, "pwrite", full)
    col = Column("q", range(SPILL_MIN)).spill()
    assert not col.spilled and list(col) == list(range(SPILL_MIN))


def test_a_move_of_a_long_transcript_with_spilled_patches_writes_each_cwd_and_undo_restores(tmp_path):
    from histmig.cli import cli
    from histmig.cli.common import run_guarded
    from histmig.core.paths import claude_slug
    from histmig.verbs.move import plan_move
    h = homes()
    old, new = str(tmp_path / "W/app"), str(tmp_path / "W/app2")
    s = sid(1)
    records = claude_records(s, old) * (SPILL_MIN // 3)        # every line but the first holds the cwd
    proj = h.claude / "projects" / claude_slug(old)
    proj.mkdir(parents=True)
    (proj / f"{s}.jsonl").write_bytes(jl(records))
    before = tool_trees(h)
    [write] = [op for op in plan_move(h, old, new).operations if isinstance(op, WriteFile)]
    assert len(write.patches) >= SPILL_MIN and isinstance(write.patches.offsets, Column)
    assert run_guarded(cli, ["move", old, new, "--apply"]) == 0
    moved = h.claude / "projects" / claude_slug(new) / f"{s}.jsonl"
    assert moved.read_bytes() == jl([dict(r, cwd=new) if r.get("cwd") == old else r for r in records])
    assert run_guarded(cli, ["undo"]) == 0
    assert tool_trees(h) == before


def test_the_spool_is_made_in_the_state_dir_the_cli_names_else_in_the_temporary_folder(tmp_path, monkeypatch):
    import tempfile
    made, real = [], tempfile.TemporaryFile

    def recording(*a, dir=None, **k):
        made.append(dir)
        return real(*a, dir=dir, **k)
    monkeypatch.setattr(tempfile, "TemporaryFile", recording)
    for state, want in ((tmp_path, [str(tmp_path)]), (tmp_path / "not-made-yet", [str(tmp_path / "not-made-yet"), None])):
        fresh = spool._Spool()
        monkeypatch.setattr(spool, "SPOOL", fresh)
        fresh.prefer(state)
        made.clear()
        col = Column("q", range(SPILL_MIN)).spill()
        assert col.spilled and made == want and list(col) == list(range(SPILL_MIN))
        assert not list(tmp_path.glob("histmig-spool-*"))       # never a name on disk


def test_a_child_forked_while_another_thread_holds_the_spool_lock_still_spills_its_own(monkeypatch):
    fresh = spool._Spool()
    monkeypatch.setattr(spool, "SPOOL", fresh)
    fresh.lock.acquire()                           # another thread's put() in progress at the fork
    try:
        pid = os.fork()
        if pid == 0:                               # no spool yet: the child makes its own, unblocked
            os._exit(0 if Column("q", range(SPILL_MIN)).spill().spilled else 1)
        status = None
        for _ in range(200):                       # a child stuck on the inherited lock: killed, failed
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            time.sleep(0.05)
        else:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pytest.fail("the forked child blocked on the spool lock it inherited")
    finally:
        fresh.lock.release()
    assert os.waitstatus_to_exitcode(status) == 0
