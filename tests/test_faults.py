"""Issue 12, case 4 "Faults mid-apply": every apply finishes or rolls back by itself.

ENOSPC comes from outside the process: a small tmpfs mounted by the test (as root, as CI runs;
elsewhere skipped with the reason) holds the tool homes or, separately, histmig's state folder.
The tree is built on it, then the file system is shrunk to exactly what the tree uses plus k
pages (or k inodes), for every k until the apply fits: so the disk fills at every phase in turn
(journal, backups, temps, the SQLite online backup and commit, the renames, the commit record).
Each failed run must print one ``error:`` line naming a file and "No space left on device", no
traceback, exit 1, leave the tree byte-identical (hash, size, mode, owner, mtime of every file)
with no temps, and leave no unfinished transaction.

Damaged backups and a truncated journal: ``recover`` checks every backup against its journaled
sha256 and refuses a bad one by name; backups whose records were lost are kept and named.
"""
from __future__ import annotations

import errno
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from clirun import histmig
from codex_fixtures import home_with, rollout, tid
from convert_fixtures import make_state_db, write_claude
from histmig.apply import fsio
from histmig.apply import ApplyFailedError, apply_plan, check_no_unfinished
from histmig.core.diagnostics import UnfinishedTransactionError
from histmig.tools import resolve_homes
from histmig.apply.journal import list_transactions, read_records
from test_apply_fixtures import full_plan, make_tree, move_plan, no_temps, snapshot
from test_move_fixtures import claude_session

PAGE = 4096
ENOSPC_LINE = re.compile(r"^error: (/[^:]+): .*No space left on device")


