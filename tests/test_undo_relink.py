"""Undo of a file untouched since its apply puts the original inode back: the apply's hard-link
backup is renamed into place, nothing is written (histmig/apply/batch.py "Putting an inode back",
docs/safety.md "What undo writes"). Anything not provably untouched is written as a temp, as
before; a rollback gives the backup its name back first, so the original inode always has one."""
from __future__ import annotations

import errno
import os

import orjson
import pytest

from histmig import api
from histmig.apply import ApplyFailedError, batch, check_no_unfinished, fsio, recover
from histmig.apply.journal import list_transactions
from histmig.verbs.undo.run import undo

from test_undo_settled import SECOND, flipped_tree, stat_later


@pytest.fixture
def flipped():
    return flipped_tree()


def _records(folder) -> list[dict]:
    return [orjson.loads(line) for line in (folder / "journal.jsonl").read_bytes().splitlines()]


def _backups(folder) -> list[str]:
    """The backups of the transaction's rewritten files still in its ``b/`` (not its databases')."""
    names = {r["backup"]["name"] for r in _records(folder) if r["kind"] == "intent" and r["method"] == "replace"}
    return sorted(n for n in os.listdir(folder / "b") if n in names) if (folder / "b").is_dir() else []


def _undo_writing_nothing(h, folder, monkeypatch):
    """Undo the transaction (its stats as if taken a second later), asserting no temp is written."""
    stat_later(folder, SECOND)
    written = []
    real = batch._fill_temp
    monkeypatch.setattr(batch, "_fill_temp", lambda ctx, it: (written.append(it.label), real(ctx, it)))
    out = undo(h)
    assert out.state == "undone" and written == []
    return out


def _long_session(h, old: str, n: int, lines: int):
    """Claude session ``n`` in ``old`` with ``lines`` more user records (a move edits each: too many
    edits to journal), its mtime kept."""
    import uuid as uuidlib
    from test_move_fixtures import claude_records, claude_session, jl, sid
    path = claude_session(h, old, n)
    extra = [dict(claude_records(sid(n), old)[1], uuid=str(uuidlib.UUID(int=i))) for i in range(lines)]
    mtime = os.lstat(path).st_mtime_ns
    path.write_bytes(path.read_bytes() + jl(extra))
    os.utime(path, ns=(mtime, mtime))
    return path


def test_an_untouched_file_gets_its_original_inode_back_and_nothing_is_written(flipped, monkeypatch):
    h, paths, sessions, folder, old = flipped
    originals = {r["path"]: r["pre"]["ino"] for r in _records(folder) if r["kind"] == "intent"
                 and r["method"] == "replace"}
    out = _undo_writing_nothing(h, folder, monkeypatch)
    for t, p in paths.items():
        st = os.lstat(p)
        assert p.read_bytes() == sessions[t] and st.st_mtime_ns == old
        assert st.st_ino == originals[str(p)] and st.st_nlink == 1
    assert _backups(folder) == []            # renamed into place, none left behind
    undo_folder = h.state / "tx" / out.undo_txid
    intents = [r for r in _records(undo_folder) if r["kind"] == "intent" and r["method"] == "replace"]
    assert intents and all(r["from"].startswith(str(folder / "b")) and r["from_id"][1] == originals[r["path"]]
                           for r in intents)
    assert len(_backups(undo_folder)) == len(paths)    # the flipped files: kept as any undo keeps them


def test_a_backup_linked_elsewhere_after_the_plan_is_copied_instead(flipped, monkeypatch, tmp_path):
    """The engine's own check: a source with a second name would leave it behind (nlink 2)."""
    h, paths, sessions, folder, _ = flipped
    stat_later(folder, SECOND)
    real = batch._check_sources

    def link_first(ctx, live):
        for it in live:
            if it.prep.restore is not None:
                os.link(it.prep.restore[0], tmp_path / os.path.basename(it.prep.restore[0]))
        real(ctx, live)
    monkeypatch.setattr(batch, "_check_sources", link_first)
    before = _backups(folder)
    out = undo(h)
    assert out.state == "undone"
    assert all(p.read_bytes() == sessions[t] for t, p in paths.items())
    assert _backups(folder) == before        # written as temps: the backups stay where they were


def test_a_source_that_changed_before_its_rename_is_written_as_a_temp_in_a_second_round(flipped, monkeypatch):
    h, paths, sessions, folder, _ = flipped
    stat_later(folder, SECOND)
    calls = []
    real = batch._rename_source

    def touch_first(fs, it, holders):
        calls.append(it.label)
        if len(calls) == 1:
            os.utime(it.prep.restore[0])       # its mtime and ctime move: not the file that was hashed
        return real(fs, it, holders)
    monkeypatch.setattr(batch, "_rename_source", touch_first)
    out = undo(h)
    assert out.state == "undone" and all(p.read_bytes() == sessions[t] for t, p in paths.items())
    assert len(_backups(folder)) == 1        # the first was refused, written as a temp: its backup stays
    retries = [r for r in _records(h.state / "tx" / out.undo_txid) if r["kind"] == "retry"]
    assert [r["path"] for r in retries] == [calls[0]]


