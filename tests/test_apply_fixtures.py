"""Fixtures for the apply / safety / crash tests: a small fake home, plans built directly from
WriteFile patches / Rename / SqlUpdate ops, and tree snapshots. (A test module so that it lives in
files the safety work owns; its own tests check the snapshot helper.)"""
from __future__ import annotations

import hashlib
import os
import sqlite3
import stat
from pathlib import Path

from histmig.tools import resolve_homes
from histmig.core.plan import Fingerprint, Patch, Plan, Rename, SqlUpdate, WriteFile

OLD, NEW = b"/a/proj", b"/b/proj"   # same length on purpose: in-place tests can reuse the tree


def homes():
    return resolve_homes()


def line(i: int, cwd: bytes = OLD) -> bytes:
    return b'{"type":"turn_context","payload":{"cwd":"' + cwd + b'","n":' + str(i).encode() + b'}}\n'


def rollout(tid: str, n_lines: int = 4) -> bytes:
    head = (b'{"type":"session_meta","payload":{"id":"' + tid.encode() + b'","cwd":"' + OLD
            + b'","model_provider":"openai"}}\n')
    return head + b"".join(line(i) for i in range(n_lines))


def make_tree(h, *, n_codex: int = 3, n_claude: int = 2, db: bool = True) -> dict:
    """3 Codex rollouts, 2 Claude transcripts and a WAL-mode state_5.sqlite under the fake home."""
    files = []
    day = h.codex / "sessions" / "2026" / "01" / "02"
    day.mkdir(parents=True)
    tids = [f"0199aaaa-0000-7000-8000-00000000000{i}" for i in range(n_codex)]
    for i, tid in enumerate(tids):
        p = day / f"rollout-2026-01-02T10-00-0{i}-{tid}.jsonl"
        p.write_bytes(rollout(tid))
        files.append(p)
    proj = h.claude / "projects" / "-a-proj"
    proj.mkdir(parents=True)
    for i in range(n_claude):
        p = proj / f"5b1c0000-0000-4000-8000-00000000000{i}.jsonl"
        p.write_bytes(b'{"type":"user","cwd":"' + OLD + b'","sessionId":"x"}\n' + line(i))
        files.append(p)
    out = {"files": files, "tids": tids, "proj": proj}
    if db:
        out["db"] = make_db(h.codex / "state_5.sqlite", tids, files)
    return out


def make_db(path: Path, tids: list[str], files: list[Path]) -> Path:
    con = sqlite3.connect(path)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("CREATE TABLE threads (id TEXT PRIMARY KEY, rollout_path TEXT, "
                "model_provider TEXT NOT NULL, cwd TEXT, archived INTEGER)")
    for tid, f in zip(tids, files):
        con.execute("INSERT INTO threads VALUES (?,?,?,?,0)", (tid, str(f), "openai", OLD.decode()))
    con.commit()
    con.close()
    return path


def db_rows(path: Path) -> list[tuple]:
    con = sqlite3.connect(path)
    try:
        return con.execute("SELECT id, rollout_path, model_provider, cwd, archived FROM threads ORDER BY id").fetchall()
    finally:
        con.close()


def patches_for(data: bytes, old: bytes = OLD, new: bytes = NEW) -> tuple[Patch, ...]:
    out, i = [], data.find(old)
    while i >= 0:
        out.append(Patch(i, old, new))
        i = data.find(old, i + len(old))
    return tuple(out)


def read_noatime(path: Path) -> bytes:
    from histmig.apply.fsio import open_read
    with os.fdopen(open_read(path), "rb") as fh:
        return fh.read()


def write_op(path: Path, *, in_place_ok: bool = False, session=None, old=OLD, new=NEW) -> WriteFile:
    data = read_noatime(path)
    return WriteFile(path=str(path), expect=Fingerprint.of(path), patches=patches_for(data, old, new),
                     in_place_ok=in_place_ok, session=session, reason="cwd move")


def post_bytes(data: bytes, old: bytes = OLD, new: bytes = NEW) -> bytes:
    return data.replace(old, new)


def move_plan(h, files, *, in_place_ok: bool = False, roots=None, extra=()) -> Plan:
    ops = [write_op(f, in_place_ok=in_place_ok) for f in files]
    return Plan(op="move", args={}, roots=roots or [str(h.codex), str(h.claude)], operations=[*ops, *extra])


def full_plan(h, tree) -> Plan:
    """Files + a rename + a database update: the multi-file plan of the crash loops."""
    files = tree["files"]
    proj = tree["proj"]
    new_proj = proj.parent / "-b-proj"
    sql = SqlUpdate(db=str(tree["db"]), table="threads", key={"id": tree["tids"][0]},
                    set={"cwd": NEW.decode(), "model_provider": "my-provider"},
                    expect={"cwd": OLD.decode(), "model_provider": "openai"})
    ops = [write_op(f) for f in files[:3]]
    # the Claude files are rewritten, then their folder renamed (the shape of a cwd move)
    ops += [write_op(f) for f in files[3:]]
    ops.append(Rename(src=str(proj), dst=str(new_proj), expect=Fingerprint.of(proj, with_hash=False)))
    ops.append(sql)
    return Plan(op="move", args={}, roots=[str(h.codex), str(h.claude)], operations=ops)


def sha(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def snapshot(root: Path, *, atime: bool = False) -> dict:
    """{relpath: (type, sha256 or link target, size, mode, uid, gid, mtime_ns, xattrs[, atime])}."""
    snap = {}
    root = Path(root)
    if not root.exists():
        return snap
    for p in sorted([root, *root.rglob("*")]):
        st = p.lstat()
        if stat.S_ISLNK(st.st_mode):
            what = ("link", os.readlink(p))
        elif stat.S_ISREG(st.st_mode):
            what = ("file", sha(p))
        else:
            what = ("dir", None)
        try:
            xa = tuple(sorted((k, os.getxattr(p, k, follow_symlinks=False))
                              for k in os.listxattr(p, follow_symlinks=False)))
        except OSError:
            xa = ()
        row = (*what, st.st_size if what[0] != "dir" else 0, stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid,
               st.st_mtime_ns if what[0] != "dir" else 0, xa)
        snap[str(p.relative_to(root))] = row + ((st.st_atime_ns,) if atime else ())
    return snap


def no_temps(root: Path) -> bool:
    return not [p for p in Path(root).rglob("*") if p.name.endswith(".histmig-tmp")]


def test_snapshot_sees_a_one_byte_change_and_a_mode_change(tmp_path):
    f = tmp_path / "x"
    f.write_bytes(b"abc")
    s0 = snapshot(tmp_path)
    f.write_bytes(b"abd")
    os.utime(f, ns=(f.stat().st_atime_ns, s0["x"][6]))
    assert snapshot(tmp_path) != s0
    f.write_bytes(b"abc")
    os.utime(f, ns=(f.stat().st_atime_ns, s0["x"][6]))
    assert snapshot(tmp_path) == s0
    f.chmod(0o600)
    assert snapshot(tmp_path)["x"][3] == 0o600


def test_patches_for_finds_every_occurrence():
    data = rollout("t")
    ps = patches_for(data)
    assert len(ps) == data.count(OLD) == 5
    out = bytearray(data)
    for p in ps:
        out[p.offset:p.offset + len(p.old)] = p.new
    assert bytes(out) == post_bytes(data)
