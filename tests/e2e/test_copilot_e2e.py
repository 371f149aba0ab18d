"""Issue 17 acceptance for GitHub Copilot CLI (tests/e2e/versions.py pins it) against the fake API's
Anthropic Messages route (bring-your-own-key, no GitHub login; docs/copilot.md).

Sessions from Codex (a tool call) and Claude Code (signed thinking) converted to Copilot are resumed by id
(``copilot -p ... --resume=<id>``) with every request accepted and the earlier turns sent; a Copilot
session converted to Codex and Claude Code is continued by them. Each client runs to completion in the
foreground (``-p``): none is left running after a test.
"""
from __future__ import annotations

import json
import sqlite3

import pytest

from .clients import (carried, claude_setup, codex_setup, run_claude, run_codex)
from .copilot_client import RESUME_RE, copilot_home, run_copilot, sessions
from .histmig_run import histmig, new_session_id, ok, shown

pytestmark = pytest.mark.e2e
WS = ("--disable", "responses_websockets")


def tool_uses(entry) -> list[dict]:
    return [b for m in entry.body["messages"] if isinstance(m["content"], list) for b in m["content"]
            if isinstance(b, dict) and b.get("type") == "tool_use"]


def accepted(run) -> list:
    reqs = run.model_requests("anthropic")
    assert reqs and all(r.status == 200 for r in reqs), [r.error for r in reqs]
    return reqs


def test_codex_session_with_a_tool_call_converted_to_copilot_is_resumed(copilot, clients, fake_api, scratch):
    codex_setup(clients, scratch, fake_api)
    app = scratch.project("app")
    run_codex(clients, scratch, fake_api, "RUN: echo cp-cvt-codex", app, args=WS).check()
    done = ok(histmig(scratch, "convert", "--to", "copilot", "--from", "codex", "--apply"))
    assert "reasoning (codex: bound to its provider)" in done.stdout
    new_id = new_session_id(done)
    assert [p.parent.name for p in sessions(scratch)] == [new_id]
    listed = ok(histmig(scratch, "scan", "--tool", "copilot"))
    assert new_id[:8] in listed.stdout and "RUN: echo cp-cvt-codex" in listed.stdout
    after = run_copilot(copilot, scratch, fake_api, "what did it print", scratch.project("elsewhere"),
                        resume=new_id).check()
    first = accepted(after)[0]
    assert carried(first, "cp-cvt-codex") and "fakeenc1" not in json.dumps(first.body["messages"])
    uses = tool_uses(first)
    assert [u["name"] for u in uses] == ["bash"] and uses[0]["input"]["command"] == "echo cp-cvt-codex"
    results = [b for m in first.body["messages"] if isinstance(m["content"], list) for b in m["content"]
               if isinstance(b, dict) and b.get("type") == "tool_result"]
    assert [r["tool_use_id"] for r in results] == [uses[0]["id"]]
    # native files keep the call ids (the client's own import would re-mint them: docs/copilot.md)
    assert f'"toolCallId":"{uses[0]["id"]}"'.encode() in sessions(scratch)[0].read_bytes()
    again = ok(histmig(scratch, "convert", "--to", "copilot", "--from", "codex", "--apply"))
    assert len(sessions(scratch)) == 1, again.stdout       # converted before: found by its provenance


def test_claude_session_with_thinking_converted_to_copilot_is_resumed_without_the_signature(copilot, clients, fake_api,
                                                                                            scratch):
    claude_setup(scratch)
    app = scratch.project("app")
    run_claude(clients, scratch, fake_api, "RUN: echo cp-cvt-claude", app).check()
    done = ok(histmig(scratch, "convert", "--to", "copilot", "--from", "claude-code", "--apply"))
    new_id = new_session_id(done)
    written = next(p for p in sessions(scratch) if p.parent.name == new_id)
    assert b"signature" not in written.read_bytes()
    # --continue picks the session whose events.jsonl changed last: the converted one, no index row needed
    after = run_copilot(copilot, scratch, fake_api, "and then", app, continue_=True).check()
    assert f"--resume={new_id}" in after.stdout + after.stderr
    first = accepted(after)[0]
    assert carried(first, "cp-cvt-claude") and not carried(first, "fakesig1")
    assert [u["name"] for u in tool_uses(first)] == ["bash"]


