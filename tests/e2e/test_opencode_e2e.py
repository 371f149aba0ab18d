"""Issue 17 acceptance for OpenCode (tests/e2e/opencode_client.py, the version tests/e2e/versions.py pins)
against the fake API (Anthropic Messages through ``opencode.json``'s ``anthropic`` provider baseURL).

After ``mv app app2`` + ``histmig move app app2 --apply``, ``opencode run -c`` in app2 continues the
recorded session and the request carries the earlier turns; ``undo`` restores every row it changed.
Both a plain folder (project ``global``) and a git repository (project = its root commit).
"""
from __future__ import annotations

import json
import sqlite3
import subprocess

import pytest

from .clients import carried, claude_setup, codex_setup, run_claude, run_codex
from .histmig_run import histmig, new_session_id, shown
from .opencode_client import MODEL, db_path, opencode_setup, run_opencode

pytestmark = pytest.mark.e2e
CODEX_ARGS = ("--disable", "responses_websockets")


def rows(scratch) -> dict:
    con = sqlite3.connect(db_path(scratch))
    try:
        return {t: con.execute(f"SELECT * FROM {t} ORDER BY 1, 2").fetchall()
                for t in ("project", "project_directory", "session", "message", "part")}
    finally:
        con.close()


def git_repo(path) -> None:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "HOME": str(path), "PATH": "/usr/bin:/bin"}
    for cmd in (["git", "init", "-q"], ["git", "commit", "-q", "--allow-empty", "-m", "root"]):
        subprocess.run(cmd, cwd=path, env=env, check=True, capture_output=True)


@pytest.mark.parametrize("kind", ["plain", "git"])
def test_move_lets_opencode_continue_from_the_new_folder_and_undo_restores_the_rows(opencode, fake_api, scratch,
                                                                                    kind):
    opencode_setup(scratch, fake_api)
    app = scratch.project("app")
    if kind == "git":
        git_repo(app)
    run_opencode(opencode, scratch, fake_api, ["RUN:", "echo", "oc-move-marker"], app).check()
    run_opencode(opencode, scratch, fake_api, ["second", "oc-turn-marker"], app, continue_=True).check()
    [(sid, directory)] = sqlite3.connect(db_path(scratch)).execute("SELECT id, directory FROM session").fetchall()
    assert directory == str(app)
    app2 = app.rename(app.with_name("app2"))

    before = rows(scratch)
    done = histmig(scratch, "move", str(app), str(app2), "--apply")
    assert done.returncode == 0, shown(done)
    moved = rows(scratch)
    [session] = moved["session"]
    assert str(app2) in session and str(app) not in session
    undone = histmig(scratch, "undo")
    assert undone.returncode == 0, shown(undone)
    assert rows(scratch) == before

    again = histmig(scratch, "move", str(app), str(app2), "--apply")
    assert again.returncode == 0, shown(again)
    cont = run_opencode(opencode, scratch, fake_api, ["third", "oc-after-move"], app2, continue_=True).check()
    [req] = [e for e in cont.model_requests("anthropic") if carried(e, "oc-after-move")]
    assert carried(req, "oc-move-marker") and carried(req, "oc-turn-marker")
    ids = [r[0] for r in sqlite3.connect(db_path(scratch)).execute("SELECT id FROM session")]
    assert ids == [sid]                       # continued, not a new session


