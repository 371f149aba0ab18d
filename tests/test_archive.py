"""Issue 19: ``histmig archive`` stores only new bytes; ``histmig restore`` puts deleted sessions back
through the journaled apply path (docs/archive.md)."""
from __future__ import annotations

import base64
import json
import os
from pathlib import Path

import pytest

from clirun import histmig
from histmig import api
from histmig.core.diagnostics import LockedError, RefusedError
from histmig.core.locks import GlobalLock
from histmig.core.paths import claude_slug
from histmig.tools import resolve_homes
from histmig.verbs.archive import catalog, default_root

SID = "6f1d2a3b-4c5d-4e6f-8a9b-0c1d2e3f4a5b"
SID2 = "7a1d2a3b-4c5d-4e6f-8a9b-0c1d2e3f4a5b"


def line(cwd: str, n: int, text: str, sid: str = SID) -> bytes:
    kind = "user" if n % 2 == 0 else "assistant"
    rec = {"parentUuid": f"m{n - 1}" if n else None, "isSidechain": False, "userType": "external", "cwd": cwd,
           "sessionId": sid, "version": "2.1.197", "type": kind, "message": {"role": kind, "content": text},
           "uuid": f"m{n}", "timestamp": "2026-11-29T10:00:00.000Z"}
    return json.dumps(rec, separators=(",", ":")).encode() + b"\n"


def noise(n: int) -> str:
    """Text zstd cannot shrink much, so stored bytes measure content, not compression luck."""
    return base64.b64encode(os.urandom(n)).decode()


@pytest.fixture
def world(isolated_homes):
    homes = resolve_homes()
    proj = Path(isolated_homes["HOME"]) / "code" / "app"
    proj.mkdir(parents=True)
    return homes, str(proj)


def put(homes, cwd: str, data: bytes, sid: str = SID) -> Path:
    p = homes.claude / "projects" / claude_slug(cwd) / f"{sid}.jsonl"
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(data)
    return p


def stored(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())


def test_second_run_stores_only_the_appended_bytes(world):
    homes, proj = world
    big = b"".join(line(proj, i, noise(3000)) for i in range(1000))       # ~4 MB, several chunks
    path = put(homes, proj, big)
    first = api.archive(homes)
    root = default_root(homes)
    assert first.sessions == 1 and first.read == 1 and first.new_bytes > len(big) * 0.5
    before = stored(root)
    tail = b"".join(line(proj, 1000 + i, noise(1500)) for i in range(8))   # ~16 KB appended
    with open(path, "ab") as fh:
        fh.write(tail)
    second = api.archive(homes)
    grown = stored(root) - before
    # the new objects hold the tail (compressed a little); the rest is the second run's catalog
    assert second.read == 1 and second.new_objects == 1
    assert len(tail) * 0.5 < second.new_bytes <= len(tail) + 64
    assert grown == second.new_bytes + second.catalog_bytes
    assert grown < len(tail) + 4096 < len(big) // 100
    # the newest catalog lists the file as the first run's chunks plus one for the tail
    [s1], [s2] = (catalog.read(p) for p in catalog.runs(root))
    assert s2["files"][0]["chunks"][:-1] == s1["files"][0]["chunks"]
    assert s2["files"][0]["size"] == len(big) + len(tail)
    third = api.archive(homes)                 # nothing changed: nothing read, nothing stored
    assert third.read == 0 and third.new_objects == 0 and third.new_bytes == 0


def test_a_rewritten_file_reuses_the_chunks_before_the_change(world):
    homes, proj = world
    data = b"".join(line(proj, i, noise(3000)) for i in range(800))
    path = put(homes, proj, data)
    api.archive(homes)
    changed = data[: len(data) - 5000] + b"X" * 10 + data[len(data) - 4990:]
    path.write_bytes(changed)
    again = api.archive(homes)
    assert again.new_bytes < (1 << 20) + (1 << 16)       # the last chunk, not the file
    [_, s] = [catalog.read(p) for p in catalog.runs(default_root(homes))]
    assert s[0]["files"][0]["size"] == len(changed)


