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
con.execute("UPDATE session SET title = title WHERE rowid = (SELECT min(rowid) FROM session)")
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


def hold(db: Path, begin: str, seconds: float) -> subprocess.Popen:
    """Another process with ``begin`` open (a row written, not committed) for ``seconds``."""
    p = subprocess.Popen([sys.executable, "-c", HOLD, str(db), begin, str(seconds)], stdout=subprocess.PIPE, text=True)
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
    assert r.exit_code == 1
    assert f"error: {db}: locked by another process for over 1 s; pid {pid} " in r.stderr, r.stderr
    assert "nothing changed" in r.stderr and directories(db) == before
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
