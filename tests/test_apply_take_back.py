"""A session is changed completely or not at all across batches too (histmig/apply/takeback.py): when a
file of a session or project folder is skipped while the apply runs, what earlier batches wrote of it
is put back before the apply goes on, journaled ``taken-back``, and counted as not done by recover,
undo and ``log`` (docs/safety.md, "What the write path guarantees")."""
from __future__ import annotations

import os

import pytest

from histmig.apply import apply_plan, batch, engine, fsio, recover
from histmig.apply.journal import TAKEN_BACK, list_transactions, read_records
from histmig.apply.options import ApplyOptions
from histmig.core.plan import Fingerprint, Patch, Plan, WriteFile
from histmig.verbs.move import plan_move
from histmig.verbs.undo.run import undo

from test_apply_session_atomic import changes_at_last_check
from test_move_fixtures import claude_session, homes
from test_undo_partial_tools import changed, tree

OLD, NEW = b'"provider":"openai"', b'"provider":"mine!!"'


@pytest.fixture
def one_file_batches(monkeypatch):
    """Every rewrite in a batch of its own, so a session's files span batches."""
    monkeypatch.setattr(batch, "BATCH", 1)


def session_files(h, n: int = 3):
    """``n`` one-line files of one folder, each naming the provider OLD, with known mtimes."""
    folder = h.codex / "sessions" / "s"
    folder.mkdir(parents=True)
    files = []
    for i in range(1, n + 1):
        p = folder / f"f{i}.jsonl"
        p.write_bytes(b'{"n":%d,' % i + OLD + b'}\n')
        os.utime(p, ns=(1_700_000_000_000_000_000 + i, 1_700_000_000_000_000_000 + i))
        files.append(p)
    return files


def _plan(h, files, session="s1") -> Plan:
    ops = [WriteFile(path=str(p), expect=Fingerprint.of(str(p)), patches=(Patch(p.read_bytes().index(OLD), OLD, NEW),),
                     session={"tool": "review", "id": session}) for p in files]
    return Plan("review", {}, [str(h.codex)], ops)


def test_files_written_in_earlier_batches_are_put_back_when_a_later_one_changes(one_file_batches):
    h = homes()
    files = session_files(h)
    before = tree(h.codex)
    fs, fired = changes_at_last_check(files[2])
    with fsio.using(fs):
        res = apply_plan(_plan(h, files), h)
    assert fired and res.exit_code == 3 and res.done == []
    after = tree(h.codex)
    assert changed(before, after) == {"sessions/s/f3.jsonl"}          # only the file that changed by itself
    assert after["sessions/s/f3.jsonl"][0] == before["sessions/s/f3.jsonl"][0]
    assert sorted(s.code for s in res.skips) == ["changed", "session-skipped", "session-skipped"]
    assert all("put back" in s.reason for s in res.skips if s.code == "session-skipped")
    recs = read_records(h.state / "tx" / res.txid)
    assert sorted(r["n"] for r in recs if r["kind"] == TAKEN_BACK) == sorted(
        r["n"] for r in recs if r["kind"] == "done")
    info = next(t for t in list_transactions(h.state) if t.txid == res.txid)
    assert info.state == "committed" and info.changes == 0
    assert not list((h.state / "tx" / res.txid / "b").iterdir())     # the backups went back into place


def test_an_undo_of_such_an_apply_has_nothing_to_revert(one_file_batches):
    h = homes()
    files = session_files(h)
    fs, _ = changes_at_last_check(files[2])
    with fsio.using(fs):
        res = apply_plan(_plan(h, files), h)
    before = tree(h.codex)
    out = undo(h, res.txid)
    assert out.state == "undone" and not out.done and not out.skips
    assert tree(h.codex) == before


def test_other_sessions_of_the_apply_stay_written(one_file_batches):
    h = homes()
    files = session_files(h, 4)
    plan = _plan(h, files[:2], "s1")
    plan.operations += _plan(h, files[2:], "s2").operations
    fs, _ = changes_at_last_check(files[1])
    with fsio.using(fs):
        res = apply_plan(plan, h)
    assert [NEW in p.read_bytes() for p in files] == [False, False, True, True]
    assert res.done == [str(p) for p in files[2:]]
    out = undo(h, res.txid)
    assert out.state == "undone" and [NEW in p.read_bytes() for p in files] == [False] * 4


@pytest.fixture
def one_file_patches(monkeypatch):
    monkeypatch.setattr(engine, "_BATCH_SIZE", {**engine._BATCH_SIZE, "inplace": 1})


