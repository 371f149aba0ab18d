"""safety.md §8 rows 9-11, 16, 22-24, 28-33, 40-51 (in-process; crash rows live in test_crash.py)."""
from __future__ import annotations

import errno
import os
import shutil
import subprocess
import tempfile
import sys
import time
from pathlib import Path

import pytest

from histmig.apply import fsio
from histmig.apply import ApplyFailedError, ApplyOptions, apply_plan, check_no_unfinished
from histmig.verbs.undo.run import undo
from histmig.core.diagnostics import LockedError, RefusedError, StalePlanError, UnfinishedTransactionError
from histmig.apply.journal import Journal, new_txid
from histmig.core.locks import GlobalLock
from histmig.core.plan import Fingerprint, Plan, Rename, WriteFile
from test_apply_fixtures import (NEW, OLD, homes, make_tree, move_plan, no_temps, post_bytes, sha, snapshot,
                                 write_op)


def _user_snapshot(h):
    return {r: v for r, v in snapshot(h.home).items() if not r.startswith(".local")}


# -- I/O errors -----------------------------------------------------------------------------------
def test_row9_enospc_on_second_temp_write_rolls_back_and_names_the_file():
    h = homes()
    files = make_tree(h, db=False)["files"]
    plan = move_plan(h, files)
    before = _user_snapshot(h)
    with fsio.using(fsio.FS(faults=[fsio.Fault(2, errno.ENOSPC, op="write", path_contains="(temp)")])):
        with pytest.raises(ApplyFailedError) as ei:
            apply_plan(plan, h)
    assert ei.value.exit_code == 1 and ei.value.path == str(files[1])   # one buffered write per small file
    assert "No space left" in str(ei.value) and "rolled back" in str(ei.value)
    assert _user_snapshot(h) == before and no_temps(h.home)
    check_no_unfinished(h)   # the failed transaction is closed (rolled back), not left hanging


def test_row9_enospc_on_a_later_file_rolls_back_the_earlier_ones():
    h = homes()
    files = make_tree(h, db=False)["files"]
    before = _user_snapshot(h)
    with fsio.using(fsio.FS(faults=[fsio.Fault(1, errno.ENOSPC, op="write", path_contains=files[3].name)])):
        with pytest.raises(ApplyFailedError):
            apply_plan(move_plan(h, files), h)
    assert _user_snapshot(h) == before and no_temps(h.home)


def test_row10_eio_on_fsync_of_temp_never_replaces():
    h = homes()
    f = make_tree(h, n_claude=0, db=False)["files"][0]
    pre = f.read_bytes()
    fs = fsio.FS(faults=[fsio.Fault(1, errno.EIO, op="fsync", path_contains="(temp)")])
    with fsio.using(fs):
        with pytest.raises(ApplyFailedError) as ei:
            apply_plan(move_plan(h, [f]), h)
    assert str(f) in ei.value.path and ei.value.exit_code == 1
    assert not [ln for n, ln in fs.log if n == "replace"]
    assert f.read_bytes() == pre and no_temps(h.home)


def test_row11_cannot_create_temp_skips_the_file_with_exit_3():
    h = homes()
    files = make_tree(h, db=False)["files"]
    pre = files[0].read_bytes()
    with fsio.using(fsio.FS(faults=[fsio.Fault(1, errno.EACCES, op="open", path_contains=files[0].name + " (temp)")])):
        res = apply_plan(move_plan(h, files), h)
    assert res.exit_code == 3
    assert [s.describe() for s in res.skips] == [f"skip: {files[0]}: cannot create temp (EACCES)"]
    assert files[0].read_bytes() == pre and all(NEW in f.read_bytes() for f in files[1:])


