"""A locked OpenCode database is named within ``PROBE_MS`` (docs/opencode.md, "A locked database"):
another process (the OpenCode client) holding the write lock made histmig wait the whole busy timeout
(5 s per connection) before it said which database. The busy timeouts are raised to 60 s here, so a
message that came from them instead of the probe would take a minute: the bound below is behaviour, not
speed. A lock held briefly (a client writing a row) is still waited out and the apply goes ahead."""
from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from histmig.apply import sqlops
from histmig.core import dbread
from tests.test_hostile_newer_tools import install, no_traceback

OLD = "/tmp/histmig-rec-opencode/work/app"
HOLD = """
import sqlite3, sys, time
con = sqlite3.connect(sys.argv[1], isolation_level=None)
con.execute(sys.argv[2])
con.execute(sys.argv[4])
print("held", flush=True)
time.sleep(float(sys.argv[3]))
con.execute("COMMIT")
print("free", flush=True)
"""


def database(journal: str) -> Path:
    db = install("opencode", "resumed") / "opencode.db"
    con = sqlite3.connect(db)
    con.execute(f"PRAGMA journal_mode={journal}")
    con.close()
    return db


TOUCH_SESSION = "UPDATE session SET title = title WHERE rowid = (SELECT min(rowid) FROM session)"


