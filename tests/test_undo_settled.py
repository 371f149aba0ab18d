"""Undo trusts a rewritten file as the apply's bytes without reading it only while a stat proves it
(docs/safety.md "What undo reads"): the apply's ``settled`` record (its stat of every replaced file
just before commit, with the wall clock read before it) and the racy-clean rule. Everything else
falls back to reading and hashing, with the same inverse plan."""
from __future__ import annotations

import os
import time
from pathlib import Path

import orjson
import pytest

import histmig.verbs.undo.diff as undo_diff
import histmig.verbs.undo.files as undo_files
from histmig.apply import apply_plan
from histmig.verbs.flip import plan_flip
from histmig.verbs.undo import pick_transaction, plan_undo
from histmig.verbs.undo.files import settled_before
from histmig.verbs.undo.run import undo

from codex_fixtures import home_with, rollout, tid
from test_move_fixtures import homes
from test_undo_inverse import continue_codex

HOUR = 3600 * 10**9
SECOND = 10**9


@pytest.fixture
def flipped(tmp_path):
    return flipped_tree()


def flipped_tree():
    """Three flipped sessions whose originals were last written an hour ago (as on a real disk):
    ``(homes, paths, bytes, the flip's journal folder, the originals' mtime)``."""
    h = homes()
    sessions = {tid(i): rollout(tid(i), turns=2) for i in (1, 2, 3)}
    paths = home_with(h.codex, sessions)
    old = time.time_ns() - HOUR
    for p in paths.values():
        os.utime(p, ns=(old, old))
    txid = apply_plan(plan_flip(h, "openai", "my-provider"), h).txid
    return h, paths, sessions, h.state / "tx" / txid, old


@pytest.fixture
def reads(monkeypatch):
    """How often undo diffs a file against its backup, and how often it hashes a file it diffed."""
    seen = {"diff": 0, "hash": 0}

    def counted(name, real):
        def call(*a, **k):
            seen[name] += 1
            return real(*a, **k)
        return call
    monkeypatch.setattr(undo_files, "diff_against_backup", counted("diff", undo_diff.diff_against_backup))
    monkeypatch.setattr(undo_diff, "_hash_rest", counted("hash", undo_diff._hash_rest))
    return seen


def edit_journal(folder: Path, fn) -> None:
    """Rewrite the journal's records through ``fn`` (record -> record, or None to drop it)."""
    journal = folder / "journal.jsonl"
    out = [fn(orjson.loads(line)) for line in journal.read_bytes().splitlines()]
    journal.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in out if r is not None))


def settled(folder: Path) -> dict:
    return next(r for r in map(orjson.loads, (folder / "journal.jsonl").read_bytes().splitlines())
                if r["kind"] == "settled")


def stat_later(folder: Path, by_ns: int) -> None:
    """As if the apply had taken its stats ``by_ns`` later (tests cannot wait for the clock's tick
    between the rename and the stat: here they come within milliseconds)."""
    edit_journal(folder, lambda r: {**r, "t_s": r["t_s"] + by_ns} if r["kind"] == "settled" else r)


def restat(folder: Path, path: Path, t_s: int) -> None:
    """As if the apply's stat of ``path`` had been taken now, at wall time ``t_s``."""
    st = os.lstat(path)

    def fix(r):
        if r["kind"] != "settled":
            return r
        files = [[f[0], st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns] if f[2] == st.st_ino else f
                 for f in r["files"]]
        return {**r, "t_s": t_s, "files": files}
    edit_journal(folder, fix)


def plan_bytes(h, folder: Path) -> bytes:
    return plan_undo(h, pick_transaction(h.state, folder.name)).dumps()


def test_the_apply_journals_its_patches_and_every_replaced_files_stat_before_commit(flipped):
    h, paths, _, folder, _ = flipped
    recs = [orjson.loads(line) for line in (folder / "journal.jsonl").read_bytes().splitlines()]
    kinds = [r["kind"] for r in recs]
    assert kinds.index("settled") == len(kinds) - 2 and kinds[-1] == "commit"
    s = recs[kinds.index("settled")]
    assert s["res"] > 0 and s["t_s"] <= recs[-1]["t"]
    assert sorted(f[2] for f in s["files"]) == sorted(os.lstat(p).st_ino for p in paths.values())
    assert all(r.get("patches") for r in recs if r["kind"] == "intent" and r["method"] == "replace")


def test_a_file_still_as_the_apply_left_it_is_not_read_and_the_plan_is_the_same(flipped, reads):
    h, paths, sessions, folder, old = flipped
    stat_later(folder, SECOND)
    fast = plan_bytes(h, folder)
    assert reads == {"diff": 0, "hash": 0}
    kept = (folder / "journal.jsonl").read_bytes()
    edit_journal(folder, lambda r: None if r["kind"] == "settled" else r)    # a journal of an older version
    assert plan_bytes(h, folder) == fast and reads == {"diff": 3, "hash": 3}
    (folder / "journal.jsonl").write_bytes(kept)
    out = undo(h)
    assert out.exit_code == 0 and out.state == "undone"
    for t, p in paths.items():
        assert p.read_bytes() == sessions[t] and os.stat(p).st_mtime_ns == old