# -- the tmpfs ----------------------------------------------------------------------------------
class Tmpfs:
    """A tmpfs mounted at ``path``; ``shrink(k)`` leaves exactly k free pages (or inodes)."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=32m,nr_inodes=4096,mode=0755", "tmpfs",
                            str(self.path)], capture_output=True, text=True)
        if r.returncode:
            pytest.skip(f"cannot mount a tmpfs here ({r.stderr.strip()}); case 4 ENOSPC needs it")

    def _remount(self, opts: str) -> None:
        subprocess.run(["mount", "-o", f"remount,{opts}", str(self.path)], check=True, capture_output=True)

    def grow(self) -> None:
        self._remount("size=32m,nr_inodes=4096")

    def shrink(self, *, pages: int | None = None, inodes: int | None = None) -> None:
        st = os.statvfs(self.path)
        if pages is not None:
            self._remount(f"size={(st.f_blocks - st.f_bfree + pages) * st.f_frsize}")
        if inodes is not None:
            self._remount(f"nr_inodes={st.f_files - st.f_ffree + inodes}")

    def clear(self) -> None:
        self.grow()
        for p in self.path.iterdir():
            shutil.rmtree(p) if p.is_dir() and not p.is_symlink() else p.unlink()
        (self.path / "filler").write_bytes(b"x")   # one page in use: size=0 would mean "unlimited"

    def unmount(self) -> None:
        if subprocess.run(["umount", str(self.path)], capture_output=True).returncode:
            subprocess.run(["umount", "-l", str(self.path)], capture_output=True)


@pytest.fixture
def tmpfs_for(tmp_path, monkeypatch, isolated_homes):
    """``tmpfs_for("home")`` or ``("state")``: the tmpfs holding that one; the other stays on disk.
    ``("both")``: one tmpfs for the homes and the state folder (backups are hard links, temps are
    staged in the journal's folder)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root (CI runs as root); ENOSPC is covered in-process below")
    mounted = []

    def make(which: str) -> Tmpfs:
        if which in ("home", "both"):
            fs = Tmpfs(isolated_homes["HOME"])
            if which == "home":
                monkeypatch.setenv("HISTMIG_STATE_DIR", str(tmp_path / "state"))
        else:
            fs = Tmpfs(tmp_path / "state-fs")
            monkeypatch.setenv("HISTMIG_STATE_DIR", str(fs.path / "histmig"))
        mounted.append(fs)
        return fs

    try:
        yield make
    finally:
        for fs in mounted:
            fs.unmount()


# -- the trees ----------------------------------------------------------------------------------
def _cwd(h) -> str:
    return str(h.home / "w" / "proj")


def _flip_tree(h) -> list[str]:
    cwd = _cwd(h)
    home_with(h.codex, {tid(i): rollout(tid(i), turns=3, cwd=cwd) for i in range(1, 5)})
    (h.codex / "config.toml").write_text('[model_providers.my-provider]\nname = "x"\n'
                                         'base_url = "http://127.0.0.1:1/v1"\n')
    return ["flip", "openai", "my-provider", "--apply"]


def _move_tree(h) -> list[str]:
    cwd = _cwd(h)
    home_with(h.codex, {tid(i): rollout(tid(i), turns=2, cwd=cwd) for i in range(1, 4)})
    for i in range(1, 3):
        claude_session(h, cwd, i)
    return ["move", cwd, cwd + "2", "--apply"]


def _move_shorter_tree(h) -> list[str]:
    """A move to a shorter path: the new files are smaller than the old ones, so putting an old
    one back needs more room than its new version frees."""
    cwd = _cwd(h) + "/a-rather-long-project-folder-name"
    home_with(h.codex, {tid(i): rollout(tid(i), turns=2, cwd=cwd) for i in range(1, 4)})
    for i in range(1, 3):
        claude_session(h, cwd, i)
    return ["move", cwd, _cwd(h) + "/p", "--apply"]


def _to_claude_tree(h) -> list[str]:
    cwd = _cwd(h)
    home_with(h.codex, {tid(i): rollout(tid(i), turns=2, cwd=cwd) for i in range(1, 4)})
    return ["convert", "--to", "claude-code", "--from", "codex", "--all", "--apply"]


def _to_codex_tree(h) -> list[str]:
    cwd = _cwd(h)
    make_state_db(h.codex)
    write_claude(h.claude, cwd)
    return ["convert", "--to", "codex", "--from", "claude-code", "--all", "--apply"]


TREES = {"flip": _flip_tree, "move": _move_tree, "move-shorter": _move_shorter_tree,
         "convert-to-claude": _to_claude_tree,
         "convert-to-codex": _to_codex_tree}


def _build(which_fs: Tmpfs, which: str, op: str):
    h = resolve_homes()
    which_fs.clear()
    for d in {"home": [h.state], "state": [h.codex, h.claude, h.home / "w"]}.get(which, []):
        shutil.rmtree(d, ignore_errors=True)
    for d in (h.codex, h.claude):
        d.mkdir(parents=True, exist_ok=True)
    argv = TREES[op](h)
    return h, argv


def tree_state(h) -> dict:
    """Every file's hash, size, mode, owner and mtime_ns; SQLite databases by their rows
    (``iterdump``): a commit and its revert move the header's change counter and the mtime, not
    the content."""
    state = os.path.relpath(h.state, h.home)
    snap = {r: v for r, v in snapshot(h.home).items()
            if ".sqlite" not in r and not (r + "/").startswith(state.split("/")[0] + "/")}
    for db in sorted(p for p in h.home.rglob("*.sqlite") if h.state not in p.parents):
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            snap[str(db)] = list(con.iterdump())
        finally:
            con.close()
    return snap


def _assert_failed_cleanly(r, h, before, where: str) -> str:
    out = r.stdout + r.stderr
    assert "Traceback" not in out, f"{where}: {out}"
    errors = [ln for ln in r.stderr.splitlines() if ln.startswith("error:")]
    assert r.exit_code == 1 and len(errors) == 1, f"{where}: exit {r.exit_code}: {r.stderr}"
    m = ENOSPC_LINE.match(errors[0])
    assert m, f"{where}: {errors[0]}"
    assert tree_state(h) == before, f"{where}: the tree changed ({errors[0]})"
    assert no_temps(h.home), where
    check_no_unfinished(h)          # rolled back by itself: nothing left for recover
    return errors[0]


def _sweep(fs: Tmpfs, which: str, op: str, *, unit: str) -> list[str]:
    """Run ``op`` with 0, 1, 2, ... free pages (or inodes) until it fits; returns the errors."""
    errors = []
    for k in range(0, 200):
        h, argv = _build(fs, which, op)
        before = tree_state(h)
        fs.shrink(**{unit: k})
        r = histmig(*argv)
        if r.exit_code == 0:
            assert errors or unit == "inodes", f"{op} fits with no room to spare: the sweep proves nothing"
            return errors
        errors.append(_assert_failed_cleanly(r, h, before, f"{op}, {which} with {k} free {unit}"))
    raise AssertionError(f"{op} never fitted: {errors[-3:]}")


@pytest.mark.slow
@pytest.mark.parametrize("op", list(TREES))
def test_case4_enospc_in_the_home_at_every_phase_rolls_back(tmpfs_for, op):
    fs = tmpfs_for("home")
    errors = _sweep(fs, "home", op, unit="pages")
    errors += _sweep(fs, "home", op, unit="inodes")
    assert errors


@pytest.mark.slow
@pytest.mark.parametrize("op", list(TREES))
def test_case4_enospc_with_homes_and_state_on_one_full_disk_rolls_back(tmpfs_for, op):
    fs = tmpfs_for("both")
    errors = _sweep(fs, "both", op, unit="pages")
    errors += _sweep(fs, "both", op, unit="inodes")
    assert errors


@pytest.mark.slow
@pytest.mark.parametrize("op", list(TREES))
def test_case4_enospc_in_the_state_dir_at_every_phase_rolls_back(tmpfs_for, op):
    fs = tmpfs_for("state")
    errors = _sweep(fs, "state", op, unit="pages")
    errors += _sweep(fs, "state", op, unit="inodes")
    assert any("cannot create the journal" in e for e in errors), errors


# -- the same phases in-process, without root (the facade's fault injection) -------------------------
@pytest.mark.slow
@pytest.mark.parametrize("op", ["flip", "convert-to-codex"])
def test_case4_enospc_at_every_operation_of_the_cli_rolls_back(op):
    """The facade fails counted operation k with ENOSPC, for every k of a real command: one
    message naming a file, exit 1, the tree as before, nothing left for recover."""
    def build():
        h = resolve_homes()
        for d in (h.codex, h.claude, h.state, h.home / "w"):
            shutil.rmtree(d, ignore_errors=True)
        for d in (h.codex, h.claude):
            d.mkdir(parents=True)
        return h, TREES[op](h)
    h, argv = build()
    with fsio.using(fsio.FS(skip_fsync=True)) as spy:
        assert histmig(*argv).exit_code == 0
    assert spy.count > 20
    for k in range(1, spy.count + 1):
        h, argv = build()
        before = tree_state(h)
        with fsio.using(fsio.FS(faults=[fsio.Fault(k, errno.ENOSPC)], skip_fsync=True)) as fs:
            r = histmig(*argv)
        assert fs.fired, k
        _assert_failed_cleanly(r, h, before, f"{op}, ENOSPC at operation {k} {spy.log[k - 1]}")
_user = tree_state      # the tool homes as the user sees them (histmig's own state folder left out)


def _plan_file(h, tree, tmp_path) -> Path:
    path = tmp_path / "plan.json"
    path.write_bytes(full_plan(h, tree).dumps())
    return path


def _one_error(r) -> str:
    assert "Traceback" not in r.stdout + r.stderr, r.stderr
    errors = [ln for ln in r.stderr.splitlines() if ln.startswith("error:")]
    assert r.exit_code == 1 and len(errors) == 1, (r.exit_code, r.stderr)
    return errors[0]


class _FailingBackup:
    """A read-only source connection whose online backup fails the way SQLite reports a full
    disk (``sqlite3.OperationalError``, code SQLITE_FULL) — the raw traceback of issue 12."""

    def __init__(self, con):
        self.con = con

    def backup(self, dst):
        e = sqlite3.OperationalError("database or disk is full")
        e.sqlite_errorcode = sqlite3.SQLITE_FULL
        raise e

    def __getattr__(self, name):      # everything else (precheck's queries) is the real connection
        return getattr(self.con, name)


def test_case4_enospc_during_sqlite_backup_rolls_back(tmp_path, monkeypatch):
    from histmig.apply import sqlops
    h = resolve_homes()
    tree = make_tree(h)
    plan = _plan_file(h, tree, tmp_path)
    before = _user(h)
    real = sqlops.connect
    monkeypatch.setattr(sqlops, "connect", lambda db, readonly=False: _FailingBackup(real(db, readonly=True))
                        if readonly else real(db))
    line = _one_error(histmig("apply", plan))
    assert ENOSPC_LINE.match(line) and "/b/" in line and line.endswith("rolled back, nothing changed"), line
    assert _user(h) == before and no_temps(h.home)
    assert not list((h.state / "tx").glob("*/b/*.sqlite")), "the half-written database backup is removed"
    check_no_unfinished(h)
    assert [t.state for t in list_transactions(h.state)] == ["rolled-back"]


def test_case4_sqlite_full_at_commit_rolls_back_the_files_already_replaced(tmp_path):
    h = resolve_homes()
    tree = make_tree(h)
    plan = _plan_file(h, tree, tmp_path)
    before = _user(h)
    with fsio.using(fsio.FS(faults=[fsio.Fault(1, errno.ENOSPC, op="sql-commit")])) as fs:
        line = _one_error(histmig("apply", plan))
    assert [n for n, _ in fs.log].count("replace") >= 5 + 5, "files were replaced, then put back"
    assert line == f"error: {tree['db']}: No space left on device; rolled back, nothing changed"
    assert _user(h) == before and no_temps(h.home)
    check_no_unfinished(h)


@pytest.mark.parametrize("exc", [ValueError("unexpected"), KeyboardInterrupt(),
                                 fsio.PathChanged("/gone", "folder missing")])
def test_case4_any_error_after_the_first_write_rolls_back(tmp_path, monkeypatch, exc):
    """Not only OSError: a bug, Ctrl-C or a folder that vanished between two steps is rolled back
    too (the rename is the plan's last file step: every file was already replaced)."""
    from histmig.apply import engine
    h = resolve_homes()
    tree = make_tree(h)
    before = _user(h)

    def boom(ctx, prep):
        raise exc
    monkeypatch.setitem(engine._STEP, "rename", boom)
    with pytest.raises(ApplyFailedError, match="rolled back, nothing changed"):
        apply_plan(full_plan(h, tree), h)
    assert _user(h) == before and no_temps(h.home)
    check_no_unfinished(h)


def test_case4_a_file_vanishing_mid_apply_rolls_back_naming_it(tmp_path):
    h = resolve_homes()
    tree = make_tree(h, db=False)
    files = tree["files"]
    plan = move_plan(h, files)
    gone = []

    def vanish(label):
        if label == str(files[0]) and not gone:     # the first file is checked: the last one vanishes
            gone.append(files[-1].read_bytes())
            files[-1].unlink()
    fs = fsio.FS(hooks={"before-final-check": vanish})
    with fsio.using(fs), pytest.raises(ApplyFailedError) as ei:
        apply_plan(plan, h)
    assert ei.value.path == str(files[-1]) and "No such file" in str(ei.value)
    assert all(b"/b/proj" not in f.read_bytes() for f in files[:-1])
    assert files[-1].read_bytes() == gone[0], "rolled back to the state before the apply, that file included"
    assert no_temps(h.home)
    check_no_unfinished(h)


def _fail_rollback(h, tree, *, copy: bool = False) -> str:
    """An apply whose database commit fails and whose rollback then fails too (EIO restoring the
    first file): left unfinished with every file still new. ``copy``: backups are copies (as when
    the state folder is on another file system)."""
    faults = [fsio.Fault(1, errno.ENOSPC, op="sql-commit"), fsio.Fault(6, errno.EIO, op="replace")]
    if copy:
        faults += [fsio.Fault(1, errno.EXDEV, op="link") for _ in range(20)]   # each fires once
    with fsio.using(fsio.FS(faults=faults)):
        with pytest.raises(UnfinishedTransactionError) as ei:
            apply_plan(full_plan(h, tree), h)
    msg = ei.value.describe()
    assert "No space left on device; rolling back also failed (" in msg and "Input/output error" in msg, msg
    assert msg.endswith("run histmig recover"), msg
    [tx] = list_transactions(h.state)
    assert tx.state == "applying"
    return tx.txid


def test_case4_failed_rollback_says_recover_and_the_next_command_refuses(tmp_path):
    h = resolve_homes()
    tree = make_tree(h)
    plan = _plan_file(h, tree, tmp_path)
    before = _user(h)
    txid = _fail_rollback(h, tree)
    r = histmig("apply", plan)
    assert _one_error(r) == f"error: unfinished transaction {txid}; run histmig recover"
    r = histmig("flip", "openai", "my-provider", "--force", "--apply")
    assert _one_error(r) == f"error: unfinished transaction {txid}; run histmig recover"
    r = histmig("recover")
    assert r.exit_code == 0 and f"recovered transaction {txid}" in r.stdout, r.stderr
    assert _user(h) == before and no_temps(h.home)
    check_no_unfinished(h)


def test_case4_a_failed_journal_write_leaves_no_glued_record(tmp_path):
    """ENOSPC part-way through a journal append leaves half a line; the next record (the
    rollback's) must start on its own line, or it would be lost with the torn one."""
    from histmig.apply.journal import Journal, new_txid

    class HalfWrite(fsio.FS):
        def write_parts(self, fd, parts, label):
            if self.faults and not self.faults[0].fired:
                self.faults[0].fired = True
                data = b"".join(parts)
                os.write(fd, data[:len(data) // 2])
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), label)
            return super().write_parts(fd, parts, label)

    fs = HalfWrite()
    j = Journal.create(fs, tmp_path / "state", new_txid())
    j.append("begin", op="flip")
    fs.faults.append(fsio.Fault(1))
    with pytest.raises(OSError):
        j.append("intent", n=1, method="replace", path="/x")
    j.append("rolled-back", reason="test")
    j.close()
    assert [r["kind"] for r in read_records(j.folder)] == ["begin", "rolled-back"]
    # the same after a crash mid-append: reopen sees the torn tail
    with open(j.folder / "journal.jsonl", "ab") as fh:
        fh.write(b'{"kind":"undo-st')
    j = Journal.reopen(fsio.FS(), j.folder)
    j.append("undone")
    j.close()
    assert [r["kind"] for r in read_records(j.folder)] == ["begin", "rolled-back", "undone"]


# -- damaged backups ------------------------------------------------------------------------------
def _corrupt(path: Path) -> None:
    """Flip one byte in place (same size, same inode: only the hash can tell)."""
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x20
    st = path.stat()
    with open(path, "r+b") as fh:
        fh.write(bytes(data))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def _backup_of(h, txid: str, path: Path) -> Path:
    recs = read_records(h.state / "tx" / txid)
    [name] = {r["backup"]["name"] for r in recs if r["kind"] == "intent" and r.get("path") == str(path)}
    return h.state / "tx" / txid / "b" / name


@pytest.mark.parametrize("kind", ["link", "copy"])
def test_case4_corrupted_backup_is_refused_by_recover(tmp_path, kind):
    h = resolve_homes()
    tree = make_tree(h)
    files = tree["files"]
    txid = _fail_rollback(h, tree, copy=kind == "copy")
    new = {f: f.read_bytes() for f in files[:3]}
    assert all(b"/b/proj" in d for d in new.values()), "the rollback stopped with the files still new"
    bad = _backup_of(h, txid, files[1])
    assert [r["backup"]["kind"] for r in read_records(bad.parent.parent)
            if r["kind"] == "intent" and r.get("path") == str(files[1])] == [kind]
    _corrupt(bad)
    damaged = bad.read_bytes()
    r = histmig("recover")
    assert r.exit_code == 1 and "Traceback" not in r.stderr, r.stderr
    assert f"warning: bad-backup: {files[1]}: backup {bad} does not match its journaled sha256; not used" \
        in r.stderr.splitlines(), r.stderr
    assert f"error: transaction {txid} rolled back except the files named above" in r.stderr
    assert files[1].read_bytes() == new[files[1]], "left as it is (what the apply wrote)"
    assert bad.read_bytes() == damaged, "the damaged backup is left for inspection"
    for f in (files[0], files[2]):
        assert b"/b/proj" not in f.read_bytes(), "every other file is put back"
    assert [t.state for t in list_transactions(h.state)] == ["partly-rolled-back"]
    assert no_temps(h.home)
    check_no_unfinished(h)          # closed: it names what it could not do instead of blocking for ever
    assert histmig("recover").stdout.strip() == "nothing to recover"


@pytest.mark.parametrize("kind", ["link", "copy"])
def test_case4_corrupted_backup_is_refused_by_undo(tmp_path, kind):
    h = resolve_homes()
    tree = make_tree(h)
    files = tree["files"]
    faults = [fsio.Fault(1, errno.EXDEV, op="link") for _ in range(20)] if kind == "copy" else []
    with fsio.using(fsio.FS(faults=faults)):
        res = apply_plan(full_plan(h, tree), h)
    new = files[0].read_bytes()
    bad = _backup_of(h, res.txid, files[0])
    _corrupt(bad)
    r = histmig("undo")
    assert "Traceback" not in r.stderr and r.exit_code != 0, r.stderr
    assert "does not match its journaled sha256" in r.stderr and str(bad) in r.stderr, r.stderr
    assert files[0].read_bytes() == new, "not restored from a damaged backup"


def test_case4_recover_with_a_missing_backup_is_not_a_success(tmp_path):
    h = resolve_homes()
    tree = make_tree(h)
    files = tree["files"]
    txid = _fail_rollback(h, tree)
    _backup_of(h, txid, files[0]).unlink()
    r = histmig("recover")
    assert r.exit_code == 1 and f"warning: not-restored: {files[0]}: backup missing" in r.stderr, r.stderr
    assert "recovered transaction" not in r.stdout
    assert [t.state for t in list_transactions(h.state)] == ["partly-rolled-back"]


# -- a truncated journal ------------------------------------------------------------------------
def _truncate_after(folder: Path, keep: int) -> None:
    """Cut the journal after its first ``keep`` records (an outside fault lost the rest)."""
    lines = (folder / "journal.jsonl").read_bytes().splitlines(keepends=True)
    (folder / "journal.jsonl").write_bytes(b"".join(lines[:keep]))


@pytest.mark.parametrize("keep", [1, 0], ids=["after-begin", "empty"])
def test_case4_truncated_journal_is_not_reported_as_recovered(tmp_path, keep):
    h = resolve_homes()
    tree = make_tree(h)
    files = tree["files"]
    txid = _fail_rollback(h, tree)
    folder = h.state / "tx" / txid
    # the database's commit failed: its backup's probe row is old, so it goes unless nothing says whose it is
    backups = sorted(p.name for p in (folder / "b").iterdir() if keep == 0 or not p.name.endswith(".sqlite"))
    _truncate_after(folder, keep)
    assert [r["kind"] for r in read_records(folder)] == ["begin"][:keep]
    with pytest.raises(UnfinishedTransactionError, match=f"unfinished transaction {txid}; run histmig recover"):
        check_no_unfinished(h)
    r = histmig("recover")
    assert r.exit_code == 1 and "Traceback" not in r.stderr, r.stderr
    named = [ln for ln in r.stderr.splitlines() if ln.startswith("warning: journal-truncated: ")]
    assert sorted(Path(ln.split(": ")[2]).name for ln in named) == backups, r.stderr
    assert all("the backup is kept here (the journal lost records)" in ln for ln in named)
    assert "recovered transaction" not in r.stdout
    assert sorted(p.name for p in (folder / "b").iterdir()) == backups
    assert all(b"/b/proj" in f.read_bytes() for f in files[:3]), "nothing restored from a guess"
    assert [t.state for t in list_transactions(h.state)] == ["partly-rolled-back"]


def test_case4_crash_before_the_intents_drops_backups_of_untouched_files(tmp_path):
    """The legitimate case of unnamed backups: made, then the crash came before their intents
    were journaled. The files are untouched (a hard link shares their inode): dropped silently."""
    h = resolve_homes()
    tree = make_tree(h)
    files = tree["files"]
    before = _user(h)
    plan = full_plan(h, tree)
    with fsio.using(fsio.FS()) as spy:
        txid = apply_plan(plan, h).txid
    assert histmig("undo").exit_code == 0
    # the first intents' write: right after the fsync of b/ that made the batch's backups durable
    bdir = str(h.state / "tx" / txid / "b")
    k = 1 + next(i for i, (name, label) in enumerate(spy.log)
                 if name == "write" and label.endswith("journal.jsonl") and spy.log[i - 1] == ("fsync", bdir))
    r = subprocess.run([sys.executable, "-m", "histmig", "apply", str(_plan_file(h, tree, tmp_path))],
                       env=dict(os.environ, HISTMIG_CRASH_AT=str(k)), capture_output=True, text=True, timeout=60)
    assert r.returncode == -9, r.stderr
    [tx] = [t for t in list_transactions(h.state) if t.unfinished]
    assert any((h.state / "tx" / tx.txid / "b").iterdir())
    r = histmig("recover")
    assert r.exit_code == 0 and "warning" not in r.stderr, r.stderr
    assert not any((h.state / "tx" / tx.txid / "b").iterdir())
    assert _user(h) == before and all(f.stat().st_nlink == 1 for f in files[:3])


# -- ENOSPC during undo -------------------------------------------------------------------------


def _assert_undo_rolled_itself_back(r, h, before, txid: str) -> None:
    line = _one_error(r)
    assert ENOSPC_LINE.match(line), line
    assert tree_state(h) == before, "the undo put back what it had done"
    assert no_temps(h.home)
    check_no_unfinished(h)
    assert [t.state for t in list_transactions(h.state) if t.txid == txid] == ["committed"], "still undoable"


def test_case4_enospc_during_undo_rolls_the_undo_back(tmp_path):
    h = resolve_homes()
    tree = make_tree(h)
    copies = [fsio.Fault(1, errno.EXDEV, op="link") for _ in range(20)]   # undo must write the old bytes
    with fsio.using(fsio.FS(faults=copies)):
        txid = apply_plan(full_plan(h, tree), h).txid
    before = tree_state(h)
    with fsio.using(fsio.FS(faults=[fsio.Fault(3, errno.ENOSPC, op="write", path_contains="(temp)")])) as fs:
        r = histmig("undo")
    assert fs.fired
    _assert_undo_rolled_itself_back(r, h, before, txid)


@pytest.mark.slow
def test_case4_enospc_in_the_home_during_undo_rolls_the_undo_back(tmpfs_for):
    fs = tmpfs_for("home")       # the state folder is on another file system: backups are copies
    h, argv = _build(fs, "home", "flip")
    r = histmig(*argv)
    assert r.exit_code == 0, r.stderr
    txid = list_transactions(h.state)[-1].txid
    before = tree_state(h)
    fs.shrink(pages=0)
    _assert_undo_rolled_itself_back(histmig("undo"), h, before, txid)


def test_case4_enospc_in_a_fill_thread_rolls_back(tmp_path):
    """Files of 256 KiB and more are filled two at a time on threads: an error there is the
    apply's error like any other."""
    from histmig.apply.batch import PARALLEL_MIN
    from test_apply_fixtures import line
    h = resolve_homes()
    day = h.codex / "sessions" / "2026" / "01" / "03"
    day.mkdir(parents=True)
    files = []
    for i in range(3):
        p = day / f"rollout-2026-01-03T10-00-0{i}-0199bbbb-0000-7000-8000-00000000000{i}.jsonl"
        p.write_bytes(b"".join(line(j) for j in range(PARALLEL_MIN // 40 + 100)))
        files.append(p)
    before = _user(h)
    fault = fsio.Fault(1, errno.ENOSPC, op="write", path_contains=files[1].name + " (temp)")
    with fsio.using(fsio.FS(faults=[fault])) as fs, pytest.raises(ApplyFailedError) as ei:
        apply_plan(move_plan(h, files), h)
    assert fs.fired and ei.value.path == str(files[1]) and "No space left on device" in str(ei.value)
    assert _user(h) == before and no_temps(h.home)
    check_no_unfinished(h)


@pytest.mark.parametrize("err", [errno.EIO, errno.EPERM, errno.ENOSPC])
def test_case4_eio_eperm_enospc_at_a_rename_roll_back_naming_the_file(tmp_path, err):
    h = resolve_homes()
    tree = make_tree(h)
    files = tree["files"]
    plan = _plan_file(h, tree, tmp_path)
    before = _user(h)
    with fsio.using(fsio.FS(faults=[fsio.Fault(3, err, op="replace")])):
        line = _one_error(histmig("apply", plan))
    assert line == f"error: {files[2]}: {os.strerror(err)}; rolled back, nothing changed"
    assert _user(h) == before and no_temps(h.home)
    check_no_unfinished(h)


def test_case4_database_backup_is_hashed_and_checked(tmp_path):
    from histmig.apply.backups import verify_backup
    h = resolve_homes()
    tree = make_tree(h)
    txid = apply_plan(full_plan(h, tree), h).txid
    folder = h.state / "tx" / txid
    [rec] = [r for r in read_records(folder) if r["kind"] == "intent" and r["method"] == "sql"]
    assert rec["backup"]["kind"] == "sqlite" and len(rec["backup"]["sha256"]) == 64
    assert verify_backup(folder, rec) is None
    _corrupt(folder / "b" / rec["backup"]["name"])
    assert "does not match its journaled sha256" in verify_backup(folder, rec)
    (folder / "b" / rec["backup"]["name"]).unlink()
    assert "is missing" in verify_backup(folder, rec)