def hold(db: Path, begin: str, seconds: float, write: str = TOUCH_SESSION) -> subprocess.Popen:
    """Another process with ``begin`` open (a row written by ``write``, not committed) for ``seconds``."""
    p = subprocess.Popen([sys.executable, "-c", HOLD, str(db), begin, str(seconds), write],
                         stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "held"
    return p


def move_while_held(db: Path, begin: str, new: Path):
    """``histmig move OLD NEW --apply`` while another process holds ``begin`` on ``db``: its result,
    how many seconds it took, and the holder's pid."""
    p = hold(db, begin, 100)
    try:
        t = time.monotonic()
        r = no_traceback("move", OLD, str(new), "--tool", "opencode", "--apply")
        return r, time.monotonic() - t, p.pid
    finally:
        p.kill()
        p.wait()


def directories(db: Path) -> set[str]:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return {r[0] for r in con.execute("SELECT directory FROM session")}
    finally:
        con.close()


@pytest.fixture
def slow_busy(monkeypatch):
    monkeypatch.setattr(dbread, "BUSY_TIMEOUT_MS", 60_000)
    monkeypatch.setattr(sqlops, "BUSY_MS", 60_000)


@pytest.mark.timeout(120)
def test_a_held_write_lock_at_apply_is_named_with_its_holder_after_the_probe(tmp_path, slow_busy):
    db = database("wal")                    # OpenCode's mode: the plan reads, the apply's lock waits
    before = directories(db)
    r, elapsed, pid = move_while_held(db, "BEGIN IMMEDIATE", tmp_path / "new")
    assert r.exit_code == 3      # its rows are skipped and named; the rest of the apply would stand
    assert f"skip: {db}: locked by another process for over 1 s; pid {pid} " in r.stderr, r.stderr
    assert "its rows and their sessions were left as they were; when it is free, re-run" in r.stderr
    assert directories(db) == before
    assert elapsed < 30          # the 60 s busy timeout was not what ended the wait


@pytest.mark.timeout(120)
def test_a_database_locked_while_planning_is_a_db_locked_skip_after_the_probe(tmp_path, slow_busy):
    db = database("delete")                 # a rollback journal: an exclusive lock blocks readers too
    r, elapsed, pid = move_while_held(db, "BEGIN EXCLUSIVE", tmp_path / "new")
    assert r.exit_code == 3
    assert f"skip: {db}: locked by another process for over 1 s; pid {pid} " in r.stderr, r.stderr
    assert "its sessions keep the old folder; when it is free, re-run: histmig move" in r.stderr
    assert elapsed < 30


@pytest.mark.timeout(120)
@pytest.mark.parametrize("journal", ["wal", "delete"])
def test_a_brief_lock_is_waited_out_and_the_move_applies(tmp_path, journal):
    db = database(journal)
    p = hold(db, "BEGIN IMMEDIATE", 0.2)    # shorter than PROBE_MS: a client writing a row
    try:
        r = no_traceback("move", OLD, str(tmp_path / "new"), "--tool", "opencode", "--apply")
    finally:
        p.wait(timeout=30)
    assert r.exit_code == 0, r.stderr
    assert any(d.startswith(os.path.realpath(tmp_path / "new")) for d in directories(db))


def test_probe_is_short_and_names_no_holder_when_none_is_found(tmp_path, monkeypatch):
    assert dbread.PROBE_MS <= 1000 < dbread.BUSY_TIMEOUT_MS
    monkeypatch.setattr("histmig.core.livewriters.supported", lambda: False)
    db = tmp_path / "x.db"
    sqlite3.connect(db).close()
    assert dbread.locked_reason(db) == "locked by another process for over 1 s; is its client running?"


@pytest.mark.timeout(120)
def test_a_database_locked_at_apply_puts_back_its_sessions_files_and_the_rest_stands(tmp_path, slow_busy):
    """A flip whose ``state_5.sqlite`` another process keeps locked: each row is a ``db-locked`` skip,
    the rollouts written before the databases ran go back byte for byte (apply/takeback.py), and a
    session with no row there stays flipped; exit 3, nothing rolled back as an error."""
    from histmig.apply import apply_plan
    from histmig.verbs.flip import plan_flip
    from codex_fixtures import home_with, rollout, tid
    from histmig.tools.codex.state import offsets_for
    from test_move_fixtures import homes
    h = homes()
    sessions = {tid(i): rollout(tid(i)) for i in (1, 2, 3)}
    paths = home_with(h.codex, sessions)
    state = h.codex / "state_5.sqlite"
    con = sqlite3.connect(state)
    con.execute("DELETE FROM threads WHERE id = ?", (tid(3),))     # session 3: a rollout with no row
    con.commit()
    con.close()
    mtimes = {i: os.stat(paths[tid(i)]).st_mtime_ns for i in (1, 2)}
    before_offsets = {i: offsets_for(h, tid(i)) for i in (1, 2)}    # thread_history_1.sqlite: not shifted
    p = hold(state, "BEGIN IMMEDIATE", 100, "UPDATE threads SET title = title")
    try:
        res = apply_plan(plan_flip(h, "openai", "my-provider"), h)
    finally:
        p.kill()
        p.wait()
    assert res.exit_code == 3
    for i in (1, 2):
        assert paths[tid(i)].read_bytes() == sessions[tid(i)] and os.stat(paths[tid(i)]).st_mtime_ns == mtimes[i]
    assert b'"my-provider"' in paths[tid(3)].read_bytes()
    assert [d for d in res.done if d.endswith(".jsonl")] == [str(paths[tid(3)])]
    locked = [s for s in res.skips if s.code == "db-locked"]
    assert locked and {s.path for s in locked} == {str(state)} and f"pid {p.pid} " in locked[0].reason
    put_back = [s for s in res.skips if s.code == "session-skipped" and s.path.endswith(".jsonl")]
    assert {s.path for s in put_back} == {str(paths[tid(1)]), str(paths[tid(2)])}
    assert all("stayed locked by another process" in s.reason for s in put_back)
    held = {s.path for s in res.skips if s.code == "session-skipped" and not s.path.endswith(".jsonl")}
    assert held == {str(h.codex / "thread_history_1.sqlite")}      # their offset rows wait with them
    con = sqlite3.connect(state)
    assert {r[0] for r in con.execute("SELECT model_provider FROM threads")} == {"openai"}
    con.close()
    assert offsets_for(h, tid(1)) == before_offsets[1] and offsets_for(h, tid(2)) == before_offsets[2]
