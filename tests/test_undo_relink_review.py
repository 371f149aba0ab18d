"""Review of the undo inode rename (histmig/apply/batch.py "Putting an inode back"): scenarios the
first tests did not cover."""
from __future__ import annotations

import os
import shutil
import time

import orjson
import pytest

from histmig import api
from histmig.apply import apply_plan, check_no_unfinished, fsio, recover
from histmig.apply.journal import list_transactions
from histmig.core.plan import Fingerprint, Patch, Plan, WriteFile
from histmig.tools import resolve_homes
from histmig.verbs.undo.run import undo

from test_undo_relink import _crash_after_first_rename
from test_undo_settled import SECOND, edit_journal, stat_later

HOUR = 3600 * 10**9
OLD, NEW = b'"provider":"openai"', b'"provider":"mine!!"'


def _records(folder) -> list[dict]:
    return [orjson.loads(line) for line in (folder / "journal.jsonl").read_bytes().splitlines()]


def _two_file_session():
    """One session of two files (its unit: both), rewritten by one apply; the originals an hour old."""
    h = resolve_homes()
    folder = h.codex / "sessions" / "s"
    folder.mkdir(parents=True)
    old = time.time_ns() - HOUR
    paths, originals = [], {}
    for i in (1, 2):
        p = folder / f"f{i}.jsonl"
        data = b'{"n":%d,' % i + OLD + b'}\n'
        p.write_bytes(data)
        os.utime(p, ns=(old, old))
        paths.append(p)
        originals[p] = data
    ops = []
    for p in paths:
        at = originals[p].index(OLD)
        ops.append(WriteFile(path=str(p), expect=Fingerprint.of(str(p)), patches=(Patch(at, OLD, NEW),),
                             session={"tool": "review", "id": "s1"}))
    res = apply_plan(Plan("review", {}, [str(h.codex)], ops), h)
    assert res.exit_code == 0, res.skips
    return h, paths, originals, h.state / "tx" / res.txid


@pytest.mark.parametrize("settled", [False, True], ids=["temps", "inodes-put-back"])
def test_a_session_half_undone_after_a_rename_can_be_finished_by_a_second_undo(settled, monkeypatch):
    """The second file of a session changes during the undo's apply (skipped), after the first was
    put back by renaming the apply's backup: the undo takes the first file back too (a session is
    changed whole or not at all, histmig/apply/takeback.py), which gives the backup its name again;
    once the second file is left alone, a second undo must finish the session (not report the
    renamed backup missing). One file per batch: in one batch the first file would wait with the
    second (apply/batch.py checks every file before the first rename)."""
    from histmig.apply import batch
    monkeypatch.setattr(batch, "BATCH", 1)
    h, (f1, f2), originals, folder = _two_file_session()
    if settled:
        stat_later(folder, SECOND)
    else:
        edit_journal(folder, lambda r: None if r["kind"] == "settled" else r)
    fs = fsio.FS()
    fired = []

    def touch_second(label):
        if label == str(f2) and not fired:
            fired.append(label)
            st = os.lstat(f2)
            os.utime(f2, ns=(st.st_atime_ns, st.st_mtime_ns + 1))   # changed: skipped by this undo
    fs.hooks["before-final-check"] = touch_second
    with fsio.using(fs):
        out = undo(h)
    assert fired and out.state == "partly-undone", (out.state, out.skips)
    assert NEW in f1.read_bytes() and NEW in f2.read_bytes()  # undone, then taken back; skipped
    assert [s.code for s in out.skips].count("session-skipped") == 1 and not out.done
    again = undo(h, folder.name)
    assert f2.read_bytes() == originals[f2], (again.state, again.skips, again.undo_txid)
    assert f1.read_bytes() == originals[f1]
    assert again.state == "undone", again.skips
    assert {t.txid: t.state for t in list_transactions(h.state)}[folder.name] == "undone"


def _recover_crashing_at(h, k: int) -> int:
    pid = os.fork()
    if pid == 0:     # pragma: no cover - the child
        try:
            with fsio.using(fsio.FS(crash_at=k)):
                recover(h)
        finally:
            os._exit(3)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


@pytest.mark.parametrize("gc_first", [False, True], ids=["backups-there", "gc-took-them"])
def test_recover_of_an_undo_killed_after_a_rename_can_itself_be_killed_anywhere(gc_first):
    """recover gives the renamed inode its name back, then puts the flipped file back: killed before
    any of its operations and run again, the original inode never lacks a name, every file ends
    as the apply left it, and a last undo puts every original back."""
    for k in range(1, 40):
        for d in (resolve_homes().codex, resolve_homes().state):
            shutil.rmtree(d, ignore_errors=True)
        h, (f1, f2), originals, folder = _two_file_session()
        applied = {p: p.read_bytes() for p in (f1, f2)}
        pre_ino = {r["path"]: r["pre"]["ino"] for r in _records(folder) if r["kind"] == "intent"}
        stat_later(folder, SECOND)
        assert _crash_after_first_rename(h) == 9
        moved = {os.lstat(p).st_ino for p in (f1, f2)} & set(pre_ino.values())
        assert len(moved) == 1           # one original inode renamed into place
        if gc_first:
            api.gc(h, 0, apply=True)
        code = _recover_crashing_at(h, k)
        if code == 3:                  # recover finished before operation k: the last round
            assert k > 4, k
            break
        assert code == -9, (k, code)
        # the original inode has a name: at the path, or in the flip's b/
        named = {os.lstat(p).st_ino for p in (f1, f2)}
        named |= {os.lstat(folder / "b" / n).st_ino for n in os.listdir(folder / "b")} if (folder / "b").is_dir() else set()
        assert moved <= named, k
        recover(h)
        check_no_unfinished(h)
        assert {p: p.read_bytes() for p in (f1, f2)} == applied, k
        assert all(os.lstat(p).st_nlink == 1 for p in (f1, f2)), k
        if not gc_first:
            out = undo(h, folder.name)
            assert out.state == "undone", (k, out.skips)
            assert {p: p.read_bytes() for p in (f1, f2)} == originals, k
    else:
        raise AssertionError("recover never finished")


def test_recover_names_a_taken_source_with_its_own_code():
    """docs/warnings.md: ``source-taken`` is what recover reports when the renamed backup's name
    holds another file (the file is left with the original bytes; the flipped bytes stay in the
    undo's backup)."""
    h, (f1, f2), originals, folder = _two_file_session()
    applied = {p: p.read_bytes() for p in (f1, f2)}
    stat_later(folder, SECOND)
    assert _crash_after_first_rename(h) == 9
    moved = [p for p in (f1, f2) if p.read_bytes() == originals[p]]
    assert len(moved) == 1
    name = next(r["from"] for r in _records(h.state / "tx" / _undo_txid(h, folder))
                if r["kind"] == "intent" and r["path"] == str(moved[0]))
    with open(name, "wb") as fh:
        fh.write(b"someone else's\n")
    res = recover(h)
    assert [w.code for w in res.warnings] == ["source-taken"], res.warnings
    assert res.exit_code == 1 and moved[0].read_bytes() == originals[moved[0]]
    undo_b = h.state / "tx" / _undo_txid(h, folder) / "b"
    assert applied[moved[0]] in [(undo_b / n).read_bytes() for n in os.listdir(undo_b)]


def _undo_txid(h, folder) -> str:
    return next(t.txid for t in list_transactions(h.state) if t.txid != folder.name)
