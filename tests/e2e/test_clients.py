"""The real Codex and Claude Code clients, offline, against the fake API.

(1) what they record is listed by ``histmig scan`` and rendered by ``histmig show``;
(2) resuming carries the earlier turns (the harness works);
(3) the problems histmig solves, reproduced: a provider switch or a renamed project folder loses
    the history. Later issues turn (3) green with histmig.
"""
from __future__ import annotations

import json
import sqlite3
import subprocess
import sys

import pytest

from .clients import (CUSTOM_PROVIDER, carried, claude_transcripts, codex_session_id, codex_setup,
                      run_claude, run_codex, write_codex_config)
from .fake_api import ANSWER_PREFIX
from . import tui

pytestmark = pytest.mark.e2e


def histmig(scratch, *args: str) -> subprocess.CompletedProcess:
    homes = ["--codex-home", str(scratch.codex_home), "--claude-home", str(scratch.claude_dir),
             "--state-dir", str(scratch.root / "histmig-state")]
    env = {"HOME": str(scratch.home), "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
    return subprocess.run([sys.executable, "-m", "histmig", *homes, *args], capture_output=True,
                          text=True, timeout=60, env=env)


def scan(scratch) -> list[dict]:
    p = histmig(scratch, "scan", "--json")
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)["sessions"]


# -- (1) recorded sessions are listed and rendered -----------------------------------------------

def test_codex_session_is_listed_by_scan_with_cwd_provider_title_and_rendered_by_show(
        clients, scratch, fake_api):
    codex_setup(clients, scratch, fake_api)
    proj = scratch.project("app")
    first = run_codex(clients, scratch, fake_api, "RUN: echo codex-scan-1", proj).check()
    sid = codex_session_id(first)
    found = [s for s in scan(scratch) if s["tool"] == "codex" and s["id"] == sid]
    assert len(found) == 1, scan(scratch)
    assert found[0]["cwd"] == str(proj)
    assert found[0]["provider"] == "openai"
    assert "codex-scan-1" in found[0]["title"]
    shown = histmig(scratch, "show", sid)
    assert shown.returncode == 0, shown.stderr
    assert "RUN: echo codex-scan-1" in shown.stdout and ANSWER_PREFIX in shown.stdout


def test_claude_session_is_listed_by_scan_with_cwd_and_title_and_rendered_by_show(clients, scratch, fake_api):
    proj = scratch.project("app")
    run_claude(clients, scratch, fake_api, "RUN: echo claude-scan-1", proj).check()
    [transcript] = claude_transcripts(scratch)
    sid = transcript.stem
    found = [s for s in scan(scratch) if s["tool"] == "claude-code" and s["id"] == sid]
    assert len(found) == 1, scan(scratch)
    assert found[0]["cwd"] == str(proj)
    assert found[0]["provider"] in (None, "anthropic")
    assert "claude-scan-1" in found[0]["title"]
    shown = histmig(scratch, "show", sid)
    assert shown.returncode == 0, shown.stderr
    assert "RUN: echo claude-scan-1" in shown.stdout and ANSWER_PREFIX in shown.stdout


# -- (2) resume carries the earlier turns --------------------------------------------------------

def test_codex_exec_resume_last_sends_earlier_prompt_reasoning_and_tool_call(clients, scratch, fake_api):
    codex_setup(clients, scratch, fake_api)
    proj = scratch.project("app")
    first = run_codex(clients, scratch, fake_api, "RUN: echo codex-turn-1", proj).check()
    reasoning, call = first.model_requests("responses")[0].reply
    second = run_codex(clients, scratch, fake_api, "second codex turn", proj, resume="last").check()
    [req] = second.model_requests("responses")
    assert req.status == 200 and req.provider == "openai"
    for earlier in ("RUN: echo codex-turn-1", reasoning["encrypted_content"], call["call_id"]):
        assert carried(req, earlier), earlier
    assert codex_session_id(second) == codex_session_id(first)


def test_codex_exec_resume_by_id_sends_earlier_prompt(clients, scratch, fake_api):
    codex_setup(clients, scratch, fake_api)
    proj = scratch.project("app")
    sid = codex_session_id(run_codex(clients, scratch, fake_api, "codex-by-id-1", proj).check())
    run_codex(clients, scratch, fake_api, "another session", proj).check()
    second = run_codex(clients, scratch, fake_api, "codex-by-id-2", proj, resume=sid).check()
    [req] = second.model_requests("responses")
    assert carried(req, "codex-by-id-1") and not carried(req, "another session")


