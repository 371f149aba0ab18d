"""Issue #7 acceptance with the real clients (Codex 0.171.0, Claude Code 2.1.197) against the
loopback fake API, which validates history the way the real services do (tool_use/tool_result
pairing, thinking signatures, encrypted reasoning bound to its provider)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .clients import (claude_setup, claude_transcripts, codex_session_id, codex_setup, run_claude, run_codex)
from .fake_rules import check_anthropic
from .histmig_run import new_session_id

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[2]
WS = ("--disable", "responses_websockets")


def histmig(scratch, *args: str) -> subprocess.CompletedProcess:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(scratch.home),
           "CODEX_HOME": str(scratch.codex_home), "CLAUDE_CONFIG_DIR": str(scratch.claude_dir),
           "MINI_CC_HOME": str(scratch.home / ".mini_cc"),
           "HISTMIG_STATE_DIR": str(scratch.root / "histmig-state"), "LANG": "C.UTF-8"}
    return subprocess.run([sys.executable, "-m", "histmig", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)


def anthropic_positions(body: dict, prompt: str, command: str) -> tuple[int, int, int]:
    """Indexes (in message order) of the user prompt, the Bash tool_use and its tool_result."""
    prompt_at = use_at = result_at = -1
    use_id = None
    for i, m in enumerate(body["messages"]):
        blocks = m["content"] if isinstance(m["content"], list) else [{"type": "text", "text": m["content"]}]
        for b in blocks:
            if b.get("type") == "text" and prompt in b.get("text", "") and m["role"] == "user" and prompt_at < 0:
                prompt_at = i
            if b.get("type") == "tool_use" and b.get("name") == "Bash" and command in b["input"].get("command", ""):
                use_at, use_id = i, b["id"]
            if b.get("type") == "tool_result" and b.get("tool_use_id") == use_id:
                result_at = i
    return prompt_at, use_at, result_at


def test_codex_session_converted_to_claude_resumes_with_prompt_tool_call_and_result(clients, fake_api, scratch):
    codex_setup(clients, scratch, fake_api)
    project = scratch.project("app")
    run_codex(clients, scratch, fake_api, "RUN: echo cvt-marker-1", project, args=WS).check()
    done = histmig(scratch, "convert", "--to", "claude-code", "--from", "codex", "--apply")
    assert done.returncode == 0, done.stderr
    assert "reasoning (codex: encrypted, bound to its provider)" in done.stdout
    new_id = new_session_id(done)
    [transcript] = claude_transcripts(scratch)
    assert transcript.stem == new_id
    claude_setup(scratch)
    run = run_claude(clients, scratch, fake_api, "What did the command print?", project, resume=new_id).check()
    [first, *_] = run.model_requests("anthropic")
    assert first.status == 200, first.error
    p, u, r = anthropic_positions(first.body, "RUN: echo cvt-marker-1", "echo cvt-marker-1")
    assert 0 <= p < u < r, (p, u, r)
    assert not any(b.get("type") == "thinking" for m in first.body["messages"] if isinstance(m["content"], list)
                   for b in m["content"])


def test_claude_session_converted_to_codex_resumes_under_a_custom_provider(clients, fake_api, scratch):
    claude_setup(scratch)
    project = scratch.project("app")
    run_claude(clients, scratch, fake_api, "RUN: echo cvt-marker-2", project).check()
    codex_setup(clients, scratch, fake_api, provider="my-provider")
    done = histmig(scratch, "convert", "--to", "codex", "--from", "claude-code", "--apply")
    assert done.returncode == 0, done.stderr
    assert "thinking (signature bound to Anthropic)" in done.stdout
    new_id = new_session_id(done)
    by_id = run_codex(clients, scratch, fake_api, "Follow-up by id", project, resume=new_id, args=WS)
    assert by_id.returncode == 0, by_id.stderr[-3000:]
    assert codex_session_id(by_id) == new_id
    req = next(e for e in by_id.model_requests("responses"))
    assert req.provider == "my-provider" and req.status == 200, req.error
    items = req.body["input"]
    calls = [i for i in items if i.get("type") == "function_call" and i.get("name") == "exec_command"]
    assert calls and json.loads(calls[0]["arguments"]) == {"cmd": "echo cvt-marker-2"}
    assert any(i.get("type") == "function_call_output" and i.get("call_id") == calls[0]["call_id"] for i in items)
    last = run_codex(clients, scratch, fake_api, "Follow-up by --last", project, resume="last", args=WS)
    assert last.returncode == 0 and codex_session_id(last) == new_id
    assert any("cvt-marker-2" in json.dumps(e.body) for e in last.model_requests("responses"))


def test_mini_cc_to_claude_resumes_and_claude_to_mini_cc_passes_the_api_rules(clients, fake_api, scratch):
    project = scratch.project("mini")
    sig = fake_api.signer.thinking_signature("check first")
    sid = "6ec7a169-ab5d-4f12-bf8d-16f92f2c50f4"
    u = [f"10000000-0000-4000-8000-00000000000{i}" for i in range(4)]
    recs = [
        {"type": "user", "uuid": u[0], "parentUuid": None, "sessionId": sid, "timestamp": "2026-10-22T09:55:53.674+00:00",
         "cwd": str(project), "message": {"role": "user", "content": "RUN: echo mini-marker"}},
        {"type": "assistant", "uuid": u[1], "parentUuid": u[0], "sessionId": sid, "timestamp": "2026-10-22T09:55:54.000+00:00",
         "cwd": str(project), "message": {"role": "assistant", "content": [
             {"type": "thinking", "thinking": "check first", "signature": sig},
             {"type": "tool_use", "id": "toolu_m1", "name": "Bash", "input": {"command": "echo mini-marker"}}]},
         "usage": {"input_tokens": 10, "output_tokens": 5}},
        {"type": "user", "uuid": u[2], "parentUuid": u[1], "sessionId": sid, "timestamp": "2026-10-22T09:55:55.000+00:00",
         "cwd": str(project), "message": {"role": "user", "content": [
             {"type": "tool_result", "tool_use_id": "toolu_m1", "content": "mini-marker"}]}},
        {"type": "assistant", "uuid": u[3], "parentUuid": u[2], "sessionId": sid, "timestamp": "2026-10-22T09:55:56.000+00:00",
         "cwd": str(project), "message": {"role": "assistant", "content": [{"type": "text", "text": "It printed mini-marker."}]},
         "usage": {"input_tokens": 10, "output_tokens": 5}},
    ]
    from histmig.core.paths import claude_slug
    f = scratch.home / ".mini_cc" / "projects" / claude_slug(os.path.realpath(project)) / f"{sid}.jsonl"
    f.parent.mkdir(parents=True)
    f.write_text("".join(json.dumps(r) + "\n" for r in recs))
    done = histmig(scratch, "convert", "--to", "claude-code", "--from", "mini-cc", "--apply", "--strict")
    assert done.returncode == 0, done.stdout + done.stderr
    claude_setup(scratch)
    run = run_claude(clients, scratch, fake_api, "And then?", project, resume=new_session_id(done)).check()
    first = run.model_requests("anthropic")[0]
    assert first.status == 200, first.error
    p, u_at, r = anthropic_positions(first.body, "RUN: echo mini-marker", "echo mini-marker")
    assert 0 <= p < u_at < r
    # back: the Claude session (with Claude's own signed thinking) into mini-cc
    run2 = run_claude(clients, scratch, fake_api, "RUN: echo claude-marker", scratch.project("c2")).check()
    assert run2.returncode == 0
    back = histmig(scratch, "convert", "--to", "mini-cc", "--from", "claude-code", "--cwd", str(scratch.project("c2")), "--apply")
    assert back.returncode == 0, back.stdout + back.stderr
    [mini] = [p for p in (scratch.home / ".mini_cc" / "projects").glob("*/*.jsonl") if p.stem != sid]
    messages = [json.loads(ln)["message"] for ln in mini.read_text().splitlines()
                if json.loads(ln).get("type") in ("user", "assistant")]
    assert check_anthropic({"messages": messages}, fake_api.signer) is None
    assert any(b.get("type") == "thinking" for m in messages if isinstance(m["content"], list) for b in m["content"])


def test_converted_claude_session_is_listed_by_the_interactive_resume_picker(clients, fake_api, scratch, tmux):
    from . import tui
    codex_setup(clients, scratch, fake_api)
    project = scratch.project("picked")
    run_codex(clients, scratch, fake_api, "picker-marker-9 please", project, args=WS).check()
    done = histmig(scratch, "convert", "--to", "claude-code", "--from", "codex", "--apply")
    assert done.returncode == 0, done.stderr
    screen = tui.resume_picker(clients, scratch, fake_api, project)
    assert "picker-marker-9" in screen, screen
