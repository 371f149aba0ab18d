"""apply / undo happy paths: safety.md §8 rows 1-7, 18-21, 25-27, plus the CLI helper."""
from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from histmig.apply import fsio
from histmig.apply import apply_plan, transactions
from histmig.verbs.undo.run import undo
from histmig.cli import cli
from histmig.cli.common import Context
from histmig.cli.tx import apply_options, run_plan
from histmig.core.diagnostics import RefusedError
from histmig.apply.journal import read_records, tx_root
from histmig.core.plan import Plan
from test_apply_fixtures import (NEW, OLD, db_rows, full_plan, homes, make_tree, move_plan, no_temps,
                                 post_bytes, sha, snapshot)


def _meta(p: Path):
    st = p.stat()
    return (stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid, st.st_mtime_ns, st.st_atime_ns)


def test_row1_happy_rewrite_keeps_metadata_and_leaves_no_temp():
    h = homes()
    tree = make_tree(h, db=False)
    files = tree["files"]
    pre = {f: (f.read_bytes(), _meta(f)) for f in files}
    res = apply_plan(move_plan(h, files), h)
    assert res.exit_code == 0 and res.txid and sorted(res.done) == sorted(map(str, files))
    for f in files:
        assert _meta(f) == pre[f][1]   # before reading: our own read may bump atime
        assert f.read_bytes() == post_bytes(pre[f][0])
    assert no_temps(h.home)


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o600, 0o755])
def test_row2_mode_preserved_despite_temp_0600(mode):
    h = homes()
    f = make_tree(h, n_claude=0, db=False)["files"][0]
    f.chmod(mode)
    apply_plan(move_plan(h, [f]), h)
    assert stat.S_IMODE(f.stat().st_mode) == mode and NEW in f.read_bytes()


def test_row3_owner_preserved_as_root():
    if os.geteuid() != 0:
        pytest.skip("needs root to chown")
    h = homes()
    f = make_tree(h, n_claude=0, db=False)["files"][0]
    os.chown(f, 65534, 65534)
    apply_plan(move_plan(h, [f]), h)
    assert (f.stat().st_uid, f.stat().st_gid) == (65534, 65534)


def test_row4_owner_fallback_to_gid_warns_and_still_applies():
    h = homes()
    f = make_tree(h, n_claude=0, db=False)["files"][0]
    fs = fsio.FS(faults=[fsio.Fault(1, 1, op="fchown")])   # errno 1 = EPERM on the uid+gid attempt
    with fsio.using(fs):
        res = apply_plan(move_plan(h, [f]), h)
    chowns = [lbl for name, lbl in fs.log if name == "fchown"]
    assert len(chowns) == 2, "after EPERM a gid-only fchown must be attempted"
    assert res.exit_code == 0 and NEW in f.read_bytes()
    assert [w.code for w in res.warnings] == ["owner-not-kept"]


def test_row5_times_to_the_nanosecond_after_apply_and_undo():
    h = homes()
    files = make_tree(h, db=False)["files"]
    for f in files:
        os.utime(f, ns=(111_000_000_123, 222_000_000_456))
    res = apply_plan(move_plan(h, files), h)
    for f in files:
        assert (f.stat().st_atime_ns, f.stat().st_mtime_ns) == (111_000_000_123, 222_000_000_456)
    undo(h, res.txid)
    for f in files:
        assert f.stat().st_mtime_ns == 222_000_000_456 and f.stat().st_atime_ns == 111_000_000_123


def test_row6_xattrs_preserved_after_apply_and_undo():
    h = homes()
    f = make_tree(h, n_claude=0, db=False)["files"][0]
    try:
        os.setxattr(f, "user.t", b"1")
    except OSError:
        pytest.skip("no user xattrs here")
    res = apply_plan(move_plan(h, [f]), h)
    assert os.getxattr(f, "user.t") == b"1" and NEW in f.read_bytes()
    undo(h, res.txid)
    assert os.getxattr(f, "user.t") == b"1" and OLD in f.read_bytes()


def test_row7_operation_order_per_file():
    h = homes()
    files = make_tree(h, db=False)["files"]
    fs = fsio.FS()
    with fsio.using(fs):
        apply_plan(move_plan(h, files), h)
    log = fs.log
    journal_syncs = [i for i, (n, ln) in enumerate(log) if n == "fsync" and ln.endswith("journal.jsonl")]
    for f in map(str, files):
        def first(name, suffix=""):
            return next(i for i, (n, ln) in enumerate(log) if n == name and ln == f + suffix)
        w = first("write", " (temp)")
        order = [max(j for j in journal_syncs if j < w), w, first("utime", " (temp)"), first("fsync", " (temp)"),
                 first("replace"), next(i for i, (n, ln) in enumerate(log) if n == "fsync" and ln == os.path.dirname(f)
                                        and i > first("replace"))]
        assert order == sorted(order), f"wrong order for {f}: {order}"


