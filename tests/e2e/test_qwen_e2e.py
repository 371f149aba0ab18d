"""Issue 16 acceptance for Qwen Code (tests/e2e/versions.py pins it) against the fake API's Chat Completions.

A session recorded in ``W/app``; the folder renamed to ``W/app2``: Qwen no longer finds it (``-r <id>``
says "No saved session found"). After ``histmig move W/app W/app2 --apply`` ``qwen -r <id>`` continues it
from ``W/app2`` and the request carries the earlier turns; ``undo`` restores every byte and mtime.
"""
from __future__ import annotations

import json
import os

import pytest

from histmig.tools.qwen.adapter import qwen_slug
from .clients import (carried, claude_setup, claude_transcripts, codex_setup, run_claude,
                      run_codex)
from .histmig_run import histmig, new_session_id, ok, shown
from .qwen_client import conversation_requests, list_sessions, qwen_home, run_qwen, sessions

pytestmark = pytest.mark.e2e
WS = ("--disable", "responses_websockets")


def tree(root) -> dict:
    """Every file under ``root``: bytes and mtime."""
    return {str(p): (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(root.rglob("*")) if p.is_file()}


def record_session(qwen, scratch, api, app) -> str:
    run_qwen(qwen, scratch, api, "first turn QW-ONE", app).check()
    run_qwen(qwen, scratch, api, "RUN: echo qw-tool-marker", app, continue_=True).check()
    files = sessions(scratch)
    assert len(files) == 1, files
    return files[0].stem


def test_move_lets_qwen_resume_by_id_from_the_new_folder_and_undo_restores(qwen, fake_api, scratch):
    app = scratch.project("app")
    sid = record_session(qwen, scratch, fake_api, app)
    app2 = app.rename(app.with_name("app2"))
    projects = qwen_home(scratch) / "projects"
    before = tree(projects)

    done = ok(histmig(scratch, "move", str(app), str(app2), "--apply"))
    moved = next(p for p in sessions(scratch) if p.stem == sid)
    assert moved.parent.parent.name == qwen_slug(str(app2))
    cwds = {json.loads(line)["cwd"] for line in moved.read_bytes().splitlines()}
    assert cwds == {str(app2)}, cwds
    ok(histmig(scratch, "undo"))
    assert tree(projects) == before, shown(done)

    ok(histmig(scratch, "move", str(app), str(app2), "--apply"))
    listed = list_sessions(qwen, scratch, fake_api, app2).check()
    assert "QW-ONE" in listed.stdout + listed.stderr
    after = run_qwen(qwen, scratch, fake_api, "after the move QW-AFTER", app2, resume=sid).check()
    reqs = conversation_requests(after)
    assert reqs and all(r.status == 200 for r in after.model_requests("chat")), [r.error for r in reqs]
    first = reqs[0]
    assert carried(first, "QW-ONE") and carried(first, "qw-tool-marker") and carried(first, "QW-AFTER")
    roles = [m["role"] for m in first.body["messages"]]
    assert "tool" in roles and roles.count("user") >= 3, roles


def test_without_the_move_qwen_finds_nothing_in_the_new_folder(qwen, fake_api, scratch):
    """The failure the move fixes (docs/qwen.md): the session is there but Qwen does not find it."""
    app = scratch.project("app")
    sid = record_session(qwen, scratch, fake_api, app)
    app2 = app.rename(app.with_name("app2"))
    res = run_qwen(qwen, scratch, fake_api, "after mv", app2, resume=sid)
    assert res.returncode != 0 and "No saved session found" in res.stdout + res.stderr
    assert not conversation_requests(res)
    # histmig names it: doctor sees the recorded folder is gone and prints the move that fixes it
    doc = histmig(scratch, "doctor", "--tool", "qwen")
    assert doc.returncode != 0 and "qwen.cwd-missing" in doc.stdout and f"move {app} " in doc.stdout, shown(doc)
    # Qwen made a folder for app2 when it started there: the move merges the session into it
    ok(histmig(scratch, "move", str(app), str(app2), "--apply"))
    again = run_qwen(qwen, scratch, fake_api, "merged QW-MERGED", app2, resume=sid).check()
    assert any(carried(r, "QW-ONE") for r in conversation_requests(again))
    assert os.path.isdir(qwen_home(scratch) / "projects")


# -- convert ----------------------------------------------------------------------------------------

def chat_messages(entry) -> list[dict]:
    return entry.body["messages"]


def test_codex_session_with_a_tool_call_converted_to_qwen_is_listed_and_continued(qwen, clients, fake_api, scratch):
    codex_setup(clients, scratch, fake_api)
    app = scratch.project("app")
    run_codex(clients, scratch, fake_api, "RUN: echo qw-cvt-codex", app, args=WS).check()
    done = ok(histmig(scratch, "convert", "--to", "qwen", "--from", "codex", "--apply"))
    assert "reasoning (codex: bound to its provider)" in done.stdout
    new_id = new_session_id(done)
    listed = list_sessions(qwen, scratch, fake_api, app).check()
    assert "RUN: echo qw-cvt-codex" in listed.stdout + listed.stderr
    after = run_qwen(qwen, scratch, fake_api, "what did it print", app, resume=new_id).check()
    assert all(r.status == 200 for r in after.model_requests("chat")), [r.error for r in after.model_requests("chat")]
    msgs = chat_messages(conversation_requests(after)[0])
    calls = [c for m in msgs if m["role"] == "assistant" for c in m.get("tool_calls") or []]
    assert [c["function"]["name"] for c in calls] == ["run_shell_command"]
    assert json.loads(calls[0]["function"]["arguments"]) == {"command": "echo qw-cvt-codex"}
    assert any(m["role"] == "tool" and m["tool_call_id"] == calls[0]["id"] for m in msgs)
    assert "fakeenc1" not in json.dumps(msgs)    # Codex's encrypted reasoning is never replayed


def test_claude_session_with_thinking_converted_to_qwen_is_continued_without_the_signature(qwen, clients, fake_api,
                                                                                           scratch):
    claude_setup(scratch)
    app = scratch.project("app")
    run_claude(clients, scratch, fake_api, "RUN: echo qw-cvt-claude", app).check()
    [transcript] = claude_transcripts(scratch)
    assert b'"signature"' in transcript.read_bytes()
    done = ok(histmig(scratch, "convert", "--to", "qwen", "--from", "claude-code", "--apply"))
    new_id = new_session_id(done)
    written = next(p for p in sessions(scratch) if p.stem == new_id)
    assert b"signature" not in written.read_bytes() and b'"thought"' not in written.read_bytes()
    assert all("usageMetadata" in json.loads(x) for x in written.read_bytes().splitlines()
               if json.loads(x)["type"] == "assistant")
    after = run_qwen(qwen, scratch, fake_api, "and then", app, resume=new_id).check()
    assert all(r.status == 200 for r in after.model_requests("chat"))
    first = conversation_requests(after)[0]
    assert carried(first, "qw-cvt-claude") and not carried(first, "fakesig1")
    calls = [c for m in chat_messages(first) if m["role"] == "assistant" for c in m.get("tool_calls") or []]
    assert [c["function"]["name"] for c in calls] == ["run_shell_command"]


def test_qwen_session_converted_to_codex_and_claude_is_continued_by_them(qwen, clients, fake_api, scratch):
    app = scratch.project("app")
    record_session(qwen, scratch, fake_api, app)
    codex_setup(clients, scratch, fake_api)
    to_codex = ok(histmig(scratch, "convert", "--to", "codex", "--from", "qwen", "--apply"))
    by_id = run_codex(clients, scratch, fake_api, "follow-up", app, resume=new_session_id(to_codex), args=WS)
    assert by_id.returncode == 0, by_id.stderr[-3000:]
    req = by_id.model_requests("responses")[0]
    assert req.status == 200 and carried(req, "QW-ONE") and carried(req, "qw-tool-marker"), req.error
    calls = [i for i in req.body["input"] if i.get("type") == "function_call"]
    assert [c["name"] for c in calls] == ["exec_command"] and "qw-tool-marker" in calls[0]["arguments"]
    claude_setup(scratch)
    to_claude = ok(histmig(scratch, "convert", "--to", "claude-code", "--from", "qwen", "--apply"))
    run = run_claude(clients, scratch, fake_api, "follow-up", app, resume=new_session_id(to_claude)).check()
    first = run.model_requests("anthropic")[0]
    assert first.status == 200 and carried(first, "QW-ONE") and carried(first, "qw-tool-marker"), first.error
    uses = [b for m in first.body["messages"] if isinstance(m["content"], list) for b in m["content"]
            if b.get("type") == "tool_use"]
    assert [u["name"] for u in uses] == ["Bash"] and "qw-tool-marker" in uses[0]["input"]["command"]