def test_without_journaled_patches_the_file_is_diffed_but_not_hashed(flipped, reads):
    h, paths, sessions, folder, _ = flipped
    stat_later(folder, SECOND)
    fast = plan_bytes(h, folder)
    edit_journal(folder, lambda r: {k: v for k, v in r.items() if k != "patches"})
    reads.update(diff=0, hash=0)
    assert plan_bytes(h, folder) == fast and reads == {"diff": 3, "hash": 0}
    assert undo(h).state == "undone" and all(p.read_bytes() == sessions[t] for t, p in paths.items())


def test_a_stat_within_two_ticks_of_the_files_ctime_is_racy_and_the_file_is_hashed(flipped, reads):
    h, _, _, folder, _ = flipped
    s = settled(folder)
    oldest = min(f[5] for f in s["files"])        # every ctime within two ticks of the stat's time
    edit_journal(folder, lambda r: {**r, "t_s": oldest + s["res"]} if r["kind"] == "settled" else r)
    plan_bytes(h, folder)
    assert reads == {"diff": 3, "hash": 3}


@pytest.mark.parametrize("mtime_back", [True, False])
def test_a_same_size_change_is_never_trusted(flipped, reads, mtime_back):
    """Changed in place, same size, with the stat recorded after the change: in the same tick as it
    (its mtime set back: only the racy rule can tell), or long after it with the mtime it got (the
    mtime is not the one the apply set). Either way it is hashed, found changed and kept."""
    h, paths, sessions, folder, old = flipped
    p = paths[tid(2)]
    st = os.stat(p)
    with open(p, "r+b") as fh:
        fh.seek(st.st_size - 5)
        b = fh.read(1)
        fh.seek(st.st_size - 5)
        fh.write(b"x" if b != b"x" else b"y")
    if mtime_back:
        os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
    ctime = os.lstat(p).st_ctime_ns
    restat(folder, p, ctime + 1 if mtime_back else ctime + SECOND)
    changed = p.read_bytes()
    out = undo(h)
    assert out.exit_code == 3 and [s.code for s in out.skips] == ["modified"] and reads["diff"] >= 1
    assert p.read_bytes() == changed
    assert all(q.read_bytes() == sessions[t] for t, q in paths.items() if q != p)


def test_appended_deleted_and_bad_backup_files_are_read_as_before(flipped, reads):
    h, paths, sessions, folder, _ = flipped
    stat_later(folder, SECOND)
    appended = continue_codex(paths[tid(1)], "my-provider")
    os.unlink(paths[tid(2)])
    for b in (folder / "b").iterdir():              # the third session's backup: a new inode, one byte off
        if not b.name.endswith(".sqlite") and os.stat(b).st_ino == _pre_ino(folder, paths[tid(3)]):
            data = bytearray(b.read_bytes())
            data[10] ^= 1
            os.unlink(b)
            b.write_bytes(bytes(data))
    out = undo(h)
    assert sorted(s.code for s in out.skips) == ["bad-backup", "deleted"]
    assert reads["diff"] == 2                       # appended: diffed; bad backup: diffed, then refused
    now = paths[tid(1)].read_bytes()
    assert now.startswith(sessions[tid(1)]) and len(now) == len(sessions[tid(1)]) + len(appended)


def _pre_ino(folder: Path, path: Path) -> int:
    recs = map(orjson.loads, (folder / "journal.jsonl").read_bytes().splitlines())
    return next(r["pre"]["ino"] for r in recs if r["kind"] == "intent" and r["path"] == str(path))


def test_a_file_moved_or_rewritten_since_is_not_trusted(flipped, reads):
    """A later write that kept size and mtime still moves the ctime; a new inode at the path (a
    client's own rewrite) has another ino: neither matches the settled stat."""
    h, paths, sessions, folder, _ = flipped
    stat_later(folder, SECOND)
    p = paths[tid(3)]
    st = os.stat(p)
    data = p.read_bytes()
    os.unlink(p)
    p.write_bytes(data)                             # the same bytes in a new inode
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
    plan_bytes(h, folder)
    assert reads["diff"] == 1 and reads["hash"] == 1


@pytest.mark.parametrize(("stamp", "wall", "res", "ok"), [
    (1_000_000_000_123, 1_000_000_000_123 + 8_000_001, 4_000_000, True),
    (1_000_000_000_123, 1_000_000_000_123 + 7_999_999, 4_000_000, False),    # within two ticks
    (1_000_000_000_000, 1_000_000_000_000 + 500_000_000, 4_000_000, False),  # whole seconds: a 2 s file system
    (1_000_000_000_000, 1_000_000_000_000 + 2_010_000_000, 4_000_000, True),
    (1_000_010_000_000, 1_000_010_000_000 + 12_000_000, 4_000_000, False),    # 10 ms granule
])
def test_settled_before_allows_two_ticks_and_the_timestamps_granule(stamp, wall, res, ok):
    assert settled_before(stamp, wall, res) is ok