def test_row18_undo_restores_everything_and_refuses_twice():
    h = homes()
    tree = make_tree(h)
    try:
        for f in tree["files"]:
            os.setxattr(f, "user.k", b"v")
    except OSError:
        pass
    for f in tree["files"]:
        f.chmod(0o640)
    def user_files():
        return {r: v for r, v in snapshot(h.home).items() if not r.startswith(".local") and "sqlite" not in r}
    pre_snap = user_files()
    pre_rows = db_rows(tree["db"])
    res = apply_plan(full_plan(h, tree), h)
    assert db_rows(tree["db"]) != pre_rows
    out = undo(h, res.txid)
    assert out.exit_code == 0
    assert user_files() == pre_snap
    assert db_rows(tree["db"]) == pre_rows
    kinds = [r["kind"] for r in read_records(tx_root(h.state) / res.txid)]
    assert "undone" in kinds
    with pytest.raises(RefusedError, match="already undone"):
        undo(h, res.txid)


def test_row19_undo_after_append_keeps_the_appended_lines():
    """Issue 12: undo never loses what was written after the apply; the appended line is kept."""
    h = homes()
    f = make_tree(h, n_claude=0, db=False)["files"][0]
    pre = f.read_bytes()
    res = apply_plan(move_plan(h, [f]), h)
    with open(f, "ab") as fh:
        fh.write(b'{"type":"event","n":99}\n')
    mtime_before = f.stat().st_mtime_ns
    out = undo(h, res.txid)
    assert out.exit_code == 0 and out.state == "undone"
    assert f.read_bytes() == pre + b'{"type":"event","n":99}\n'
    assert f.stat().st_mtime_ns == mtime_before          # a client wrote since: its time stays


def test_row20_undo_after_delete_skips_unless_restore_deleted():
    h = homes()
    f = make_tree(h, n_claude=0, db=False)["files"][0]
    pre_sha = sha(f)
    res = apply_plan(move_plan(h, [f]), h)
    f.unlink()
    out = undo(h, res.txid)
    assert out.exit_code == 3 and "deleted since the transaction" in out.skips[0].reason and not f.exists()
    assert "--restore-deleted" in out.skips[0].reason
    out = undo(h, res.txid, restore_deleted=True)
    assert out.exit_code == 0 and sha(f) == pre_sha


def test_row21_undo_is_not_the_inverse_transform():
    h = homes()
    f = make_tree(h, n_claude=0, db=False)["files"][0]
    f.write_bytes(f.read_bytes() + b'{"note":"already mentions ' + NEW + b'"}\n')
    pre = f.read_bytes()
    res = apply_plan(move_plan(h, [f]), h)
    assert f.read_bytes().count(NEW) == pre.count(OLD) + pre.count(NEW)
    undo(h, res.txid)
    assert f.read_bytes() == pre


def test_inplace_patch_keeps_inode_and_undo_restores():
    h = homes()
    f = make_tree(h, n_claude=0, db=False)["files"][0]
    os.utime(f, ns=(5, 6_000_000_007))
    ino, pre = f.stat().st_ino, f.read_bytes()
    res = apply_plan(move_plan(h, [f], in_place_ok=True), h)
    assert f.stat().st_ino == ino and f.read_bytes() == post_bytes(pre) and f.stat().st_mtime_ns == 6_000_000_007
    assert [r["method"] for r in read_records(tx_root(h.state) / res.txid) if r["kind"] == "intent"] == ["inplace"]
    undo(h, res.txid)
    assert f.stat().st_ino == ino and f.read_bytes() == pre and f.stat().st_mtime_ns == 6_000_000_007


def test_zstd_write_patches_decompressed_bytes_and_verifies():
    from histmig.jsonio import zst
    from histmig.core.plan import Fingerprint, Patch, WriteFile
    h = homes()
    f = make_tree(h, n_claude=0, db=False)["files"][0]
    plain = f.read_bytes()
    z = f.with_name(f.name + ".zst")
    z.write_bytes(zst.compress(plain))
    f.unlink()
    i = plain.find(OLD)
    op = WriteFile(path=str(z), expect=Fingerprint.of(z), patches=(Patch(i, OLD, b"/longer/proj"),),
                   compression="zstd")
    res = apply_plan(Plan("move", {}, [str(h.codex)], [op]), h)
    assert res.exit_code == 0
    assert zst.decompress_all(z) == plain[:i] + b"/longer/proj" + plain[i + len(OLD):]
    undo(h, res.txid)
    assert zst.decompress_all(z) == plain