def test_claude_p_continue_sends_earlier_prompt_signed_thinking_and_tool_use(clients, scratch, fake_api):
    proj = scratch.project("app")
    first = run_claude(clients, scratch, fake_api, "RUN: echo claude-turn-1", proj).check()
    thinking, _text, tool_use = first.model_requests("anthropic")[0].reply
    second = run_claude(clients, scratch, fake_api, "second claude turn", proj, continue_=True).check()
    [req] = second.model_requests("anthropic")
    assert req.status == 200
    for earlier in ("RUN: echo claude-turn-1", thinking["signature"], tool_use["id"]):
        assert carried(req, earlier), earlier


def test_claude_p_resume_by_id_sends_that_sessions_history(clients, scratch, fake_api):
    proj = scratch.project("app")
    run_claude(clients, scratch, fake_api, "claude-by-id-1", proj).check()
    [transcript] = claude_transcripts(scratch)
    run_claude(clients, scratch, fake_api, "another session", proj).check()
    second = run_claude(clients, scratch, fake_api, "claude-by-id-2", proj, resume=transcript.stem).check()
    [req] = second.model_requests("anthropic")
    assert carried(req, "claude-by-id-1") and not carried(req, "another session")


def test_interactive_claude_session_is_cli_entrypoint_and_listed_in_resume_picker(clients, scratch, fake_api, tmux):
    proj = scratch.project("app")
    run_claude(clients, scratch, fake_api, "print-mode-prompt", proj).check()
    rec = tui.record_interactive(clients, scratch, fake_api, proj, ["typed-prompt-1"])
    assert rec.returncode == 0
    typed = [p for p in claude_transcripts(scratch) if "typed-prompt-1" in p.read_text()]
    assert len(typed) == 1 and '"entrypoint":"cli"' in typed[0].read_text()
    screen = tui.resume_picker(clients, scratch, fake_api, proj)
    assert "typed-prompt-1" in screen
    assert "print-mode-prompt" not in screen  # sdk-cli sessions are hidden from the picker


# -- (3) the problems histmig solves, reproduced ---------------------------------------------------

def test_codex_provider_switch_makes_resume_last_start_without_old_history(clients, scratch, fake_api):
    codex_setup(clients, scratch, fake_api)
    proj = scratch.project("app")
    run_codex(clients, scratch, fake_api, "made-under-openai", proj).check()
    write_codex_config(scratch, fake_api, provider=CUSTOM_PROVIDER)
    after = run_codex(clients, scratch, fake_api, "after the switch", proj, resume="last")
    [req] = after.model_requests("responses")
    assert req.provider == CUSTOM_PROVIDER
    assert not carried(req, "made-under-openai")


def test_codex_renamed_project_folder_makes_resume_last_start_without_old_history(clients, scratch, fake_api):
    codex_setup(clients, scratch, fake_api)
    proj = scratch.project("app")
    run_codex(clients, scratch, fake_api, "made-in-old-folder", proj).check()
    moved = proj.rename(proj.with_name("app-moved"))
    after = run_codex(clients, scratch, fake_api, "after the move", moved, resume="last")
    [req] = after.model_requests("responses")
    assert not carried(req, "made-in-old-folder")


def test_claude_renamed_project_folder_makes_continue_start_without_old_history(clients, scratch, fake_api):
    proj = scratch.project("app")
    run_claude(clients, scratch, fake_api, "made-in-old-folder", proj).check()
    moved = proj.rename(proj.with_name("app-moved"))
    after = run_claude(clients, scratch, fake_api, "after the move", moved, continue_=True)
    [req] = after.model_requests("anthropic")
    assert not carried(req, "made-in-old-folder")


def test_codex_provider_flip_of_files_and_db_only_is_refused_for_foreign_encrypted_content(
        clients, scratch, fake_api):
    """Flipping provider fields (rollout + threads row) finds the session, but the old reasoning
    items' ``encrypted_content`` was issued to the other provider: the API refuses the request."""
    codex_setup(clients, scratch, fake_api)
    proj = scratch.project("app")
    run_codex(clients, scratch, fake_api, "RUN: echo before-flip", proj).check()
    write_codex_config(scratch, fake_api, provider=CUSTOM_PROVIDER)
    [rollout] = (scratch.codex_home / "sessions").rglob("*.jsonl")
    data = rollout.read_bytes()
    for key in (b'"model_provider":', b'"model_provider_id":'):
        data = data.replace(key + b'"openai"', key + b'"' + CUSTOM_PROVIDER.encode() + b'"')
    rollout.write_bytes(data)
    with sqlite3.connect(scratch.codex_home / "state_5.sqlite") as db:
        db.execute("UPDATE threads SET model_provider = ?", (CUSTOM_PROVIDER,))
    db.close()
    after = run_codex(clients, scratch, fake_api, "after the flip", proj, resume="last")
    [req] = after.model_requests("responses")
    assert carried(req, "before-flip")  # the session was found and its history sent ...
    assert req.status == 400 and "invalid_encrypted_content" in req.error  # ... and refused
    assert after.returncode != 0