def test_an_undo_that_fails_after_a_rename_gives_the_backup_its_name_back(flipped, monkeypatch):
    h, paths, sessions, folder, _ = flipped
    flipped_bytes = {t: p.read_bytes() for t, p in paths.items()}
    originals = {b: os.lstat(folder / "b" / b).st_ino for b in _backups(folder)}
    stat_later(folder, SECOND)
    real = batch.salvage
    seen = []

    def fail_second(ctx, prep, *a):
        seen.append(prep.path)
        if len(seen) == 2:
            raise OSError(5, "Input/output error (injected)")
        return real(ctx, prep, *a)
    monkeypatch.setattr(batch, "salvage", fail_second)
    with pytest.raises(ApplyFailedError):
        undo(h)
    monkeypatch.undo()
    assert {t: p.read_bytes() for t, p in paths.items()} == flipped_bytes     # rolled back
    assert {b: os.lstat(folder / "b" / b).st_ino for b in _backups(folder)} == originals
    assert all(os.lstat(p).st_nlink == 1 for p in paths.values())
    check_no_unfinished(h)
    out = undo(h)
    assert out.state == "undone" and all(p.read_bytes() == sessions[t] for t, p in paths.items())


def test_an_undo_whose_mark_was_lost_finds_the_original_inodes_back_and_does_nothing(flipped):
    """A crash between the undo's commit and its ``undone`` mark: the flip still reads committed, its
    backups are the files now. Undoing it again changes nothing (the committed undo's ``ns`` say what it
    reverted: docs/safety.md "What undo writes") and marks it."""
    h, paths, sessions, folder, _ = flipped
    stat_later(folder, SECOND)
    kept = (folder / "journal.jsonl").read_bytes()
    assert undo(h).state == "undone"
    (folder / "journal.jsonl").write_bytes(kept)         # the mark lost
    assert {t.txid: t.state for t in list_transactions(h.state)}[folder.name] == "committed"
    again = undo(h, folder.name)
    assert again.exit_code == 0 and again.state == "undone" and again.undo_txid is None
    assert all(p.read_bytes() == sessions[t] for t, p in paths.items())
    assert recover(h).nothing


def test_the_file_to_rename_is_never_in_a_plan_file_and_must_lie_in_the_state_dirs_transactions(flipped):
    from histmig.apply.check import validate_plan
    from histmig.core.diagnostics import RefusedError
    from histmig.core.plan import Fingerprint, Plan, WriteFile, op_from_dict
    h, paths, _, folder, _ = flipped
    path = str(next(iter(paths.values())))
    op = WriteFile(path=path, expect=Fingerprint(), restore_from=(str(folder / "b" / "0.0"), "0" * 64, 1))
    assert "restore_from" not in op.to_dict()
    with pytest.raises(RefusedError, match="invalid plan"):
        op_from_dict({**op.to_dict(), "restore_from": [str(folder / "b" / "0.0"), "0" * 64, 1]})
    root = str(h.codex)
    validate_plan(Plan(op="undo", args={}, operations=[op], roots=[root]), h)
    outside = WriteFile(path=path, expect=Fingerprint(), restore_from=(path, "0" * 64, 1))
    with pytest.raises(RefusedError, match="not in the state dir's transactions"):
        validate_plan(Plan(op="undo", args={}, operations=[outside], roots=[root]), h)


def _crash_after_first_rename(h) -> int:
    """An undo killed (no rollback runs) right after it renamed its first backup into place."""
    pid = os.fork()
    if pid == 0:     # pragma: no cover - the child
        fs = fsio.FS()
        fs.hooks["after-replace"] = lambda label: os._exit(9)
        with fsio.using(fs):
            try:
                undo(h)
            finally:
                os._exit(3)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


def test_gc_between_a_crashed_undo_and_recover_costs_the_original_inode_no_name(flipped):
    """The undone flip still reads committed after the crash, so gc may take its backups' folder;
    recover makes it again to give the renamed inode its name back, then puts the flip's file back."""
    h, paths, _, folder, _ = flipped
    flipped_bytes = {t: p.read_bytes() for t, p in paths.items()}
    stat_later(folder, SECOND)
    assert _crash_after_first_rename(h) == 9
    api.gc(h, 0, apply=True)
    assert not (folder / "b").exists()
    assert recover(h).txids and recover(h).nothing
    assert {t: p.read_bytes() for t, p in paths.items()} == flipped_bytes
    assert all(os.lstat(p).st_nlink == 1 for p in paths.values())
    assert len(os.listdir(folder / "b")) == 1          # the original inode, named again
    check_no_unfinished(h)