@pytest.mark.parametrize("kernel_copy", [True, False])
def test_large_untouched_ranges_are_copied_in_the_kernel_or_by_fallback(kernel_copy):
    """The digest path (a fingerprint without a content hash: precheck reads the file, the temp
    is verified by re-reading it) copies long unchanged ranges with copy_file_range."""
    from histmig.core.plan import Fingerprint, Patch, WriteFile
    h = homes()
    f = make_tree(h, n_claude=0, db=False)["files"][0]
    body = f.read_bytes() + b'{"pad":"' + b"x" * (3 << 20) + b'"}\n'
    f.write_bytes(body + b'{"cwd":"/a/proj"}\n')
    i = len(body) + len(b'{"cwd":"')
    op = WriteFile(path=str(f), expect=Fingerprint.of(f, with_hash=False),
                   patches=(Patch(8 + body.find(b"/a/proj") - 8, OLD, NEW), Patch(i, OLD, b"/much/longer")))
    faults = [] if kernel_copy else [fsio.Fault(1, errno.EXDEV, op="copy")]
    fs = fsio.FS(faults=faults)
    with fsio.using(fs):
        res = apply_plan(Plan("move", {}, [str(h.codex)], [op]), h)
    assert res.exit_code == 0
    data = f.read_bytes()
    assert data == body.replace(OLD, NEW, 1) + b'{"cwd":"/much/longer"}\n'
    copies = [n for n, _ in fs.log if n == "copy"]
    assert len(copies) == 1
    writes = sum(1 for n, ln in fs.log if n == "write" and ln.endswith("(temp)"))
    # kernel copy: only the two small buffers around the 3 MiB range go through write();
    # fallback: the range itself is written in 1 MiB chunks
    assert writes == 2 if kernel_copy else writes == 2 + 4


def test_row26_state_dir_0700_journal_and_copied_backups_0600(monkeypatch):
    import errno
    h = homes()
    f = make_tree(h, n_claude=0, db=False)["files"][0]
    old = os.umask(0o022)
    seen = {}

    class Spy(fsio.FS):
        def open_write(self, name, **kw):
            fd = super().open_write(name, **kw)
            seen[str(kw.get("label") or name)] = stat.S_IMODE(os.fstat(fd).st_mode)
            return fd
    try:
        # a hard link is refused (as across file systems), so the backup is a copy
        with fsio.using(Spy(faults=[fsio.Fault(1, errno.EXDEV, op="link")])):
            res = apply_plan(move_plan(h, [f]), h)
    finally:
        os.umask(old)
    txdir = tx_root(h.state) / res.txid
    for d in (h.state, tx_root(h.state), txdir, txdir / "b"):
        assert stat.S_IMODE(d.stat().st_mode) == 0o700, d
    journal_modes = [m for lbl, m in seen.items() if lbl.endswith("journal.jsonl")]
    backup_modes = [m for lbl, m in seen.items() if "/b/" in lbl]
    assert journal_modes == [0o600] and backup_modes == [0o600]


def test_row27_backup_across_filesystems_is_a_verified_copy(monkeypatch, tmp_path):
    if not os.path.isdir("/dev/shm"):
        pytest.skip("no /dev/shm")
    import tempfile
    state = Path(tempfile.mkdtemp(dir="/dev/shm")) / "state"
    monkeypatch.setenv("HISTMIG_STATE_DIR", str(state))
    h = homes()
    f = make_tree(h, n_claude=0, db=False)["files"][0]
    pre = sha(f)
    try:
        res = apply_plan(move_plan(h, [f]), h)
        backups = list((tx_root(state) / res.txid / "b").iterdir())
        assert len(backups) == 1 and sha(backups[0]) == pre
        assert f.stat().st_nlink == 1
        undo(h, res.txid)
        assert sha(f) == pre
    finally:
        import shutil
        shutil.rmtree(state.parent, ignore_errors=True)


def main(args):
    from histmig.cli.common import run_guarded
    return run_guarded(cli, args)


# -- CLI helper ------------------------------------------------------------------------------------
def _mutating_command(plan_factory):
    @click.command("fake-move")
    @apply_options
    @click.pass_obj
    def command(ctx: Context, apply, as_json, plan_out):
        return run_plan(ctx, plan_factory(ctx.homes), apply=apply, as_json=as_json, plan_out=plan_out,
                        render_dry_run=None)
    return command


