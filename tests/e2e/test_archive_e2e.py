"""Issue 19 acceptance for ``histmig archive`` / ``histmig restore`` with the real clients (docs/archive.md).

Claude Code and Gemini CLI each record a session; ``histmig archive`` copies them; a second turn is
appended and a second run stores only the new bytes. Then the clients delete them the way users lose
history: Claude Code's startup sweep with ``cleanupPeriodDays: 1`` and an old mtime
(docs/specs/claude-code.md §13), Gemini CLI's 30-day session retention at its next start
(docs/specs/gemini.md §4). ``histmig restore --deleted --apply`` puts both back, and each client resumes
its session with the earlier turns in the request the fake API logged.
"""
from __future__ import annotations

import json
import os
import re
import time

import pytest

from . import gemini_client as gem
from .clients import carried, claude_setup, claude_transcripts, run_claude
from .histmig_run import histmig, ok

pytestmark = pytest.mark.e2e
OLD = "2026-01-01T00:00:00.000Z"


def archive(scratch) -> dict:
    return json.loads(ok(histmig(scratch, "archive", "--json")).stdout)


def age_gemini(path) -> None:
    """Make a Gemini session look 11 months old: every ``lastUpdated`` it records (docs/specs/gemini.md §4)."""
    path.write_bytes(re.sub(rb'"lastUpdated":\s*"[^"]*"', f'"lastUpdated":"{OLD}"'.encode(), path.read_bytes()))


def test_clients_delete_old_sessions_and_restore_puts_them_back(clients, gemini, scratch, fake_api):
    claude_setup(scratch)
    gem.setup(scratch)
    app, gapp, other = scratch.project("app"), scratch.project("gapp"), scratch.project("other")
    run_claude(clients, scratch, fake_api, "CLA-ONE remember this", app).check()
    [transcript] = claude_transcripts(scratch)
    sid = transcript.stem
    gem.run_gemini(gemini, scratch, fake_api, "GEM-ONE remember this", gapp).check()
    [chat] = gem.chats(scratch)
    first = archive(scratch)
    assert first["tools"] == {"claude-code": 1, "gemini": 1}, first

    # a second turn appended: the next run stores the new tail, not the whole transcript again
    size = transcript.stat().st_size
    run_claude(clients, scratch, fake_api, "CLA-TWO and this", app, resume=sid).check()
    grown = transcript.stat().st_size - size
    assert grown > 0
    second = archive(scratch)
    assert second["read"] >= 1 and 0 < second["new_bytes"] <= grown + 512, (second, grown)

    # the clients delete them: Claude's sweep (cleanupPeriodDays 1, a 10-day-old mtime), Gemini's retention
    age_gemini(chat)
    old = time.time() - 10 * 86400
    os.utime(transcript, (old, old))
    found = json.loads(histmig(scratch, "doctor", "--json").stdout)["tools"]
    assert any(f["code"] == "archive.unarchived" for f in found["claude-code"] + found["gemini"])
    archive(scratch)
    found = json.loads(histmig(scratch, "doctor", "--json").stdout)["tools"]
    assert not any(f["code"] == "archive.unarchived" for fs in found.values() for f in fs)
    (scratch.claude_dir / "settings.json").write_text(json.dumps({"cleanupPeriodDays": 1}))
    # the sweep starts 5 s after the client's startup work (STALE_CLEANUP_CATCHUP_DELAY_MS in 2.1.332) on a
    # timer that does not hold the process open: a -p run that lives past it (a tool call sleeping) lets it run
    for sentinel in scratch.claude_dir.glob(".last-cleanup*"):
        sentinel.unlink()
    run_claude(clients, scratch, fake_api, "RUN: sleep 12", other, timeout=120).check()
    gem.run_gemini(gemini, scratch, fake_api, None, gapp, args=("--list-sessions",)).check()
    deadline = time.monotonic() + 20
    while (transcript.exists() or chat.exists()) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not transcript.exists(), "Claude Code's cleanup did not delete the old transcript"
    assert not chat.exists(), "Gemini CLI's retention did not delete the old session"

    # restore: a dry run names both; --apply puts them back (journaled: undo would remove them)
    dry = ok(histmig(scratch, "restore", "--deleted"))
    assert str(transcript) in dry.stdout and str(chat) in dry.stdout, dry.stdout
    ok(histmig(scratch, "restore", "--deleted", "--apply"))
    assert transcript.exists() and chat.exists()

    # the clients resume them, the earlier turns in the request
    run = run_claude(clients, scratch, fake_api, "CLA-THREE after restore", app, resume=sid).check()
    asks = run.model_requests("anthropic")
    assert asks and any(carried(e, "CLA-ONE remember this") and carried(e, "CLA-TWO") for e in asks)
    gid = json.loads(chat.read_bytes().splitlines()[0])["sessionId"]
    run = gem.run_gemini(gemini, scratch, fake_api, "GEM-TWO after restore", gapp, resume=gid).check()
    asks = run.model_requests("gemini")
    assert asks and any(carried(e, "GEM-ONE remember this") for e in asks), [e.body for e in asks][:1]


def test_an_opencode_session_deleted_by_its_client_is_restored_as_rows_and_continued(opencode, fake_api, scratch):
    """OpenCode keeps sessions as database rows: ``opencode session delete`` removes them, ``restore
    --deleted --apply`` inserts the archived rows back, and ``opencode run -s ID`` continues the session."""
    import sqlite3
    from .opencode_client import db_path, opencode_setup, run_opencode
    opencode_setup(scratch, fake_api)
    app = scratch.project("oc")
    run_opencode(opencode, scratch, fake_api, ["first", "oc-archive-marker"], app).check()
    [sid] = [r[0] for r in sqlite3.connect(db_path(scratch)).execute("SELECT id FROM session")]
    first = archive(scratch)
    assert first["tools"].get("opencode") == 1 and not first["warnings"], first
    run_opencode(opencode, scratch, fake_api, ["second", "oc-second-marker"], app, session=sid).check()
    second = archive(scratch)
    assert second["read"] == 1 and second["new_objects"] >= 1, second
    from .clients import run as run_client
    from .opencode_client import opencode_env
    run_client([str(opencode), "session", "delete", sid], cwd=app, env=opencode_env(scratch, fake_api),
               api=fake_api).check()
    con = sqlite3.connect(db_path(scratch))
    assert con.execute("SELECT count(*) FROM session WHERE id = ?", (sid,)).fetchone()[0] == 0
    dry = ok(histmig(scratch, "restore", "--deleted"))
    assert sid in dry.stdout and "database row(s)" in dry.stdout, dry.stdout
    ok(histmig(scratch, "restore", "--deleted", "--apply"))
    assert con.execute("SELECT count(*) FROM session WHERE id = ?", (sid,)).fetchone()[0] == 1
    run = run_opencode(opencode, scratch, fake_api, ["third", "after", "restore"], app, session=sid).check()
    asks = run.model_requests("anthropic")
    assert asks and any(carried(e, "oc-archive-marker") and carried(e, "oc-second-marker") for e in asks)
