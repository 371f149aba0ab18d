"""Issue 16 acceptance for Gemini CLI (tests/e2e/versions.py GEMINI) against the fake API's Gemini protocol.

- move: after ``mv app app2`` the client lists nothing (and claims a new slug); after ``histmig move
  --apply`` ``gemini -r latest -p`` continues in app2 and the request carries the earlier turns; undo
  restores every byte and mtime under ``~/.gemini``.
"""
from __future__ import annotations

import json
import shutil

import pytest

from . import gemini_client as gem
from .clients import carried
from .histmig_run import histmig, ok

pytestmark = pytest.mark.e2e


def settled(scratch, timeout: float = 15.0) -> None:
    """Wait until no Gemini process holds ``projects.json.lock`` (a client may finish its registry write
    after its main output; histmig refuses to write the registry while the lock is fresh)."""
    import time
    lock = gem.gemini_dir(scratch) / "projects.json.lock"
    end = time.monotonic() + timeout
    while lock.exists() and time.monotonic() < end:
        time.sleep(0.1)


def home_state(scratch) -> dict:
    """Every file under ~/.gemini that histmig may touch: bytes and mtime (logs are the client's own)."""
    g = gem.gemini_dir(scratch)
    return {str(p): (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(g.rglob("*"))
            if p.is_file() and "/logs/" not in str(p)}


def test_move_then_the_client_continues_from_the_new_folder_and_undo_restores(gemini, scratch, fake_api):
    gem.setup(scratch)
    app = scratch.project("app")
    gem.run_gemini(gemini, scratch, fake_api, "GEM-ONE remember this", app).check()
    app2 = app.with_name("app2")
    shutil.move(str(app), str(app2))
    lost = gem.run_gemini(gemini, scratch, fake_api, None, app2, args=("--list-sessions",)).check()
    assert "GEM-ONE" not in lost.stdout           # the break: a new slug, nothing listed
    settled(scratch)
    before = home_state(scratch)
    ok(histmig(scratch, "move", str(app), str(app2), "--apply"))
    ok(histmig(scratch, "undo"))
    assert home_state(scratch) == before
    ok(histmig(scratch, "move", str(app), str(app2), "--apply"))
    reg = json.loads((gem.gemini_dir(scratch) / "projects.json").read_text())["projects"]
    assert reg == {str(app2): "app"}
    listed = gem.run_gemini(gemini, scratch, fake_api, None, app2, args=("--list-sessions",)).check()
    assert "Available sessions for this project (1)" in listed.stdout, listed.stdout
    run = gem.run_gemini(gemini, scratch, fake_api, "GEM-TWO after the move", app2, resume="latest").check()
    asks = run.model_requests("gemini")
    assert asks and all(e.status == 200 for e in asks), [(e.status, e.error) for e in asks]
    assert any(carried(e, "GEM-ONE remember this") and carried(e, "GEM-TWO") for e in asks)


def plant(scratch, project, sid: str, updated: str, minute: str, prompt: str | None):
    """A session file written as Gemini writes one (docs/specs/gemini.md §8), registry and markers included."""
    from test_gemini_doctor import plant as plant_unit
    from datetime import datetime
    return plant_unit(gem.gemini_dir(scratch), project, sid, updated=datetime.fromisoformat(updated),
                      minute=minute, prompt=prompt)


def doctor(scratch) -> list[dict]:
    p = histmig(scratch, "doctor", "--tool", "gemini", "--json")
    assert p.returncode in (0, 1, 3), p.stderr
    return json.loads(p.stdout)["tools"]["gemini"]


def test_doctor_names_what_the_next_start_deletes_and_its_fix_saves_it(gemini, scratch, fake_api):
    """The real client deletes the unprotected copies doctor named; the protected ones survive."""
    gem.setup(scratch)
    old = "2026-01-01T00:00:00+00:00"
    expired = {n: plant(scratch, scratch.project(n), f"{i}1111111-0000-4000-8000-000000000000", old,
                        "2026-01-01T00-00", f"OLD-{n}") for i, n in enumerate(("ret-a", "ret-b"), 1)}
    from datetime import datetime, timezone
    now = datetime.now(timezone.utc).isoformat()
    real = {n: plant(scratch, scratch.project(n), f"{i}2222222-0000-4000-8000-000000000000", now,
                     "2026-12-01T05-49", f"REAL-{n}") for i, n in enumerate(("stub-a", "stub-b"), 1)}
    stubs = {n: plant(scratch, scratch.project(n), f"{i}2222222-0000-4000-8000-000000000000", now,
                      "2026-12-01T05-50", None) for i, n in enumerate(("stub-a", "stub-b"), 1)}
    found = doctor(scratch)
    named = {p for f in found if f["code"] == "gemini.retention" for p in f["data"]["paths"]}
    assert named == {str(p) for p in expired.values()}
    stubbed = {p for f in found if f["code"] == "gemini.stub-short-id" for p in f["data"]["stubs"]}
    assert stubbed == {str(p) for p in stubs.values()}
    # unprotected: the client's next start in each project deletes what doctor named
    for n in ("ret-a", "stub-a"):
        gem.run_gemini(gemini, scratch, fake_api, None, scratch.project(n), args=("--list-sessions",)).check()
    settled(scratch)
    assert not expired["ret-a"].exists()
    assert not real["stub-a"].exists()         # G1: the stub's short id took the real transcript with it
    # protected by doctor's fixes: the repair deletes the stub, the setting turns retention off
    ok(histmig(scratch, "doctor", "--tool", "gemini", "--repair", "--apply"), 0, 1, 3)   # 1: retention is left
    assert not stubs["stub-b"].exists() and real["stub-b"].exists()
    gem.setup(scratch, {"general": {"sessionRetention": {"enabled": False}}})
    for n in ("ret-b", "stub-b"):
        listed = gem.run_gemini(gemini, scratch, fake_api, None, scratch.project(n), args=("--list-sessions",)).check()
        assert "(1)" in listed.stdout, listed.stdout
    assert expired["ret-b"].exists() and real["stub-b"].exists()


# -- convert --------------------------------------------------------------------------------------

def gemini_body_calls(body: dict) -> tuple[int, int]:
    """functionCall and functionResponse parts in a Gemini request."""
    parts = [p for c in body.get("contents") or [] for p in c.get("parts") or []]
    return sum("functionCall" in p for p in parts), sum("functionResponse" in p for p in parts)


def continue_in_gemini(gemini, scratch, api, project, new_id: str, marker: str):
    listed = gem.run_gemini(gemini, scratch, api, None, project, args=("--list-sessions",)).check()
    assert new_id in listed.stdout, listed.stdout                # survives the next start and is listed
    run = gem.run_gemini(gemini, scratch, api, "What did the command print?", project, resume=new_id).check()
    asks = run.model_requests("gemini")
    assert asks and all(e.status == 200 for e in asks), [(e.status, e.error) for e in asks]
    first = asks[0]
    assert carried(first, marker) and gemini_body_calls(first.body) == (1, 1), first.body
    return first


@pytest.mark.parametrize("source", ["codex", "claude-code"])
def test_a_session_with_tool_calls_converted_to_gemini_is_listed_and_continued(source, clients, gemini, scratch,
                                                                             fake_api):
    from .clients import claude_setup, codex_setup, run_claude, run_codex
    from .histmig_run import new_session_id
    project = scratch.project("app")
    marker = f"RUN: echo gem-cvt-{source}"
    if source == "codex":
        codex_setup(clients, scratch, fake_api)
        run_codex(clients, scratch, fake_api, marker, project, args=("--disable", "responses_websockets")).check()
    else:
        claude_setup(scratch)
        run_claude(clients, scratch, fake_api, marker, project).check()
    done = ok(histmig(scratch, "convert", "--to", "gemini", "--from", source, "--apply"))
    new_id = new_session_id(done)
    gem.setup(scratch)
    first = continue_in_gemini(gemini, scratch, fake_api, project, new_id, marker)
    call = next(p["functionCall"] for c in first.body["contents"] for p in c["parts"] if "functionCall" in p)
    assert call["name"] == "run_shell_command" and f"gem-cvt-{source}" in call["args"]["command"]


@pytest.mark.parametrize("target", ["codex", "claude-code"])
def test_a_gemini_session_converted_is_continued_by_codex_and_claude(target, clients, gemini, scratch, fake_api):
    from .clients import claude_setup, codex_session_id, codex_setup, run_claude, run_codex
    from .histmig_run import new_session_id
    gem.setup(scratch)
    project = scratch.project("app")
    gem.run_gemini(gemini, scratch, fake_api, "RUN: echo from-gemini-tool", project).check()
    done = ok(histmig(scratch, "convert", "--to", target, "--from", "gemini", "--apply"))
    new_id = new_session_id(done)
    if target == "codex":
        codex_setup(clients, scratch, fake_api)
        run = run_codex(clients, scratch, fake_api, "Follow-up", project, resume=new_id,
                        args=("--disable", "responses_websockets")).check()
        assert codex_session_id(run) == new_id
        asks = run.model_requests("responses")
    else:
        claude_setup(scratch)
        run = run_claude(clients, scratch, fake_api, "Follow-up", project, resume=new_id).check()
        asks = run.model_requests("anthropic")
    assert asks and all(e.status == 200 for e in asks), [(e.status, e.error) for e in asks]
    assert carried(asks[0], "RUN: echo from-gemini-tool") and carried(asks[0], "from-gemini-tool")


def test_doctor_repairs_results_stored_twice_and_the_client_then_sends_each_once(gemini, scratch, fake_api):
    """docs/specs/gemini.md §10: a native session with a tool call stores its result twice and a resume
    sends it twice (refused with 400); after ``doctor --repair --apply`` the resume sends one
    functionCall and one functionResponse, with the earlier turns, and is answered; undo puts the
    bytes back."""
    gem.setup(scratch)
    project = scratch.project("app")
    marker = "RUN: echo rep-tool"
    gem.run_gemini(gemini, scratch, fake_api, marker, project).check()
    # the break: a native resume sends the one result twice, and the API (the fake one as the real
    # one is reported to) refuses it with 400
    twice = gem.run_gemini(gemini, scratch, fake_api, "Before the repair", project, resume="latest")
    refused = twice.model_requests("gemini")
    assert twice.returncode != 0 and refused and refused[0].status == 400, (twice.returncode, refused)
    assert gemini_body_calls(refused[0].body) == (1, 2)
    settled(scratch)
    found = [f for f in doctor(scratch) if f["code"] == "gemini.repeated-tool-result"]
    assert len(found) == 1 and found[0]["repairable"], found
    path = found[0]["path"]
    native = open(path, "rb").read()
    ok(histmig(scratch, "doctor", "--tool", "gemini", "--repair", "--apply"), 0, 1)
    ok(histmig(scratch, "undo"))
    assert open(path, "rb").read() == native
    ok(histmig(scratch, "doctor", "--tool", "gemini", "--repair", "--apply"), 0, 1)
    assert not [f for f in doctor(scratch) if f["code"] == "gemini.repeated-tool-result"]
    assert len(open(path, "rb").read()) < len(native)
    run = gem.run_gemini(gemini, scratch, fake_api, "What did the command print?", project, resume="latest").check()
    asks = run.model_requests("gemini")
    assert asks and all(e.status == 200 for e in asks), [(e.status, e.error) for e in asks]
    assert carried(asks[0], marker) and gemini_body_calls(asks[0].body) == (1, 1), asks[0].body
