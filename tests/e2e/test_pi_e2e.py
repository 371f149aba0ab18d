"""Issue 16 acceptance for Pi (tests/e2e/pi_client.py, the version tests/e2e/versions.py pins) against the
fake API (Anthropic Messages through a ``models.json`` custom provider).

After ``mv app app2`` Pi starts an empty session in app2 (its folder is keyed by the cwd's slug); after
``histmig move app app2 --apply`` ``pi -c -p`` continues the recorded session from app2 and the request
carries the earlier turns; ``undo`` restores every byte and mtime.
"""
from __future__ import annotations

import json

import pytest

from .clients import carried, claude_setup, codex_setup, run_claude, run_codex
from .histmig_run import histmig, new_session_id, shown
from .pi_client import agent_dir, pi_sessions, pi_setup, run_pi

pytestmark = pytest.mark.e2e
CODEX_ARGS = ("--disable", "responses_websockets")


def files(scratch) -> dict:
    root = agent_dir(scratch) / "sessions"
    return {str(p): (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(root.rglob("*")) if p.is_file()}


def test_move_lets_pi_continue_from_the_new_folder_and_undo_restores_everything(pi, fake_api, scratch):
    pi_setup(scratch, fake_api)
    app = scratch.project("app")
    run_pi(pi, scratch, fake_api, "RUN: echo pi-move-marker", app).check()
    run_pi(pi, scratch, fake_api, "second pi-turn-marker", app, continue_=True).check()
    app2 = app.rename(app.with_name("app2"))

    doctor = json.loads(histmig(scratch, "doctor", "--tool", "pi", "--json").stdout)
    [hidden] = [f for f in doctor["tools"]["pi"] if f["code"] == "pi.cwd-missing"]
    assert hidden["data"]["cwd"] == str(app) and f"histmig move {app} " in hidden["fix"]
    before = files(scratch)
    done = histmig(scratch, "move", str(app), str(app2), "--apply")
    assert done.returncode == 0, shown(done)
    [moved] = pi_sessions(scratch)
    assert moved.parent.name == "--" + str(app2)[1:].replace("/", "-") + "--"
    assert json.loads(moved.read_bytes().splitlines()[0])["cwd"] == str(app2)
    undone = histmig(scratch, "undo")
    assert undone.returncode == 0, shown(undone)
    assert files(scratch) == before

    again = histmig(scratch, "move", str(app), str(app2), "--apply")
    assert again.returncode == 0, shown(again)
    listed = json.loads(histmig(scratch, "scan", "--cwd", str(app2), "--json").stdout)["sessions"]
    assert [s["tool"] for s in listed] == ["pi"]
    cont = run_pi(pi, scratch, fake_api, "after the move", app2, continue_=True).check()
    [req] = cont.model_requests("anthropic")
    assert req.status == 200 and carried(req, "pi-move-marker") and carried(req, "pi-turn-marker")
    assert len(pi_sessions(scratch)) == 1            # continued, not a new session
    doctor = json.loads(histmig(scratch, "doctor", "--tool", "pi", "--json").stdout)
    assert not [f for f in doctor["tools"].get("pi", []) if f["code"] == "pi.cwd-missing"]


def test_without_the_move_pi_starts_empty_in_the_moved_folder(pi, fake_api, scratch):
    """The failure the move fixes (docs/pi.md): ``pi -c`` in the renamed folder sends no earlier turn."""
    pi_setup(scratch, fake_api)
    app = scratch.project("app")
    run_pi(pi, scratch, fake_api, "hello pi-lost-marker", app).check()
    app2 = app.rename(app.with_name("app2"))
    cont = run_pi(pi, scratch, fake_api, "after mv only", app2, continue_=True).check()
    [req] = cont.model_requests("anthropic")
    assert not carried(req, "pi-lost-marker")


# ---- convert --to pi, and from Pi to Codex and Claude Code -------------------------------------------

def test_codex_and_claude_sessions_converted_to_pi_are_continued_by_pi(clients, pi, fake_api, scratch):
    """A Codex session with a tool call and a Claude Code session with signed thinking, each converted with
    ``convert --to pi --apply``, are found by Pi by full id and continued; every request is accepted."""
    codex_setup(clients, scratch, fake_api)
    claude_setup(scratch)
    cx, cl = scratch.project("cx"), scratch.project("cl")
    run_codex(clients, scratch, fake_api, "RUN: echo codex-to-pi-marker", cx, args=CODEX_ARGS).check()
    run_claude(clients, scratch, fake_api, "RUN: echo claude-to-pi-marker", cl).check()
    pi_setup(scratch, fake_api)
    for source, folder, marker in (("codex", cx, "codex-to-pi-marker"), ("claude-code", cl, "claude-to-pi-marker")):
        done = histmig(scratch, "convert", "--from", source, "--to", "pi", "--apply")
        assert done.returncode == 0, shown(done)
        new_id = new_session_id(done)
        listed = json.loads(histmig(scratch, "scan", "--tool", "pi", "--json").stdout)["sessions"]
        assert new_id in {s["id"] for s in listed}
        cont = run_pi(pi, scratch, fake_api, f"what did {source} run?", folder, session=new_id).check()
        reqs = cont.model_requests("anthropic")
        assert reqs and all(r.status == 200 for r in reqs), [r.error for r in reqs]
        body = reqs[0].body
        uses = [b for m in body["messages"] if isinstance(m["content"], list) for b in m["content"]
                if b.get("type") == "tool_use"]
        assert [u["name"] for u in uses] == ["bash"] and marker in uses[0]["input"]["command"]
        assert not any(b.get("type") == "thinking" for m in body["messages"] if isinstance(m["content"], list)
                       for b in m["content"])           # a thinking block only goes back to its own provider
        assert len([p for p in pi_sessions(scratch) if p.parent.name.endswith(folder.name + "--")]) == 1


def test_a_pi_session_converted_to_codex_and_to_claude_code_is_continued_by_both(clients, pi, fake_api, scratch):
    pi_setup(scratch, fake_api)
    app = scratch.project("app")
    run_pi(pi, scratch, fake_api, "RUN: echo pi-to-others-marker", app).check()
    codex_setup(clients, scratch, fake_api)
    claude_setup(scratch)
    done = histmig(scratch, "convert", "--from", "pi", "--to", "codex", "--apply")
    assert done.returncode == 0, shown(done)
    codex = run_codex(clients, scratch, fake_api, "and then?", app, resume=new_session_id(done), args=CODEX_ARGS).check()
    [req] = codex.model_requests("responses")[:1]
    assert req.status == 200 and carried(req, "pi-to-others-marker")
    calls = [i for i in req.body["input"] if i.get("type") == "function_call"]
    assert [c["name"] for c in calls] == ["exec_command"] and json.loads(calls[0]["arguments"]) == \
        {"cmd": "echo pi-to-others-marker"}
    done = histmig(scratch, "convert", "--from", "pi", "--to", "claude-code", "--apply")
    assert done.returncode == 0, shown(done)
    claude = run_claude(clients, scratch, fake_api, "and then?", app, resume=new_session_id(done)).check()
    first = claude.model_requests("anthropic")[0]
    assert first.status == 200 and carried(first, "pi-to-others-marker"), first.error
    uses = [b for m in first.body["messages"] if isinstance(m["content"], list) for b in m["content"]
            if b.get("type") == "tool_use"]
    assert [u["name"] for u in uses] == ["Bash"] and uses[0]["input"]["command"] == "echo pi-to-others-marker"
    assert not carried(first, fake_api.signer.thinking_signature("I will run echo pi-to-others-marker."))