@pytest.mark.parametrize("new_name", ["B", "Bnew"])   # same length: patched in place; else rewritten
def test_a_claude_project_folder_goes_back_whole(tmp_path, one_file_batches, one_file_patches, new_name):
    """A moved project folder of three sessions: the third file changes at its last check; the first
    two, already written, go back, and the folder is not renamed. A re-run then moves it all."""
    h = homes()
    old, new = str(tmp_path / "A"), str(tmp_path / new_name)
    os.makedirs(new)
    files = [claude_session(h, old, i) for i in range(1, 4)]
    before = tree(h.claude)
    fs, fired = changes_at_last_check(files[2])
    with fsio.using(fs):
        res = apply_plan(plan_move(h, old, new, tools=["claude-code"]), h)
    assert fired and res.exit_code == 3
    after = tree(h.claude)
    assert changed(before, after) == {str(files[2].relative_to(h.claude))}, res.skips
    again = apply_plan(plan_move(h, old, new, tools=["claude-code"]), h)
    assert again.exit_code == 0, again.skips
    assert not files[0].parent.exists() and len(list(h.claude.glob(f"projects/*{new_name}/*.jsonl"))) == 3
    assert undo(h, again.txid).state == "undone"
    assert {k: v[0] for k, v in tree(h.claude).items()} == {k: v[0] for k, v in after.items()}


def test_a_file_changed_after_it_was_written_is_left_and_named(one_file_batches):
    """Not what the apply wrote any more (and not only appended to): left as it is, a warning
    ``partly-applied`` names it; undo reverts it later like any written file."""
    h = homes()
    files = session_files(h)
    fs, fired = _first_edited_then_third_changes(files, lambda: files[0].write_bytes(
        files[0].read_bytes().replace(b'"n":1', b'"n":7')))
    with fsio.using(fs):
        res = apply_plan(_plan(h, files), h)
    assert fired and [w.code for w in res.warnings] == ["partly-applied"]
    assert res.warnings[0].path == str(files[0]) and res.done == [str(files[0])]
    assert b'"n":7' in files[0].read_bytes() and NEW in files[0].read_bytes()
    assert NEW not in files[1].read_bytes()


def _first_edited_then_third_changes(files, edit):
    """An fs whose hook, at the third file's last check (the first one is written by then), runs
    ``edit`` on the first file and changes the third one's mtime (so it is skipped)."""
    fired = []

    def race(label):
        if label == str(files[2]) and not fired:
            fired.append(label)
            edit()
            st = os.lstat(files[2])
            os.utime(files[2], ns=(st.st_atime_ns, st.st_mtime_ns + 1))
    fs = fsio.FS()
    fs.hooks["before-final-check"] = race
    return fs, fired


def test_an_append_after_the_write_is_kept_when_the_file_goes_back(one_file_batches):
    h = homes()
    files = session_files(h)
    original = files[0].read_bytes()

    def append():
        with open(files[0], "ab") as fh:
            fh.write(b'{"appended":1}\n')
    fs, _ = _first_edited_then_third_changes(files, append)
    with fsio.using(fs):
        res = apply_plan(_plan(h, files), h)
    assert res.done == [] and files[0].read_bytes() == original + b'{"appended":1}\n'


def test_a_kill_during_the_take_back_is_rolled_back_by_recover(one_file_batches, monkeypatch):
    """The journal as a kill leaves it in the middle of putting files back (no ``taken-back`` record
    yet, the transaction unfinished): recover puts every file back, once."""
    h = homes()
    files = session_files(h)
    before = tree(h.codex)

    class Killed(BaseException):
        pass

    def kill(*_a, **_k):
        raise Killed
    from histmig.apply import takeback
    real = takeback.rollback.take_back

    def half(fs, folder, ns):
        real(fs, folder, {max(ns)})       # one of the two went back, then the process died
        kill()
    monkeypatch.setattr(takeback.rollback, "take_back", half)

    def no_rollback(fs, journal, err, where):   # a kill runs no rollback
        raise err
    monkeypatch.setattr(engine, "_abort", no_rollback)
    fs, _ = changes_at_last_check(files[2])
    with fsio.using(fs), pytest.raises(Killed):
        apply_plan(_plan(h, files), h)
    assert not [r for r in read_records(h.state / "tx" / list_transactions(h.state)[-1].txid)
                if r["kind"] == TAKEN_BACK]
    assert list_transactions(h.state)[-1].state == "applying"
    recover(h)
    assert list_transactions(h.state)[-1].state == "rolled-back"
    after = tree(h.codex)
    assert {k: v[0] for k, v in after.items()} == {k: v[0] for k, v in before.items()}
    assert changed(before, after) <= {"sessions/s/f3.jsonl"}


def test_the_callbacks_name_a_file_put_back_after_it_was_committed(one_file_batches):
    """``-v`` prints ``committed <path>`` per file (tests/test_crash.py reads it); a file put back
    later is named again by ``on_take_back`` (``taken back <path>``, docs/safety.md)."""
    h = homes()
    files = session_files(h)
    events: list[tuple[str, str]] = []
    opts = ApplyOptions(on_commit=lambda p: events.append(("committed", p)),
                        on_take_back=lambda p: events.append(("taken back", p)))
    fs, fired = changes_at_last_check(files[2])
    with fsio.using(fs):
        apply_plan(_plan(h, files), h, options=opts)
    assert fired
    first, second = str(files[0]), str(files[1])
    assert events[:2] == [("committed", first), ("committed", second)]
    assert sorted(events[2:]) == [("taken back", first), ("taken back", second)]    # in rollback order