def test_row11_read_only_folder_as_unprivileged_user(request):
    """The real thing: a 0555 folder, histmig run as uid 65534 via setpriv."""
    if os.geteuid() != 0 or not Path("/usr/bin/setpriv").exists():
        pytest.skip("needs root and setpriv")
    probe = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-c",
                            "import orjson, click, zstandard"], capture_output=True, timeout=30)
    if probe.returncode != 0:
        pytest.skip("uid 65534 cannot import histmig's dependencies here (site-packages under a 0700 home); "
                    "row 11 is covered by the facade EACCES test")
    # pytest's tmp_path sits under /tmp/pytest-of-root (0700), which uid 65534 cannot traverse
    base = Path(tempfile.mkdtemp(prefix="histmig-row11-", dir="/tmp"))
    request.addfinalizer(lambda: shutil.rmtree(base, ignore_errors=True))
    env = dict(os.environ, HOME=str(base), CODEX_HOME=str(base / ".codex"), CLAUDE_CONFIG_DIR=str(base / ".claude"),
               HISTMIG_STATE_DIR=str(base / "state"))
    script = (
        "import sys, os; sys.path.insert(0, %r)\n"
        "from test_apply_fixtures import *\n"
        "from histmig.apply import apply_plan\n"
        "h = homes(); tree = make_tree(h, n_claude=0, db=False)\n"
        "os.chmod(tree['files'][0].parent, 0o555)\n"
        "res = apply_plan(move_plan(h, tree['files']), h)\n"
        "print(res.exit_code, [s.describe() for s in res.skips])\n" % str(Path(__file__).parent))
    base.chmod(0o777)
    r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-c", script],
                       env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("3 ") and r.stdout.count("cannot create temp (EACCES)") == 3


def test_row28_disk_full_while_copying_the_backup():
    h = homes()
    f = make_tree(h, n_claude=0, db=False)["files"][0]
    pre = f.read_bytes()
    faults = [fsio.Fault(1, errno.EXDEV, op="link"), fsio.Fault(1, errno.ENOSPC, op="write", path_contains="/b/")]
    with fsio.using(fsio.FS(faults=faults)):
        with pytest.raises(ApplyFailedError) as ei:
            apply_plan(move_plan(h, [f]), h)
    assert ei.value.exit_code == 1 and f.read_bytes() == pre
    assert not [p for p in (h.state / "tx").rglob("b/*")], "partial backup must be removed"


# -- unfinished, stale, tampered ------------------------------------------------------------------
def test_row16_unfinished_transaction_blocks_apply_and_undo():
    h = homes()
    files = make_tree(h, db=False)["files"]
    j = Journal.create(fsio.FS(), h.state, new_txid())
    j.append("begin", op="move")
    j.close()
    for call in (lambda: apply_plan(move_plan(h, files), h), lambda: undo(h)):
        with pytest.raises(UnfinishedTransactionError, match=f"unfinished transaction {j.txid}; run histmig recover"):
            call()


def test_row22_stale_content_skips_only_that_file_naming_it():
    """Issue 12 case 6: a file changed since the plan is skipped and named (exit 3); the rest applies."""
    h = homes()
    files = make_tree(h, db=False)["files"]
    plan = move_plan(h, files)
    data = bytearray(files[2].read_bytes())
    data[-3] ^= 1
    st = files[2].stat()
    files[2].write_bytes(bytes(data))
    os.utime(files[2], ns=(st.st_atime_ns, st.st_mtime_ns))   # same size and mtime: only the hash tells
    stale = files[2].read_bytes()
    res = apply_plan(plan, h)
    assert res.exit_code == 3 and [(s.path, s.code) for s in res.skips] == [(str(files[2]), "changed")]
    assert "content changed since plan" in res.skips[0].reason
    assert files[2].read_bytes() == stale
    assert sorted(res.done) == sorted(str(f) for f in files if f != files[2])


def test_row23_append_since_plan_skips_then_allow_appended_transforms_the_tail():
    h = homes()
    f = make_tree(h, n_claude=0, db=False)["files"][0]
    pre = f.read_bytes()
    plan = move_plan(h, [f])
    extra = b'{"type":"turn_context","payload":{"cwd":"' + OLD + b'"}}\n'
    with open(f, "ab") as fh:
        fh.write(extra)
    res = apply_plan(plan, h)
    assert res.exit_code == 3 and res.txid is None and [s.code for s in res.skips] == ["grew"]
    assert "grew since plan" in res.skips[0].reason and "--allow-appended" in res.skips[0].reason
    assert f.read_bytes() == pre + extra
    opts = ApplyOptions(allow_appended=True, tail_transform=lambda op, tail: tail.replace(OLD, NEW))
    res = apply_plan(plan, h, options=opts)
    assert res.exit_code == 0 and f.read_bytes() == post_bytes(pre + extra)


