"""Review of the take-back (histmig/apply/takeback.py): a session or project folder is changed whole
also when the file skipped comes first in its batch, for every batch kind; and what a take-back
leaves (folders, journal records) is counted right by recover, rollback and undo."""
from __future__ import annotations

import os

import pytest

from histmig.apply import apply_plan, fsio
from histmig.core.plan import Delete, Fingerprint, Patch, Plan, WriteFile
from histmig.verbs.undo.run import undo

from test_apply_session_atomic import changes_at_last_check
from test_apply_take_back import NEW, OLD, session_files
from test_move_fixtures import homes
from test_undo_partial_tools import changed, tree


def _patches(h, files, *, in_place: bool) -> Plan:
    ops = [WriteFile(path=str(p), expect=Fingerprint.of(str(p)), patches=(Patch(p.read_bytes().index(OLD), OLD, NEW),),
                     in_place_ok=in_place, session={"tool": "review", "id": "s1"}) for p in files]
    return Plan("review", {}, [str(h.codex)], ops)


@pytest.mark.parametrize("in_place", [False, True], ids=["replace", "inplace"])
def test_a_file_first_in_its_batch_holds_back_the_rest_of_its_session(in_place):
    """All three files of a session in one batch, the first changes at its last check: the other two
    are not written (replace checks every file before the first rename; in place must too)."""
    h = homes()
    files = session_files(h)
    before = tree(h.codex)
    fs, fired = changes_at_last_check(files[0])
    with fsio.using(fs):
        res = apply_plan(_patches(h, files, in_place=in_place), h)
    assert fired and res.exit_code == 3 and res.done == [], res.done
    assert changed(before, tree(h.codex)) == {"sessions/s/f1.jsonl"}
    assert sorted(s.code for s in res.skips) == ["changed", "session-skipped", "session-skipped"]
    assert not [s for s in res.skips if "put back" in s.reason]     # held back, never written


def test_a_delete_first_in_its_batch_holds_back_the_rest_of_its_session():
    """An undo of a convert deletes a session's files in one batch: the first changed during the
    apply, the others stay too (a session is removed whole or not at all)."""
    h = homes()
    files = session_files(h)
    before = tree(h.codex)
    fs = fsio.FS()
    fired = []

    def touch(label):      # the delete batch reads every file before its first unlink: change f1 then
        if label.endswith("f1.jsonl") and not fired:
            fired.append(label)
            st = os.lstat(files[0])
            os.utime(files[0], ns=(st.st_atime_ns, st.st_mtime_ns + 1))
    fs.hooks["before-final-check"] = touch
    ops = [Delete(path=str(p), expect=Fingerprint.of(str(p)), session={"tool": "review", "id": "s1"}) for p in files]
    with fsio.using(fs):
        res = apply_plan(Plan("review", {}, [str(h.codex)], ops), h)
    assert fired and res.exit_code == 3 and res.done == [], res.done
    assert changed(before, tree(h.codex)) == {"sessions/s/f1.jsonl"}
    assert not [s for s in res.skips if "put back" in s.reason]     # held back, never deleted
    assert not list((h.state / "tx" / res.txid / "b").iterdir())     # no backup left for them


def test_a_file_retried_then_skipped_takes_back_its_mate_written_in_the_first_round():
    """One batch: f1 is appended to at its last check (retried in a second round with the new lines),
    f2 is replaced in the first round; in the second round f1 changes (not an append): f2 goes back."""
    h = homes()
    files = session_files(h, 2)
    before = tree(h.codex)
    seen = []

    def race(label):
        if label != str(files[0]):
            return
        seen.append(label)
        if len(seen) == 1:
            with open(files[0], "ab") as fh:
                fh.write(b'{"appended":1}\n')
        elif len(seen) == 2:
            st = os.lstat(files[0])
            os.utime(files[0], ns=(st.st_atime_ns, st.st_mtime_ns + 1))
    fs = fsio.FS()
    fs.hooks["before-final-check"] = race
    with fsio.using(fs):
        res = apply_plan(_patches(h, files, in_place=False), h)
    assert len(seen) == 2 and res.exit_code == 3 and res.done == [], (res.done, res.skips)
    assert changed(before, tree(h.codex)) == {"sessions/s/f1.jsonl"}
    assert undo(h, res.txid).state == "undone" and changed(before, tree(h.codex)) == {"sessions/s/f1.jsonl"}


def _shared_folder_plan(h, files):
    """s1 creates ``new/a`` (making ``new/``), s2 creates ``new/b`` in it, then s1's file changes at its
    last check: s1's create is put back, ``new/`` stays for s2's file."""
    from histmig.core.plan import CreateFile
    new = h.codex / "sessions" / "new"
    s1, s2 = {"tool": "review", "id": "s1"}, {"tool": "review", "id": "s2"}
    ops = [CreateFile(str(new / "a"), b"a\n", session=s1), CreateFile(str(new / "b"), b"b\n", session=s2),
           WriteFile(path=str(files[0]), expect=Fingerprint.of(str(files[0])),
                     patches=(Patch(files[0].read_bytes().index(OLD), OLD, NEW),), session=s1)]
    return Plan("review", {}, [str(h.codex)], ops), new


@pytest.fixture
def one_file_batches(monkeypatch):
    """Every rewrite and every create in a batch of its own."""
    from histmig.apply import batch, creates, engine
    monkeypatch.setattr(batch, "BATCH", 1)
    monkeypatch.setattr(creates, "BATCH", 1)
    monkeypatch.setattr(engine, "_BATCH_SIZE", {**engine._BATCH_SIZE, "create": 1})