def test_a_folder_the_source_cannot_be_renamed_into_goes_the_temp_way_and_is_skipped_there(flipped, monkeypatch):
    """No rename into an unwritable folder is tried: the file goes the temp way, which skips it and
    its session (``no-temp``) instead of failing the whole undo."""
    h, paths, _, folder, _ = flipped
    stat_later(folder, SECOND)
    blocked = str(next(iter(paths.values())).parent)
    real = batch._writable
    monkeypatch.setattr(batch, "_writable", lambda dfd: os.readlink(f"/proc/self/fd/{dfd}") != blocked and real(dfd))
    out = undo(h)
    assert out.state == "partly-undone" and out.exit_code == 3
    # the sessions' rows wait with their files (apply/skipping.py held_back): before, they went back alone
    assert {s.code for s in out.skips} == {"no-temp", "session-skipped"}
    assert len(_backups(folder)) == len(paths)               # nothing renamed away


def test_a_rename_the_file_system_refuses_is_retried_as_a_temp(flipped):
    """Another mount of the same file system (EXDEV), or permissions the check did not foresee."""
    h, paths, sessions, folder, _ = flipped
    stat_later(folder, SECOND)

    class NoCrossRename(fsio.FS):
        def replace(self, src, dst, *, dir_fd=None, label=None):
            if str(src).startswith(str(folder / "b")):
                raise OSError(errno.EXDEV, "Invalid cross-device link", src)
            super().replace(src, dst, dir_fd=dir_fd, label=label)
    with fsio.using(NoCrossRename()):
        out = undo(h)
    assert out.state == "undone" and out.exit_code == 0
    assert all(p.read_bytes() == sessions[t] for t, p in paths.items())
    assert len(_backups(folder)) == len(paths)               # every file written as a temp


def test_a_moved_project_folders_sessions_get_their_original_inodes_back(tmp_path, monkeypatch):
    """A move rewrites a Claude session (one edit per line: too many to journal) and then renames its
    project folder. The apply's stat of the file (``settled``) is taken in the folder's new place, so
    undo trusts the file it left there, diffs it without hashing and renames the original inode back
    (histmig/apply/batch.py ``_settled_stat``, histmig/verbs/undo/files.py ``_original``)."""
    from test_move_fixtures import homes
    h = homes()
    old, new = str(tmp_path / "A"), str(tmp_path / "B2")     # (not the same length: not written in place)
    os.makedirs(new)
    path = _long_session(h, old, 1, 100)
    before, st0 = path.read_bytes(), os.lstat(path)
    ino, mtime = st0.st_ino, st0.st_mtime_ns
    folder = h.state / "tx" / api.apply(api.plan_move(h, old, new), h).txid
    assert not path.exists()
    intent = next(r for r in _records(folder) if r["kind"] == "intent" and r["method"] == "replace")
    assert "patches" not in intent                       # over EDITS_MAX: undo must diff the file
    settled = next(r for r in _records(folder) if r["kind"] == "settled")
    assert [f[0] for f in settled["files"]] == [intent["n"]]     # found in the renamed folder
    _undo_writing_nothing(h, folder, monkeypatch)
    st = os.lstat(path)
    assert path.read_bytes() == before and st.st_ino == ino and st.st_mtime_ns == mtime and st.st_nlink == 1


@pytest.mark.parametrize("grown", [False, True])
def test_forked_diffs_plan_the_undo_the_threads_plan(tmp_path, monkeypatch, grown):
    """Files to diff adding up to ``FORK_MIN`` go to forked workers (histmig/verbs/undo/ahead.py);
    their patches come back through a pipe as plain lists. The inverse plan is byte for byte the
    one the threads make, for files as the apply left them and for files a client appended to."""
    from histmig.core import forkmap
    from histmig.verbs.undo import ahead
    from test_move_fixtures import claude_records, homes, jl, sid
    from test_undo_settled import plan_bytes
    h = homes()
    old, new = str(tmp_path / "A"), str(tmp_path / "B2")
    os.makedirs(new)
    for n in range(1, 5):
        _long_session(h, old, n, 50 * n)
    folder = h.state / "tx" / api.apply(api.plan_move(h, old, new), h).txid
    stat_later(folder, SECOND)
    if grown:
        moved = sorted((h.claude / "projects").glob("*B2/*.jsonl"))[1]
        with open(moved, "ab") as fh:
            fh.write(jl([claude_records(sid(2), new)[1]]))
    threads = plan_bytes(h, folder)
    monkeypatch.setattr(ahead, "FORK_MIN", 0)
    monkeypatch.setattr(ahead, "cpus", lambda: 2)
    monkeypatch.setattr(forkmap, "cpus", lambda: 2)
    spawned = []
    real = forkmap._spawn
    monkeypatch.setattr(forkmap, "_spawn", lambda *a, **k: (spawned.append(1), real(*a, **k))[1])
    assert plan_bytes(h, folder) == threads and spawned
