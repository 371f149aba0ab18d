"""Issue 17 acceptance for Cline CLI (tests/e2e/versions.py pins it) against the fake API's Chat Completions.

Sessions converted from Codex (a tool call, encrypted reasoning) and Claude Code (a tool call, signed
thinking) are listed by ``cline history`` and continued with ``cline --id <sid>`` typed into the
terminal UI through a pseudo-terminal (tests/e2e/cline_client.py ``resume``), every request accepted
and carrying the earlier turns; a Cline session converted to Codex and Claude Code is continued by them.
Every test stops the hub daemons its Cline runs left (by pid) and checks none is left.
"""
from __future__ import annotations

import json

import pytest

from .cline_client import auth, cline_home, daemons, history, resume, run_cline, sessions, stop_daemons
from .clients import (carried, claude_setup, claude_transcripts, codex_setup, run_claude,
                      run_codex)
from .histmig_run import histmig, new_session_id, ok

pytestmark = pytest.mark.e2e
WS = ("--disable", "responses_websockets")


@pytest.fixture
def cl(cline, fake_api, scratch):
    """Cline authenticated against the fake API; afterwards no hub daemon of this scratch is left."""
    auth(cline, scratch, fake_api)
    yield cline
    stop_daemons(scratch)
    assert not daemons(scratch), "a Cline hub daemon is still running"


def chat(run) -> list:
    return [e for e in run.requests if e.method == "POST" and e.api == "chat"]


def tool_calls(entry) -> list[dict]:
    return [c for m in entry.body["messages"] if m["role"] == "assistant" for c in m.get("tool_calls") or []]


def continued(cl, scratch, api, sid: str, app, marker: str):
    """Resume ``sid`` in the terminal UI with a new prompt; every request accepted, the first one returned."""
    after = resume(cl, scratch, api, sid, f"continue {marker}", app)
    reqs = chat(after)
    assert reqs, after.stdout[-2000:]
    assert all(r.status == 200 for r in reqs), [r.error for r in reqs]
    assert carried(reqs[0], marker)
    return reqs[0]


def test_codex_session_with_a_tool_call_converted_to_cline_is_listed_and_continued(cl, clients, fake_api, scratch):
    codex_setup(clients, scratch, fake_api)
    app = scratch.project("app")
    run_codex(clients, scratch, fake_api, "RUN: echo cl-cvt-codex", app, args=WS).check()
    done = ok(histmig(scratch, "convert", "--to", "cline", "--from", "codex", "--apply"))
    assert "reasoning (codex: bound to its provider)" in done.stdout
    new_id = new_session_id(done)
    listed = history(cl, scratch, fake_api).check()
    assert new_id in listed.stdout and "RUN: echo cl-cvt-codex" in listed.stdout
    first = continued(cl, scratch, fake_api, new_id, app, "CL-AFTER-CODEX")
    calls = tool_calls(first)
    assert [c["function"]["name"] for c in calls] == ["run_commands"]
    assert json.loads(calls[0]["function"]["arguments"]) == {"commands": ["echo cl-cvt-codex"]}
    assert any(m["role"] == "tool" and m["tool_call_id"] == calls[0]["id"] and "cl-cvt-codex" in str(m["content"])
               for m in first.body["messages"])
    assert "fakeenc1" not in json.dumps(first.body)    # Codex's encrypted reasoning is never replayed


def test_claude_session_with_thinking_converted_to_cline_is_continued_without_the_signature(cl, clients, fake_api,
                                                                                            scratch):
    claude_setup(scratch)
    app = scratch.project("app")
    run_claude(clients, scratch, fake_api, "RUN: echo cl-cvt-claude", app).check()
    [transcript] = claude_transcripts(scratch)
    assert b'"signature"' in transcript.read_bytes()
    done = ok(histmig(scratch, "convert", "--to", "cline", "--from", "claude-code", "--apply"))
    new_id = new_session_id(done)
    written = next(p for p in sessions(scratch) if p.parent.name == new_id)
    assert b"signature" not in written.read_bytes()
    listed = history(cl, scratch, fake_api).check()
    assert new_id in listed.stdout
    first = continued(cl, scratch, fake_api, new_id, app, "CL-AFTER-CLAUDE")
    assert carried(first, "cl-cvt-claude") and not carried(first, "fakesig1")
    assert [c["function"]["name"] for c in tool_calls(first)] == ["run_commands"]