def test_doctor_repairs_the_orphan_turns_of_a_real_failed_run_and_undo_restores_them(opencode, fake_api, scratch):
    opencode_setup(scratch, fake_api)
    app = scratch.project("app")
    run_opencode(opencode, scratch, fake_api, ["first", "oc-kept-marker"], app).check()
    [(sid,)] = sqlite3.connect(db_path(scratch)).execute("SELECT id FROM session").fetchall()
    app2 = app.rename(app.with_name("app2"))
    failed = run_opencode(opencode, scratch, fake_api, ["failing", "oc-orphan-marker"], app2, session=sid)
    assert failed.returncode != 0 and "UnknownError" in failed.stdout + failed.stderr   # the client's bug

    doctor = json.loads(histmig(scratch, "doctor", "--tool", "opencode", "--json").stdout)
    codes = {f["code"]: f for f in doctor["tools"]["opencode"]}
    assert codes["opencode.cwd-missing"]["data"]["sessions"] == [sid]
    assert codes["opencode.orphan-messages"]["data"]["session"] == sid
    moved = histmig(scratch, "move", str(app), str(app2), "--apply")
    assert moved.returncode == 0, shown(moved)
    before = rows(scratch)
    repaired = histmig(scratch, "doctor", "--tool", "opencode", "--repair", "--apply")
    assert repaired.returncode == 0, shown(repaired)
    after = rows(scratch)
    assert len(after["message"]) == len(before["message"]) - 2 and "oc-orphan-marker" not in str(after["part"])
    undone = histmig(scratch, "undo")
    assert undone.returncode == 0, shown(undone)
    assert rows(scratch) == before

    again = histmig(scratch, "doctor", "--tool", "opencode", "--repair", "--apply")
    assert again.returncode == 0, shown(again)
    cont = run_opencode(opencode, scratch, fake_api, ["next", "oc-after-repair"], app2, continue_=True).check()
    [req] = [e for e in cont.model_requests("anthropic") if carried(e, "oc-after-repair")]
    assert carried(req, "oc-kept-marker") and not carried(req, "oc-orphan-marker")


def test_an_opencode_session_converted_to_codex_and_to_claude_code_is_continued_by_both(clients, opencode, fake_api,
                                                                                        scratch):
    opencode_setup(scratch, fake_api)
    app = scratch.project("app")
    run_opencode(opencode, scratch, fake_api, ["RUN:", "echo", "oc-to-others-marker"], app).check()
    codex_setup(clients, scratch, fake_api)
    claude_setup(scratch)
    done = histmig(scratch, "convert", "--from", "opencode", "--to", "codex", "--apply")
    assert done.returncode == 0, shown(done)
    codex = run_codex(clients, scratch, fake_api, "and then?", app, resume=new_session_id(done), args=CODEX_ARGS).check()
    [req] = codex.model_requests("responses")[:1]
    assert req.status == 200 and carried(req, "oc-to-others-marker")
    calls = [i for i in req.body["input"] if i.get("type") == "function_call"]
    assert [c["name"] for c in calls] == ["exec_command"] and json.loads(calls[0]["arguments"])["cmd"] == \
        "echo oc-to-others-marker"
    done = histmig(scratch, "convert", "--from", "opencode", "--to", "claude-code", "--apply")
    assert done.returncode == 0, shown(done)
    claude = run_claude(clients, scratch, fake_api, "and then?", app, resume=new_session_id(done)).check()
    first = claude.model_requests("anthropic")[0]
    assert first.status == 200 and carried(first, "oc-to-others-marker"), first.error
    uses = [b for m in first.body["messages"] if isinstance(m["content"], list) for b in m["content"]
            if b.get("type") == "tool_use"]
    assert [u["name"] for u in uses] == ["Bash"] and uses[0]["input"]["command"] == "echo oc-to-others-marker"


# ---- convert to OpenCode (rows in session/message/part, tools/opencode/write.py) ------------------------

def session_list(opencode, scratch, fake_api, cwd) -> str:
    """``opencode session list`` in ``cwd``: the client's own listing of the folder's project."""
    from .clients import run
    from .opencode_client import opencode_env
    listed = run([str(opencode), "session", "list"], cwd=cwd, env=opencode_env(scratch, fake_api), api=fake_api)
    assert listed.returncode == 0, listed.stderr[-3000:]
    return listed.stdout + listed.stderr


def anthropic_accepted(run_) -> list:
    reqs = run_.model_requests("anthropic")
    assert reqs and all(r.status == 200 for r in reqs), [r.error for r in reqs]
    return reqs


def blocks(entry, kind: str) -> list[dict]:
    return [b for m in entry.body["messages"] if isinstance(m["content"], list) for b in m["content"]
            if isinstance(b, dict) and b.get("type") == kind]


