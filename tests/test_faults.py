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
from pathlib import Path

import orjson
import pytest

from clirun import histmig
from codex_fixtures import home_with, rollout, tid
from convert_fixtures import make_state_db, write_claude
from histmig import fsio
from histmig.apply import ApplyFailedError, apply_plan, check_no_unfinished, recover
from histmig.diagnostics import UnfinishedTransactionError
from histmig.homes import resolve_homes
from histmig.journal import list_transactions, read_records
from test_apply_fixtures import db_rows, full_plan, make_tree, move_plan, no_temps, snapshot
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
    """``tmpfs_for("home")`` or ``("state")``: the tmpfs holding that one; the other stays on disk."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root (CI runs as root); ENOSPC is covered in-process below")
    mounted = []

    def make(which: str) -> Tmpfs:
        if which == "home":
            fs = Tmpfs(isolated_homes["HOME"])
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


def _to_claude_tree(h) -> list[str]:
    cwd = _cwd(h)
    home_with(h.codex, {tid(i): rollout(tid(i), turns=2, cwd=cwd) for i in range(1, 4)})
    return ["convert", "--to", "claude-code", "--from", "codex", "--all", "--apply"]


def _to_codex_tree(h) -> list[str]:
    cwd = _cwd(h)
    make_state_db(h.codex)
    write_claude(h.claude, cwd)
    return ["convert", "--to", "codex", "--from", "claude-code", "--all", "--apply"]


TREES = {"flip": _flip_tree, "move": _move_tree, "convert-to-claude": _to_claude_tree,
         "convert-to-codex": _to_codex_tree}


def _build(which_fs: Tmpfs, which: str, op: str):
    h = resolve_homes()
    which_fs.clear()
    for d in [h.state] if which == "home" else [h.codex, h.claude, h.home / "w"]:
        shutil.rmtree(d, ignore_errors=True)
    for d in (h.codex, h.claude):
        d.mkdir(parents=True, exist_ok=True)
    argv = TREES[op](h)
    return h, argv


def tree_state(h) -> dict:
    """Every file's hash, size, mode, owner and mtime_ns; SQLite databases by their rows
    (``iterdump``): a commit and its revert move the header's change counter and the mtime, not
    the content."""
    snap = {r: v for r, v in snapshot(h.home).items() if ".sqlite" not in r}
    for db in sorted(h.home.rglob("*.sqlite")):
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
def test_case4_enospc_in_the_state_dir_at_every_phase_rolls_back(tmpfs_for, op):
    fs = tmpfs_for("state")
    errors = _sweep(fs, "state", op, unit="pages")
    errors += _sweep(fs, "state", op, unit="inodes")
    assert any("cannot create the journal" in e for e in errors), errors