@pytest.mark.parametrize("bad", ["dotdot", "outside", "relative", "root-outside"])
def test_row24_tampered_plan_paths_are_refused_before_writing(bad, tmp_path_factory):
    h = homes()
    f = make_tree(h, n_claude=0, db=False)["files"][0]
    outside = tmp_path_factory.mktemp("outside")
    (outside / "x.jsonl").write_bytes(b"/a/proj\n")
    op = write_op(f)
    roots = [str(h.codex)]
    path = {"dotdot": str(h.codex) + "/../../etc/x", "outside": str(outside / "x.jsonl"),
            "relative": "sessions/x.jsonl", "root-outside": str(outside / "x.jsonl")}[bad]
    if bad == "root-outside":
        roots = [str(outside)]
    op = WriteFile(path=path, expect=op.expect, patches=op.patches)
    before = (snapshot(h.home), snapshot(outside))
    with pytest.raises(RefusedError, match="invalid plan"):
        apply_plan(Plan("move", {}, roots, [op]), h)
    assert (snapshot(h.home), snapshot(outside)) == before


def test_row24_edited_plan_body_is_refused():
    h = homes()
    f = make_tree(h, n_claude=0, db=False)["files"][0]
    data = move_plan(h, [f]).dumps().replace(b'"move"', b'"mover"', 1)
    with pytest.raises(RefusedError, match="invalid plan: body hash mismatch"):
        Plan.loads(data)


# -- concurrency ----------------------------------------------------------------------------------
def test_row29_append_between_read_and_replace_is_retried_once_transformed():
    h = homes()
    f = make_tree(h, n_claude=0, db=False)["files"][0]
    pre = f.read_bytes()
    new_line = b'{"type":"turn_context","payload":{"cwd":"' + OLD + b'"}}\n'
    fired = []

    def append_once(label):
        if not fired:
            fired.append(1)
            with open(f, "ab") as fh:
                fh.write(new_line)
    opts = ApplyOptions(tail_transform=lambda op, tail: tail.replace(OLD, NEW))
    with fsio.using(fsio.FS(hooks={"before-final-check": append_once})):
        res = apply_plan(move_plan(h, [f]), h, options=opts)
    assert fired and res.exit_code == 0
    assert f.read_bytes() == post_bytes(pre) + post_bytes(new_line)


def test_row30_live_o_append_holder_is_skipped():
    h = homes()
    f = make_tree(h, n_claude=0, db=False)["files"][0]
    pre = f.read_bytes()
    fd = os.open(f, os.O_WRONLY | os.O_APPEND)
    try:
        res = apply_plan(move_plan(h, [f]), h)
    finally:
        os.close(fd)
    assert res.exit_code == 3
    assert res.skips[0].describe().startswith(f"skip: {f}: open for writing by pid {os.getpid()} (")
    assert f.read_bytes() == pre


def test_row31_holder_in_the_race_window_is_salvaged():
    h = homes()
    f = make_tree(h, n_claude=0, db=False)["files"][0]
    fds = []
    lines = [b'{"late":%d}\n' % i for i in range(3)]

    def open_holder(label):
        fds.append(os.open(f, os.O_WRONLY | os.O_APPEND))

    def write_after(label):
        for ln in lines:
            os.write(fds[0], ln)
    fs = fsio.FS(hooks={"before-replace": open_holder, "after-replace": write_after})
    try:
        with fsio.using(fs):
            res = apply_plan(move_plan(h, [f]), h)
    finally:
        os.close(fds[0])
    assert res.salvaged == {str(f): sum(map(len, lines))}
    assert any(w.code == "salvaged" and f"salvaged {sum(map(len, lines))} bytes" in w.detail for w in res.warnings)
    live = f.read_bytes().splitlines(keepends=True)
    assert all(live.count(ln) == 1 for ln in lines)


def test_row32_recently_active_file_is_skipped_unless_include_active():
    h = homes()
    f = make_tree(h, n_claude=0, db=False)["files"][0]
    now = time.time_ns() - 5_000_000_000
    os.utime(f, ns=(now, now))
    res = apply_plan(move_plan(h, [f]), h, options=ApplyOptions(quiet_seconds=120))
    assert res.exit_code == 3 and "active" in res.skips[0].reason and OLD in f.read_bytes()
    res = apply_plan(move_plan(h, [f]), h, options=ApplyOptions(quiet_seconds=120, include_active=True))
    assert res.exit_code == 0 and NEW in f.read_bytes()


