"""Issue #6 acceptance with the real Codex and Claude Code (tests/e2e/versions.py) against the fake API.

Sessions recorded in ``W/app``; the folder renamed to ``W/app2``; after ``histmig move W/app W/app2
--apply`` both clients resume in ``W/app2`` with the earlier turns, ``histmig scan --cwd W/app2``
lists every session, no structured field names ``W/app`` (with Claude Code 2.1.332 also the
``environment`` attachment's ``workingDirectory``, issue 14), and undo restores every byte and mtime.
The interactive ``claude --resume`` picker opened in the moved folder lists the moved session.
"""
from __future__ import annotations

import json
import sqlite3
import subprocess
import sys

import pytest

from test_move_fixtures import structured_leftovers

from . import tui, versions
from .clients import carried, claude_transcripts, codex_setup, run_claude, run_codex

pytestmark = pytest.mark.e2e
CODEX_ARGS = ("--disable", "responses_websockets")


def histmig(scratch, *args: str) -> subprocess.CompletedProcess:
    homes = ["--codex-home", str(scratch.codex_home), "--claude-home", str(scratch.claude_dir),
             "--mini-cc-home", str(scratch.home / ".mini_cc"), "--state-dir", str(scratch.root / "histmig-state")]
    env = {"HOME": str(scratch.home), "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
    return subprocess.run([sys.executable, "-m", "histmig", *homes, *args], capture_output=True,
                          text=True, timeout=120, env=env)


def files_and_rows(scratch) -> tuple[dict, list]:
    """Every session file's bytes and mtime (both homes), plus the Codex rows a move changes."""
    files = {}
    for root in (scratch.claude_dir / "projects", scratch.codex_home / "sessions"):
        for p in sorted(root.rglob("*")):
            if p.is_file():
                files[str(p)] = (p.read_bytes(), p.stat().st_mtime_ns)
    for p in (scratch.claude_dir / ".claude.json", scratch.claude_dir / "history.jsonl",
              scratch.codex_home / "config.toml"):
        if p.exists():
            files[str(p)] = (p.read_bytes(), p.stat().st_mtime_ns)
    with sqlite3.connect(scratch.codex_home / "state_5.sqlite") as con:
        rows = con.execute("SELECT id, cwd FROM threads ORDER BY id").fetchall()
    with sqlite3.connect(scratch.codex_home / "thread_history_1.sqlite") as con:
        rows += con.execute("SELECT * FROM thread_turns ORDER BY 1, 2").fetchall()
    return files, rows


def working_directories(scratch) -> list[str]:
    """``attachment.snapshot.workingDirectory`` of every ``environment`` attachment (Claude Code 2.1.332)."""
    out = []
    for p in claude_transcripts(scratch):
        for raw in p.read_bytes().splitlines():
            if b'"type":"environment"' in raw:
                out.append(json.loads(raw)["attachment"]["snapshot"]["workingDirectory"])
    return out


def test_move_carries_both_clients_history_and_undo_restores_everything(clients, fake_api, scratch):
    codex_setup(clients, scratch, fake_api)
    app = scratch.project("app")
    run_codex(clients, scratch, fake_api, "RUN: echo codex-move-marker", app, args=CODEX_ARGS).check()
    run_claude(clients, scratch, fake_api, "RUN: echo claude-move-marker", app).check()
    app2 = app.rename(app.with_name("app2"))

    before = files_and_rows(scratch)
    done = histmig(scratch, "move", str(app), str(app2), "--apply")
    assert done.returncode == 0, done.stderr
    assert structured_leftovers(scratch.claude_dir, str(app)) == []
    assert structured_leftovers(scratch.codex_home, str(app)) == []
    if not versions.claude_older_than_newest():   # 2.1.332 snapshots the cwd in an environment attachment
        assert set(working_directories(scratch)) == {str(app2)}
    with sqlite3.connect(scratch.codex_home / "state_5.sqlite") as con:
        assert {r[0] for r in con.execute("SELECT cwd FROM threads")} == {str(app2)}
    undone = histmig(scratch, "undo")
    assert undone.returncode == 0, undone.stderr
    assert files_and_rows(scratch) == before

    again = histmig(scratch, "move", str(app), str(app2), "--apply")
    assert again.returncode == 0, again.stderr
    listed = json.loads(histmig(scratch, "scan", "--cwd", str(app2), "--json").stdout)["sessions"]
    assert {s["tool"] for s in listed} >= {"codex", "claude-code"}
    assert len(listed) == len(claude_transcripts(scratch)) + len(list(scratch.codex_home.rglob("rollout-*.jsonl")))

    codex = run_codex(clients, scratch, fake_api, "after the move", app2, resume="last", args=CODEX_ARGS).check()
    assert any(carried(r, "codex-move-marker") for r in codex.model_requests("responses"))
    claude = run_claude(clients, scratch, fake_api, "after the move", app2, continue_=True).check()
    assert any(carried(r, "claude-move-marker") for r in claude.model_requests("anthropic"))


def test_interactive_session_is_listed_by_the_resume_picker_in_the_moved_folder(clients, fake_api, scratch, tmux):
    app = scratch.project("app")
    rec = tui.record_interactive(clients, scratch, fake_api, app, ["typed-before-move"])
    assert rec.returncode == 0
    app2 = app.rename(app.with_name("app2"))
    done = histmig(scratch, "move", str(app), str(app2), "--apply")
    assert done.returncode == 0, done.stderr
    screen = tui.resume_picker(clients, scratch, fake_api, app2)
    assert "typed-before-move" in screen