class _Res:
    def __init__(self, r):
        self.exit_code = r.return_value if r.exception is None else repr(r.exception)
        self.output, self.stderr = r.stdout, r.stderr


def _run(command, args):
    """Invoke a test command the way the histmig group would (``Context`` as obj; -v first)."""
    verbose = args.count("-v")
    args = [a for a in args if a != "-v"][1:]
    r = CliRunner().invoke(command, args, obj=Context.create(verbose=verbose), standalone_mode=False)
    return _Res(r)


def test_row25_dry_run_writes_nothing_not_even_the_state_dir():
    h = homes()
    tree = make_tree(h)
    before = snapshot(h.home)
    r = _run(_mutating_command(lambda hh: full_plan(hh, tree)), ["fake-move"])
    assert r.exit_code == 0, r.output
    assert snapshot(h.home) == before
    assert not h.state.exists()
    assert r.output.count("would rewrite") == 5 and "would rename" in r.output and "nothing written" in r.output


def test_cli_apply_prints_txid_undo_hint_and_committed_lines_with_v():
    h = homes()
    tree = make_tree(h, db=False)
    r = _run(_mutating_command(lambda hh: move_plan(hh, tree["files"])), ["-v", "fake-move", "--apply"])
    assert r.exit_code == 0, r.output
    txid = transactions(h)[-1].txid
    assert f"undo with: histmig undo {txid}" in r.output
    assert r.output.count("committed ") == len(tree["files"])


def test_cli_plan_out_then_apply_command_then_undo_and_log(tmp_path, capsys):
    h = homes()
    tree = make_tree(h, db=False)
    pre = {f: f.read_bytes() for f in tree["files"]}
    plan_file = tmp_path / "plan.json"
    r = _run(_mutating_command(lambda hh: move_plan(hh, tree["files"])), ["fake-move", "--plan-out", str(plan_file)])
    assert r.exit_code == 0 and plan_file.exists() and all(f.read_bytes() == pre[f] for f in pre)
    assert main(["apply", str(plan_file)]) == 0
    assert all(f.read_bytes() == post_bytes(pre[f]) for f in pre)
    assert main(["log"]) == 0
    assert "committed" in capsys.readouterr().out
    assert main(["undo"]) == 0 and all(f.read_bytes() == pre[f] for f in pre)
    assert main(["undo"]) == 1
    assert "error: no transaction to undo" in capsys.readouterr().err


def test_cli_skip_lines_go_to_stderr_with_exit_3():
    h = homes()
    files = make_tree(h, db=False)["files"]
    os.link(files[0], files[0].with_name("other-name"))
    r = _run(_mutating_command(lambda hh: move_plan(hh, files)), ["fake-move", "--apply"])
    assert r.exit_code == 3
    assert f"skip: {files[0]}: hardlinked (nlink=2)" in r.stderr


def test_apply_options_collects_safety_flags():
    got = {}

    @click.command("probe")
    @apply_options
    def probe(apply, as_json, plan_out):
        from histmig.cli.tx import current_options
        got["opts"] = current_options()
        got["flags"] = (apply, as_json, plan_out)

    CliRunner().invoke(probe, ["--apply", "--json", "--follow-symlinks", "--break-hardlinks",
                               "--allow-appended", "--quiet-seconds", "30", "--include-active"],
                       catch_exceptions=False)
    o = got["opts"]
    assert got["flags"] == (True, True, None)
    assert (o.follow_symlinks, o.break_hardlinks, o.allow_appended, o.quiet_seconds, o.include_active) == \
        (True, True, True, 30.0, True)


def test_two_new_files_in_one_new_folder_and_undo_removes_the_folder():
    from histmig.core.plan import CreateFile
    h = homes()
    make_tree(h, db=False)
    new_dir = h.claude / "projects" / "-new-proj" / "sub"
    ops = [CreateFile(path=str(new_dir / f"{i}.jsonl"), data=b'{"i":%d}\n' % i, mode=0o644, mtime_ns=7_000_000_000)
           for i in range(2)]
    res = apply_plan(Plan("convert", {}, [str(h.claude)], ops), h)
    assert res.exit_code == 0
    assert [(p.read_bytes(), stat.S_IMODE(p.stat().st_mode), p.stat().st_mtime_ns) for p in sorted(new_dir.iterdir())] \
        == [(b'{"i":%d}\n' % i, 0o644, 7_000_000_000) for i in range(2)]
    undo(h, res.txid)
    assert not (h.claude / "projects" / "-new-proj").exists()