def test_archive_does_not_touch_the_homes_and_names_the_run(world):
    homes, proj = world
    path = put(homes, proj, line(proj, 0, "hello") + line(proj, 1, "hi"))
    st = path.stat()
    r = histmig("archive", "--to", str(Path(homes.home) / "bk"))
    assert r.exit_code == 0, r.stderr
    assert "archived 1 session(s), 1 file(s)" in r.stdout
    assert path.stat().st_mtime_ns == st.st_mtime_ns and path.read_bytes() == line(proj, 0, "hello") + line(proj, 1, "hi")
    objects = list((Path(homes.home) / "bk" / "objects").rglob("*.zst"))
    assert len(objects) == 1 and not list((Path(homes.home) / "bk").rglob(".tmp-*"))
    doc = json.loads(histmig("archive", "--to", str(Path(homes.home) / "bk"), "--json").stdout)
    assert doc["schema"] == "histmig.archive/1" and doc["sessions"] == 1 and doc["new_objects"] == 0


def test_a_second_run_while_one_holds_the_lock_is_refused(world):
    homes, proj = world
    put(homes, proj, line(proj, 0, "hello"))
    root = default_root(homes)
    root.mkdir(parents=True)
    with GlobalLock(root):
        with pytest.raises(LockedError, match="another histmig archive"):
            api.archive(homes)
    assert api.archive(homes).sessions == 1


def test_a_catalog_cut_short_is_ignored(world):
    homes, proj = world
    path = put(homes, proj, line(proj, 0, "hello"))
    api.archive(homes)
    root = default_root(homes)
    [good] = catalog.runs(root)
    (root / "catalog" / "99991231T000000.000000Z.jsonl.zst").write_bytes(good.read_bytes()[:20])
    with open(path, "ab") as fh:
        fh.write(line(proj, 1, "more"))
    again = api.archive(homes)
    assert again.new_objects == 1          # compared with the good catalog: the tail only


def test_restore_deleted_puts_the_session_back_and_undo_removes_it(world):
    homes, proj = world
    data = line(proj, 0, "hello") + line(proj, 1, "hi")
    path = put(homes, proj, data)
    keep = put(homes, proj, line(proj, 0, "other", SID2), SID2)
    api.archive(homes)
    path.unlink()
    r = histmig("restore", "--deleted")
    assert r.exit_code == 0 and f"would create {path}" in r.stdout and not path.exists()
    r = histmig("restore", "--deleted", "--apply")
    assert r.exit_code == 0, r.stderr
    assert path.read_bytes() == data and keep.exists()
    assert histmig("restore", "--deleted").stdout.strip().endswith("nothing to do")
    assert histmig("undo").exit_code == 0
    assert not path.exists() and keep.exists()
    assert not list((Path(homes.state) / "spool").rglob("*.part"))


def test_restore_refuses_a_different_file_in_the_way(world):
    homes, proj = world
    path = put(homes, proj, line(proj, 0, "hello"))
    api.archive(homes)
    path.write_bytes(line(proj, 0, "something else"))
    with pytest.raises(RefusedError, match="a different file exists here now"):
        api.plan_restore(homes, SID[:8])
    r = histmig("restore", SID[:8], "--apply")
    assert r.exit_code == 1 and str(path) in r.stderr
    assert path.read_bytes() == line(proj, 0, "something else")


def test_restore_keep_mtime_and_default_now(world):
    homes, proj = world
    path = put(homes, proj, line(proj, 0, "hello"))
    os.utime(path, ns=(1_000_000_000_000_000_000, 1_000_000_000_000_000_000))
    api.archive(homes)
    path.unlink()
    assert histmig("restore", SID, "--apply", "--keep-mtime").exit_code == 0
    assert path.stat().st_mtime_ns == 1_000_000_000_000_000_000
    path.unlink()
    assert histmig("restore", SID, "--apply").exit_code == 0
    assert path.stat().st_mtime_ns > 1_700_000_000_000_000_000


def test_restore_needs_one_session_or_deleted(world):
    assert histmig("restore").exit_code == 2
    assert "no archive" in histmig("restore", "--deleted").stderr