def test_row33_second_histmig_is_refused_while_the_first_holds_the_lock(tmp_path):
    h = homes()
    files = make_tree(h, db=False)["files"]
    plan2 = tmp_path / "plan2.json"
    plan2.write_bytes(move_plan(h, files[1:2]).dumps())
    seen = []

    def second_run(label):
        if not seen:
            seen.append(subprocess.run([sys.executable, "-m", "histmig", "apply", str(plan2)],
                                       capture_output=True, text=True, timeout=60))
    with fsio.using(fsio.FS(hooks={"before-replace": second_run})):
        apply_plan(move_plan(h, files[:1]), h)
    assert seen[0].returncode == 1
    assert f"another histmig is running (pid {os.getpid()})" in seen[0].stderr
    with GlobalLock(h.state):   # released after the first run
        pass


def test_global_lock_names_the_holder_in_process():
    h = homes()
    with GlobalLock(h.state):
        with pytest.raises(LockedError, match=f"pid {os.getpid()}"):
            GlobalLock(h.state).acquire()


def test_codex_thread_lock_and_claude_live_session_skip_the_whole_session():
    import fcntl
    import orjson
    h = homes()
    tree = make_tree(h, db=False)
    files, tid = tree["files"], tree["tids"][0]
    (h.codex / "thread-writer-locks").mkdir()
    lock = h.codex / "thread-writer-locks" / f"{tid}.lock"
    lock.touch()
    (h.claude / "sessions").mkdir()
    (h.claude / "sessions" / f"{os.getpid()}.json").write_bytes(orjson.dumps({"pid": os.getpid(), "sessionId": "S1"}))
    ops = [write_op(files[0], session={"tool": "codex", "id": tid}),
           write_op(files[1], session={"tool": "codex", "id": "other"}),
           write_op(files[3], session={"tool": "claude", "id": "S1"}),
           write_op(files[4], session={"tool": "claude", "id": "S1"})]
    fd = os.open(lock, os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        res = apply_plan(Plan("move", {}, [str(h.codex), str(h.claude)], ops), h)
    finally:
        os.close(fd)
    skipped = {s.path: s.reason for s in res.skips}
    assert "thread-writer-locks" in skipped[str(files[0])]
    assert "live Claude Code session (pid" in skipped[str(files[3])]
    assert skipped[str(files[4])].startswith("skipped with the rest of its session") or "live Claude" in skipped[str(files[4])]
    assert res.done == [str(files[1])]


# -- symlinks, hard links, renames ------------------------------------------------------------------
def _link_setup(h, target: Path):
    proj = h.claude / "projects" / "-a-proj"
    proj.mkdir(parents=True, exist_ok=True)
    link = proj / "session.jsonl"
    link.symlink_to(target)
    return link


def _link_op(link: Path) -> WriteFile:
    data = link.read_bytes()
    from test_apply_fixtures import patches_for
    return WriteFile(path=str(link), expect=Fingerprint.of(link), patches=patches_for(data))


def test_row40_symlinked_file_is_skipped_by_default():
    h = homes()
    real = h.claude / "real.jsonl"
    h.claude.mkdir(parents=True)
    real.write_bytes(b'{"cwd":"/a/proj"}\n')
    link = _link_setup(h, Path("../../real.jsonl"))
    pre = sha(real)
    res = apply_plan(Plan("move", {}, [str(h.claude)], [_link_op(link)]), h)
    assert res.exit_code == 3 and res.skips[0].describe() == f"skip: {link}: symlink"
    assert os.readlink(link) == "../../real.jsonl" and sha(real) == pre


def test_row41_follow_symlinks_rewrites_the_target_in_its_own_folder():
    h = homes()
    (h.claude / "store").mkdir(parents=True)
    real = h.claude / "store" / "real.jsonl"
    real.write_bytes(b'{"cwd":"/a/proj"}\n')
    link = _link_setup(h, real)
    ino = link.lstat().st_ino
    fs = fsio.FS()
    with fsio.using(fs):
        res = apply_plan(Plan("move", {}, [str(h.claude)], [_link_op(link)]), h,
                         options=ApplyOptions(follow_symlinks=True))
    assert res.exit_code == 0 and real.read_bytes() == b'{"cwd":"/b/proj"}\n'
    assert link.is_symlink() and link.lstat().st_ino == ino
    temps = [ln for n, ln in fs.log if n == "open" and ln.endswith("(temp)")]
    assert temps == [str(real) + " (temp)"]


def test_row42_symlink_to_outside_the_roots_is_never_written(tmp_path_factory):
    h = homes()
    outside = tmp_path_factory.mktemp("outside")
    secret = outside / "secret.jsonl"
    secret.write_bytes(b'{"cwd":"/a/proj"}\n')
    link = _link_setup(h, secret)
    pre = sha(secret)
    for follow in (False, True):
        res = apply_plan(Plan("move", {}, [str(h.claude)], [_link_op(link)]), h,
                         options=ApplyOptions(follow_symlinks=follow))
        assert res.exit_code == 3 and sha(secret) == pre
    assert res.skips[0].reason == "symlink to outside the roots"


def test_row43_symlinked_folder_to_outside_is_not_traversed(tmp_path_factory):
    h = homes()
    outside = tmp_path_factory.mktemp("outside")
    (outside / "s.jsonl").write_bytes(b'{"cwd":"/a/proj"}\n')
    (h.claude / "projects").mkdir(parents=True)
    (h.claude / "projects" / "evil").symlink_to(outside)
    before = snapshot(outside)
    op = _link_op(h.claude / "projects" / "evil" / "s.jsonl")
    res = apply_plan(Plan("move", {}, [str(h.claude)], [op]), h, options=ApplyOptions(follow_symlinks=True))
    assert res.exit_code == 3 and res.skips[0].code == "path-changed"
    assert "path changed since plan" in res.skips[0].reason
    assert snapshot(outside) == before


@pytest.mark.timeout(10)
def test_row44_symlink_loop_is_reported_without_hanging():
    h = homes()
    proj = h.claude / "projects" / "p"
    proj.mkdir(parents=True)
    (proj / "a.jsonl").symlink_to("b.jsonl")
    (proj / "b.jsonl").symlink_to("a.jsonl")
    op = WriteFile(path=str(proj / "a.jsonl"), expect=Fingerprint.of(proj / "a.jsonl"))
    res = apply_plan(Plan("move", {}, [str(h.claude)], [op]), h, options=ApplyOptions(follow_symlinks=True))
    assert res.exit_code == 3 and "ELOOP" in res.skips[0].reason


def test_row45_folder_swapped_for_a_symlink_after_plan(tmp_path_factory):
    h = homes()
    tree = make_tree(h, db=False)
    outside = tmp_path_factory.mktemp("outside")
    plan = move_plan(h, tree["files"][3:])
    proj = tree["proj"]
    os.rename(proj, outside / "moved")
    proj.symlink_to(outside / "moved")
    before = snapshot(outside)
    res = apply_plan(plan, h)
    assert res.exit_code == 3 and {s.code for s in res.skips} == {"path-changed"}
    assert all("path changed since plan" in s.reason for s in res.skips)
    assert snapshot(outside) == before


def test_row46_symlink_target_in_read_only_folder_leaves_no_temp():
    """Adapted: the target lies inside the roots, its folder refuses the temp (EACCES via the
    facade, as for a non-root user in a 0555 store); the file is skipped (exit 3), no temp."""
    h = homes()
    ro = h.claude / "ro_store"
    ro.mkdir(parents=True)
    real = ro / "claude.jsonl"
    real.write_bytes(b'{"cwd":"/a/proj"}\n')
    link = _link_setup(h, real)
    with fsio.using(fsio.FS(faults=[fsio.Fault(1, errno.EACCES, op="open", path_contains="(temp)")])):
        res = apply_plan(Plan("move", {}, [str(h.claude)], [_link_op(link)]), h,
                         options=ApplyOptions(follow_symlinks=True))
    assert res.exit_code == 3 and "cannot create temp (EACCES)" in res.skips[0].reason
    assert sorted(os.listdir(ro)) == ["claude.jsonl"]


def test_row47_hardlinked_file_skipped_unless_break_hardlinks():
    h = homes()
    f = make_tree(h, n_claude=0, db=False)["files"][0]
    f2 = f.with_name("other")
    os.link(f, f2)
    pre = f.read_bytes()
    res = apply_plan(move_plan(h, [f]), h)
    assert res.exit_code == 3 and res.skips[0].describe() == f"skip: {f}: hardlinked (nlink=2); use --break-hardlinks"
    assert f.read_bytes() == f2.read_bytes() == pre
    res = apply_plan(move_plan(h, [f]), h, options=ApplyOptions(break_hardlinks=True))
    assert res.exit_code == 0 and f.read_bytes() == post_bytes(pre) and f2.read_bytes() == pre


def _rename_plan(h, src: Path, dst: Path) -> Plan:
    return Plan("move", {}, [str(h.claude)], [Rename(str(src), str(dst), Fingerprint.of(src, with_hash=False))])


@pytest.mark.parametrize("content", [False, True])
def test_row48_49_rename_onto_existing_target_refuses(content):
    h = homes()
    tree = make_tree(h, db=False)
    dst = tree["proj"].parent / "-b-proj"
    dst.mkdir()
    if content:
        (dst / "s.jsonl").write_bytes(b"{}\n")
    before = snapshot(h.claude)
    with pytest.raises(RefusedError, match="target exists") as ei:
        apply_plan(_rename_plan(h, tree["proj"], dst), h)
    assert ei.value.exit_code == 1 and snapshot(h.claude) == before


def test_rename_noreplace_refuses_an_empty_folder_at_the_syscall():
    """The guard under the precheck: plain os.rename would silently replace an empty folder."""
    h = homes()
    h.claude.mkdir(parents=True)
    (h.claude / "a").mkdir()
    (h.claude / "b").mkdir()
    with pytest.raises(FileExistsError):
        fsio.rename_noreplace(str(h.claude / "a"), str(h.claude / "b"))
    assert (h.claude / "a").is_dir() and (h.claude / "b").is_dir()


def test_row50_cross_device_move_copies_verifies_then_deletes():
    h = homes()
    tree = make_tree(h, db=False)
    src = tree["proj"]
    dst = src.parent / "-b-proj"
    want = {p.name: sha(p) for p in src.iterdir()}
    with fsio.using(fsio.FS(faults=[fsio.Fault(1, errno.EXDEV, op="rename", path_contains=" -> ")])):
        res = apply_plan(_rename_plan(h, src, dst), h)
    assert res.exit_code == 0 and not src.exists()
    assert {p.name: sha(p) for p in dst.iterdir()} == want
    undo(h, res.txid)
    assert {p.name: sha(p) for p in src.iterdir()} == want and not dst.exists()


def test_row51_two_sources_onto_one_target_refuse_naming_both():
    h = homes()
    tree = make_tree(h, db=False)
    a = tree["proj"]
    b = a.parent / "-a-proj2"
    b.mkdir()
    dst = a.parent / "-b-proj"
    plan = Plan("move", {}, [str(h.claude)], [Rename(str(a), str(dst), Fingerprint.of(a, with_hash=False)),
                                              Rename(str(b), str(dst), Fingerprint.of(b, with_hash=False))])
    before = snapshot(h.claude)
    with pytest.raises(RefusedError) as ei:
        apply_plan(plan, h)
    assert str(a) in str(ei.value) and str(b) in str(ei.value)
    assert snapshot(h.claude) == before


def test_rename_of_a_session_folder_checks_every_file_for_writers():
    h = homes()
    tree = make_tree(h, db=False)
    inner = tree["files"][4]
    fd = os.open(inner, os.O_WRONLY | os.O_APPEND)
    try:
        res = apply_plan(_rename_plan(h, tree["proj"], tree["proj"].parent / "-b-proj"), h)
    finally:
        os.close(fd)
    assert res.exit_code == 3 and "open for writing by pid" in res.skips[0].reason and tree["proj"].is_dir()


def test_sql_expectation_mismatch_of_a_row_without_session_refuses_everything():
    import sqlite3
    from test_apply_fixtures import full_plan
    h = homes()
    tree = make_tree(h)
    plan = full_plan(h, tree)
    con = sqlite3.connect(tree["db"])
    con.execute("UPDATE threads SET model_provider='x' WHERE id=?", (tree["tids"][0],))
    con.commit()
    con.close()
    before = _user_snapshot(h)
    with pytest.raises(StalePlanError, match="plan expected"):
        apply_plan(plan, h)
    assert {k: v for k, v in _user_snapshot(h).items() if "sqlite" not in k} == \
        {k: v for k, v in before.items() if "sqlite" not in k}