def test_cline_session_converted_to_codex_and_claude_is_continued_by_them(cl, clients, fake_api, scratch):
    app = scratch.project("app")
    run_cline(cl, scratch, fake_api, "first turn CL-ONE", app).check()
    run_cline(cl, scratch, fake_api, "RUN: echo cl-tool-marker", app).check()
    codex_setup(clients, scratch, fake_api)
    to_codex = ok(histmig(scratch, "convert", "--to", "codex", "--from", "cline", "--apply"))
    assert "converted 2 of 2" in to_codex.stdout
    tool_session = next(line.split()[4] for line in to_codex.stdout.splitlines()
                        if line.startswith("converting cline") and "cl-tool-marker" in line)
    by_id = run_codex(clients, scratch, fake_api, "follow-up", app, resume=tool_session, args=WS)
    assert by_id.returncode == 0, by_id.stderr[-3000:]
    req = by_id.model_requests("responses")[0]
    assert req.status == 200 and carried(req, "cl-tool-marker"), req.error
    calls = [i for i in req.body["input"] if i.get("type") == "function_call"]
    assert [c["name"] for c in calls] == ["exec_command"] and "cl-tool-marker" in calls[0]["arguments"]
    claude_setup(scratch)
    to_claude = ok(histmig(scratch, "convert", "--to", "claude-code", "--from", "cline", "--apply"))
    tool_session = next(line.split()[4] for line in to_claude.stdout.splitlines()
                        if line.startswith("converting cline") and "cl-tool-marker" in line)
    run = run_claude(clients, scratch, fake_api, "follow-up", app, resume=tool_session).check()
    first = run.model_requests("anthropic")[0]
    assert first.status == 200 and carried(first, "cl-tool-marker"), first.error
    uses = [b for m in first.body["messages"] if isinstance(m["content"], list) for b in m["content"]
            if b.get("type") == "tool_use"]
    assert [u["name"] for u in uses] == ["Bash"] and "cl-tool-marker" in uses[0]["input"]["command"]


# -- move -------------------------------------------------------------------------------------------

def tree(root) -> dict:
    """Every file under ``root``: bytes and mtime."""
    return {str(p): (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(root.rglob("*")) if p.is_file()}


def test_move_keeps_the_listing_true_resume_carries_the_history_and_undo_restores(cl, fake_api, scratch):
    app = scratch.project("app")
    run_cline(cl, scratch, fake_api, "first turn CL-MOVE-ONE", app).check()
    [messages] = sessions(scratch)
    sid = messages.parent.name
    app2 = app.rename(app.with_name("app2"))
    stop_daemons(scratch)
    folder = cline_home(scratch) / "data" / "sessions"
    before = tree(folder)
    ok(histmig(scratch, "move", str(app), str(app2), "--apply"))
    listed = json.loads(history(cl, scratch, fake_api).check().stdout)
    assert [(e["sessionId"], e["cwd"]) for e in listed] == [(sid, str(app2))]
    manifest = json.loads((messages.parent / f"{sid}.json").read_bytes())
    assert manifest["cwd"] == manifest["workspace_root"] == str(app2)
    ok(histmig(scratch, "undo"))
    assert tree(folder) == before
    ok(histmig(scratch, "move", str(app), str(app2), "--apply"))
    first = continued(cl, scratch, fake_api, sid, app2, "CL-MOVE-AFTER")
    assert carried(first, "CL-MOVE-ONE")