def test_doctor_points_to_archive_for_transcripts_claude_is_about_to_delete(world):
    from histmig.verbs.doctor import diagnose
    homes, proj = world
    path = put(homes, proj, line(proj, 0, "hello") + line(proj, 1, "hi"))
    old = 1_700_000_000_000_000_000
    os.utime(path, ns=(old, old))
    fs = diagnose(homes, tools=["claude"]).findings
    cleanup = next(f for f in fs if f.code == "claude.cleanup-soon")
    assert cleanup.data["at_risk"] == [str(path)] and "histmig archive" in cleanup.fix
    [f] = [f for f in fs if f.code == "archive.unarchived"]
    assert f.tool == "claude-code" and f.data["paths"] == [str(path)] and f.fix.startswith("histmig archive")
    api.archive(homes)
    assert not [f for f in diagnose(homes, tools=["claude"]).findings if f.code == "archive.unarchived"]
    with open(path, "ab") as fh:                 # appended since: the archived copy is not current
        fh.write(line(proj, 2, "more"))
    os.utime(path, ns=(old, old + 1))
    assert [f.code for f in diagnose(homes, tools=["claude"]).findings if f.code == "archive.unarchived"]
    assert not [f for f in diagnose(homes, tools=["claude"], ignore=["archive.unarchived"]).findings
                if f.code == "archive.unarchived"]


def test_opencode_sessions_are_archived_as_rows_and_restored_by_insert(isolated_homes):
    import sqlite3
    from histmig.cli import samples
    samples.install(Path(isolated_homes["HOME"]))
    homes = resolve_homes()
    db = homes.opencode / "opencode.db"
    report = api.archive(homes, tools=["opencode"])
    assert report.by_tool == {"opencode": 2} and not report.warnings
    con = sqlite3.connect(db)
    sid = con.execute("SELECT id FROM session ORDER BY id DESC").fetchone()[0]
    counts = lambda: [con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in ("session", "message", "part")]  # noqa: E731
    before = counts()
    again = api.archive(homes, tools=["opencode"])       # unchanged sessions are not read again
    assert again.read == 0 and again.new_objects == 0
    for table, col in (("part", "session_id"), ("message", "session_id"), ("session", "id")):
        con.execute(f"DELETE FROM {table} WHERE {col} = ?", (sid,))
    con.commit()
    r = histmig("restore", "--deleted")
    assert r.exit_code == 0 and "database row(s)" in r.stdout and sid in r.stdout, r.stdout
    assert histmig("restore", "--deleted", "--apply").exit_code == 0
    assert counts() == before
    assert histmig("show", sid).exit_code == 0
    assert "already there" in histmig("restore", sid).stderr
    assert histmig("undo").exit_code == 0
    assert counts()[0] == before[0] - 1


def test_memory_stays_flat_on_a_big_session(world):
    import tracemalloc
    homes, proj = world
    path = put(homes, proj, b"")
    with open(path, "ab") as fh:                   # ~40 MB of lines, written without holding them
        for i in range(4000):
            fh.write(line(proj, i, noise(7500)))
    tracemalloc.start()
    try:
        api.archive(homes)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert path.stat().st_size > 30 << 20
    assert peak < 12 << 20, peak                  # one chunk and its compressed copy, not the file


def test_a_run_that_fails_half_way_leaves_no_catalog_and_the_next_run_completes(world, monkeypatch):
    from histmig.verbs.archive.store import Store
    homes, proj = world
    put(homes, proj, line(proj, 0, "hello"))
    put(homes, proj, line(proj, 0, "other", SID2), SID2)
    real, calls = Store.put, []

    def failing(self, data, digest=None):
        calls.append(1)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        return real(self, data, digest)
    monkeypatch.setattr(Store, "put", failing)
    with pytest.raises(OSError):
        api.archive(homes)
    root = default_root(homes)
    assert catalog.runs(root) == [] and not list(root.rglob(".tmp-*"))
    monkeypatch.setattr(Store, "put", real)
    done = api.archive(homes)
    assert done.sessions == 2 and len(catalog.runs(root)) == 1
    assert not GlobalLock(root).acquire().release()      # the lock was released both times