def test_copilot_session_converted_to_codex_and_claude_is_continued_by_them(copilot, clients, fake_api, scratch):
    app = scratch.project("app")
    first = run_copilot(copilot, scratch, fake_api, "first turn CP-ONE", app).check()
    sid = RESUME_RE.search(first.stdout + first.stderr).group(1)
    run_copilot(copilot, scratch, fake_api, "RUN: echo cp-tool-marker", app, resume=sid).check()
    assert [p.parent.name for p in sessions(scratch)] == [sid]
    codex_setup(clients, scratch, fake_api)
    to_codex = ok(histmig(scratch, "convert", "--to", "codex", "--from", "copilot", "--apply"))
    by_id = run_codex(clients, scratch, fake_api, "follow-up", app, resume=new_session_id(to_codex), args=WS)
    assert by_id.returncode == 0, by_id.stderr[-3000:]
    req = by_id.model_requests("responses")[0]
    assert req.status == 200 and carried(req, "CP-ONE") and carried(req, "cp-tool-marker"), req.error
    calls = [i for i in req.body["input"] if i.get("type") == "function_call"]
    assert [c["name"] for c in calls] == ["exec_command"] and "cp-tool-marker" in calls[0]["arguments"]
    claude_setup(scratch)
    to_claude = ok(histmig(scratch, "convert", "--to", "claude-code", "--from", "copilot", "--apply"))
    run = run_claude(clients, scratch, fake_api, "follow-up", app, resume=new_session_id(to_claude)).check()
    req = run.model_requests("anthropic")[0]
    assert req.status == 200 and carried(req, "CP-ONE") and carried(req, "cp-tool-marker"), req.error
    uses = tool_uses(req)
    assert [u["name"] for u in uses] == ["Bash"] and "cp-tool-marker" in uses[0]["input"]["command"]


# -- move -----------------------------------------------------------------------------------------------

def tree(root) -> dict:
    return {str(p): (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(root.rglob("*"))
            if p.is_file() and not p.name.endswith((".lock", "-shm", "-wal")) and "logs" not in p.parts}


def index_cwds(scratch) -> dict:
    con = sqlite3.connect(copilot_home(scratch) / "session-store.db")
    try:
        return dict(con.execute("SELECT id, cwd FROM sessions"))
    finally:
        con.close()


def test_move_rewrites_the_listing_cwd_and_index_row_and_copilot_continues(copilot, fake_api, scratch):
    app = scratch.project("app")
    first = run_copilot(copilot, scratch, fake_api, "first turn CP-MV-ONE", app).check()
    sid = RESUME_RE.search(first.stdout + first.stderr).group(1)
    run_copilot(copilot, scratch, fake_api, "RUN: echo cp-mv-marker", app, continue_=True).check()
    app2 = app.rename(app.with_name("app2"))
    state = copilot_home(scratch) / "session-state"
    ws = state / sid / "workspace.yaml"
    before, rows = tree(state), index_cwds(scratch)
    assert rows == {sid: str(app)} and f"cwd: {app}\n".encode() in ws.read_bytes()
    events = (state / sid / "events.jsonl").read_bytes()

    done = ok(histmig(scratch, "move", str(app), str(app2), "--apply"))
    assert f"cwd: {app2}\n".encode() in ws.read_bytes() and index_cwds(scratch) == {sid: str(app2)}, shown(done)
    assert (state / sid / "events.jsonl").read_bytes() == events        # the events keep where each run was
    listed = ok(histmig(scratch, "scan", "--tool", "copilot"))
    assert str(app2) in listed.stdout
    ok(histmig(scratch, "undo"))
    assert tree(state) == before and index_cwds(scratch) == rows

    ok(histmig(scratch, "move", str(app), str(app2), "--apply"))
    after = run_copilot(copilot, scratch, fake_api, "after the move CP-MV-AFTER", app2, continue_=True).check()
    req = accepted(after)[0]
    assert carried(req, "CP-MV-ONE") and carried(req, "cp-mv-marker") and carried(req, "CP-MV-AFTER")