def test_a_folder_made_by_a_create_put_back_goes_with_the_undo_of_the_session_that_stays(one_file_batches):
    h = homes()
    files = session_files(h, 1)
    before = tree(h.codex)
    plan, new = _shared_folder_plan(h, files)
    fs, fired = changes_at_last_check(files[0])
    with fsio.using(fs):
        res = apply_plan(plan, h)
    assert fired and res.done == [str(new / "b")] and not (new / "a").exists(), (res.done, res.skips)
    out = undo(h, res.txid)
    assert out.state == "undone", out.skips
    assert changed(before, tree(h.codex)) == {"sessions/s/f1.jsonl"}      # new/ went too


def test_a_folder_made_by_a_create_put_back_goes_when_the_apply_rolls_back(one_file_batches, monkeypatch):
    """The same, then the apply fails after the take-back: its rollback removes ``new/`` too (recover
    reads the journal the same way)."""
    from histmig.apply import takeback
    from histmig.apply.options import ApplyFailedError
    h = homes()
    files = session_files(h, 1)
    before = tree(h.codex)
    plan, new = _shared_folder_plan(h, files)
    real = takeback._account

    def then_fail(*a):
        real(*a)
        raise OSError(5, "Input/output error", str(files[0]))
    monkeypatch.setattr(takeback, "_account", then_fail)
    fs, fired = changes_at_last_check(files[0])
    with fsio.using(fs), pytest.raises(ApplyFailedError):
        apply_plan(plan, h)
    assert fired and changed(before, tree(h.codex)) == {"sessions/s/f1.jsonl"}


def _apply_killed_at(h, plan, k: int, last) -> int:
    """Apply ``plan`` in a child killed (SIGKILL) just before counted operation ``k``, ``last``
    changing at its last check; the child's exit code (3: it finished first)."""
    pid = os.fork()
    if pid == 0:     # pragma: no cover - the child
        try:
            fs = fsio.FS(crash_at=k)
            fs.hooks["before-final-check"] = changes_at_last_check(last)[0].hooks["before-final-check"]
            with fsio.using(fs):
                apply_plan(plan, h)
        finally:
            os._exit(3)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


def test_a_kill_anywhere_in_an_apply_that_takes_back_leaves_recover_an_all_old_home(monkeypatch):
    """One file per batch, the third file of the session changes at its last check, the process is
    killed before each counted operation in turn (the take-back's own included): recover leaves every
    file as it was, its bytes and mtime (the third's mtime aside), and nothing of the journal's."""
    import shutil
    from histmig.apply import batch, recover
    from histmig.apply.journal import check_no_unfinished
    monkeypatch.setattr(batch, "BATCH", 1)
    for k in range(1, 200):
        h = homes()
        for d in (h.codex, h.state):
            shutil.rmtree(d, ignore_errors=True)
        files = session_files(h)
        before = tree(h.codex)
        code = _apply_killed_at(h, _patches(h, files, in_place=False), k, files[2])
        if code == 3:
            assert k > 20, k
            break
        assert code == -9, (k, code)
        recover(h)
        check_no_unfinished(h)
        after = tree(h.codex)
        assert changed(before, after) <= {"sessions/s/f3.jsonl"}, k
        assert {n: v[0] for n, v in after.items()} == {n: v[0] for n, v in before.items()}, k
        assert all(os.lstat(p).st_nlink == 1 for p in files), k
    else:
        raise AssertionError("the apply never finished")


@pytest.mark.parametrize("lost_mark", [False, True], ids=["marked", "mark-lost"])
def test_a_second_undo_after_a_partial_one_finishes_an_apply_that_took_a_session_back(lost_mark, monkeypatch):
    """s2 is taken back during the apply; the first undo reverts s1 and keeps s3 (changed since);
    once s3 is as the apply left it again, a second undo finishes: every file as before, s2's never
    written twice (also when the first undo's marks were lost: histmig/verbs/undo/coverage.py)."""
    from histmig.apply import batch
    from test_undo_partial_tools import drop_mark
    monkeypatch.setattr(batch, "BATCH", 1)
    h = homes()
    files = session_files(h, 5)
    plan = _patches(h, files, in_place=False)
    for op, sid in zip(plan.operations, ["s1", "s1", "s2", "s2", "s3"]):
        object.__setattr__(op, "session", {"tool": "review", "id": sid})
    before = tree(h.codex)
    fs, fired = changes_at_last_check(files[3])
    with fsio.using(fs):
        res = apply_plan(plan, h)
    assert fired and res.done == [str(files[0]), str(files[1]), str(files[4])], res.done
    left = files[4].read_bytes(), os.lstat(files[4]).st_mtime_ns
    files[4].write_bytes(left[0].replace(b'"n":5', b'"n":9'))
    first = undo(h, res.txid)
    assert first.state == "partly-undone" and sorted(first.done) == [str(files[0]), str(files[1])], first
    files[4].write_bytes(left[0])
    os.utime(files[4], ns=(left[1], left[1]))
    if lost_mark:
        drop_mark(h.state / "tx" / res.txid)
    second = undo(h, res.txid)
    assert second.state == "undone" and second.done == [str(files[4])], (second.done, second.skips)
    assert changed(before, tree(h.codex)) == {"sessions/s/f4.jsonl"}