def converted_and_undone(scratch, source: str) -> str:
    """``convert --apply``, ``undo`` (the rows are exactly as before), then ``convert`` again: the new id."""
    before = rows(scratch)
    done = histmig(scratch, "convert", "--to", "opencode", "--from", source, "--apply")
    assert done.returncode == 0, shown(done)
    assert len(rows(scratch)["session"]) == len(before["session"]) + 1
    undone = histmig(scratch, "undo")
    assert undone.returncode == 0, shown(undone)
    assert rows(scratch) == before                      # exactly the inserted rows went
    done = histmig(scratch, "convert", "--to", "opencode", "--from", source, "--apply")
    assert done.returncode == 0, shown(done)
    new_id = new_session_id(done)
    assert new_id.startswith("ses_") and f"opencode run -s {new_id}" in done.stdout
    return new_id


def undo_keeps_the_continued_session(scratch, new_id: str) -> None:
    kept = histmig(scratch, "undo")
    assert kept.returncode != 0 and "kept-continued" in kept.stdout + kept.stderr, shown(kept)
    assert new_id in str(rows(scratch)["session"])


def test_codex_session_with_a_tool_call_converted_to_opencode_is_listed_continued_and_undone(
        opencode, clients, fake_api, scratch):
    opencode_setup(scratch, fake_api)
    session_list(opencode, scratch, fake_api, scratch.project("elsewhere"))      # the client creates its database
    codex_setup(clients, scratch, fake_api)
    app = scratch.project("app")
    run_codex(clients, scratch, fake_api, "RUN: echo oc-cvt-codex", app, args=CODEX_ARGS).check()
    new_id = converted_and_undone(scratch, "codex")
    assert new_id in session_list(opencode, scratch, fake_api, app)
    again = histmig(scratch, "convert", "--to", "opencode", "--from", "codex", "--apply")
    assert again.returncode == 0 and "already converted" in again.stdout, shown(again)

    cont = run_opencode(opencode, scratch, fake_api, ["what", "did", "it", "print"], app, session=new_id).check()
    first = [r for r in anthropic_accepted(cont) if carried(r, "what did it print")][0]
    assert carried(first, "oc-cvt-codex") and "fakeenc1" not in json.dumps(first.body["messages"])
    uses = blocks(first, "tool_use")
    assert [u["name"] for u in uses] == ["bash"] and uses[0]["input"]["command"] == "echo oc-cvt-codex"
    assert [r["tool_use_id"] for r in blocks(first, "tool_result")] == [uses[0]["id"]]
    assert [s[0] for s in rows(scratch)["session"]].count(new_id) == 1      # continued, not a new session
    undo_keeps_the_continued_session(scratch, new_id)


def test_claude_session_with_thinking_converted_to_opencode_replays_the_signed_thinking(opencode, clients, fake_api,
                                                                                       scratch):
    opencode_setup(scratch, fake_api)
    session_list(opencode, scratch, fake_api, scratch.project("elsewhere"))
    claude_setup(scratch)
    # the model OpenCode asks: its steps replay a thinking block only to the model that made it
    (scratch.claude_dir / "settings.json").write_text(json.dumps({"model": MODEL.split("/", 1)[1]}))
    app = scratch.project("app")
    run_claude(clients, scratch, fake_api, "RUN: echo oc-cvt-claude", app).check()
    new_id = converted_and_undone(scratch, "claude-code")
    assert '"signature"' in str(rows(scratch)["part"])
    assert new_id in session_list(opencode, scratch, fake_api, app)

    cont = run_opencode(opencode, scratch, fake_api, ["and", "then"], app, continue_=True).check()
    first = [r for r in anthropic_accepted(cont) if carried(r, "and then")][0]
    assert carried(first, "oc-cvt-claude")
    assert [u["name"] for u in blocks(first, "tool_use")] == ["bash"]
    thinking = blocks(first, "thinking")
    assert thinking and thinking[0]["signature"]       # checked by the fake API: the request was accepted
    assert [s[0] for s in rows(scratch)["session"]].count(new_id) == 1
    undo_keeps_the_continued_session(scratch, new_id)
