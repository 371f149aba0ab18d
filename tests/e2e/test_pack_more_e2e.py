"""Issue 19 acceptance for the tools beside Codex and Claude Code (tests/e2e/test_pack_e2e.py has those two):
Copilot CLI, Pi, Gemini CLI, OpenCode, Qwen Code and Cline CLI (quickest first), each the real client against
the fake API.

For each tool: a session recorded under home ``A`` in a project under ``A/code``; ``histmig pack --all -o``;
``histmig unpack --rehome A=B --apply`` into an empty home ``B`` (HOME and the tool's variables at B); the
client lists the session and continues it non-interactively from the re-homed project folder (the resume
commands of tests/e2e/test_<tool>_e2e.py), and the fake API's request log shows the earlier turn
(docs/pack.md). Every client runs in the foreground; Cline's hub daemons are stopped by pid and checked gone.
"""
from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from .clients import Scratch, carried
from .histmig_run import histmig, shown

pytestmark = pytest.mark.e2e


def homes(tmp_path: Path) -> tuple[Scratch, Scratch]:
    return Scratch(tmp_path / "A").create(), Scratch(tmp_path / "B").create()


def code(scratch: Scratch, name: str = "app") -> Path:
    p = scratch.root / "code" / name
    p.mkdir(parents=True, exist_ok=True)
    return p


def carry(a: Scratch, b: Scratch, tool: str, sessions: int = 1) -> None:
    """``pack --all`` in A, ``unpack --rehome A=B --apply`` in B; histmig's own scan then lists the
    session(s) under B/code."""
    bundle = a.root.parent / f"{tool}.tar.zst"
    packed = histmig(a, "pack", "--all", "-o", str(bundle))
    assert packed.returncode == 0 and f"packed {sessions} session(s)" in packed.stdout, shown(packed)
    rehome = f"{a.root}={b.root}"
    dry = histmig(b, "unpack", str(bundle), "--rehome", rehome)
    assert dry.returncode == 0 and "checksums verified" in dry.stdout, shown(dry)
    done = histmig(b, "unpack", str(bundle), "--rehome", rehome, "--apply")
    assert done.returncode == 0, shown(done)
    listed = json.loads(histmig(b, "scan", "--tool", tool, "--json").stdout)["sessions"]
    assert [s["cwd"] for s in listed] == [str(code(b))] * sessions, listed


# ---- Copilot CLI --------------------------------------------------------------------------------------

def test_copilot_session_unpacked_with_rehome_is_resumed_and_continued(copilot, fake_api, tmp_path):
    from .copilot_client import RESUME_RE, run_copilot, sessions
    a, b = homes(tmp_path)
    first = run_copilot(copilot, a, fake_api, "first turn CP-PACK-ONE", code(a)).check()
    sid = RESUME_RE.search(first.stdout + first.stderr).group(1)
    run_copilot(copilot, a, fake_api, "RUN: echo cp-pack-marker", code(a), resume=sid).check()
    carry(a, b, "copilot")
    assert [p.parent.name for p in sessions(b)] == [sid]
    by_id = run_copilot(copilot, b, fake_api, "after unpack CP-B", code(b), resume=sid).check()
    req = by_id.model_requests("anthropic")[0]
    assert req.status == 200 and carried(req, "CP-PACK-ONE") and carried(req, "cp-pack-marker"), req.error
    cont = run_copilot(copilot, b, fake_api, "continue CP-B2", code(b), continue_=True).check()
    assert f"--resume={sid}" in cont.stdout + cont.stderr        # the client's own pick of the newest session
    req = cont.model_requests("anthropic")[0]
    assert req.status == 200 and carried(req, "CP-PACK-ONE") and carried(req, "CP-B") and carried(req, "CP-B2")
    with closing(sqlite3.connect(b.home / ".copilot" / "session-store.db")) as con:     # the client's own index row
        assert dict(con.execute("SELECT id, cwd FROM sessions")) == {sid: str(code(b))}


# ---- Pi -----------------------------------------------------------------------------------------------

def test_pi_session_unpacked_with_rehome_is_continued_from_the_new_folder(pi, fake_api, tmp_path):
    from .pi_client import pi_sessions, pi_setup, run_pi
    a, b = homes(tmp_path)
    pi_setup(a, fake_api)
    run_pi(pi, a, fake_api, "RUN: echo pi-pack-marker", code(a)).check()
    carry(a, b, "pi")
    pi_setup(b, fake_api)
    [placed] = pi_sessions(b)
    assert placed.parent.name == "--" + str(code(b))[1:].replace("/", "-") + "--"     # Pi's folder for B/code/app
    cont = run_pi(pi, b, fake_api, "after unpack PI-B", code(b), continue_=True).check()
    [req] = cont.model_requests("anthropic")
    assert req.status == 200 and carried(req, "pi-pack-marker") and carried(req, "PI-B"), req.error
    assert pi_sessions(b) == [placed]                 # continued, not a new session


# ---- Gemini CLI ---------------------------------------------------------------------------------------

def test_gemini_sessions_unpacked_with_rehome_are_listed_and_continued(gemini, fake_api, tmp_path):
    from . import gemini_client as gem
    a, b = homes(tmp_path)
    gem.setup(a)
    gem.run_gemini(gemini, a, fake_api, "GEM-PACK-ONE remember this", code(a)).check()
    gem.run_gemini(gemini, a, fake_api, "GEM-PACK-TWO a second session", code(a)).check()
    ids = {s["id"] for s in json.loads(histmig(a, "scan", "--tool", "gemini", "--json").stdout)["sessions"]}
    assert len(ids) == 2
    carry(a, b, "gemini", sessions=2)
    gem.setup(b)
    listed = gem.run_gemini(gemini, b, fake_api, None, code(b), args=("--list-sessions",)).check()
    assert "Available sessions for this project (2)" in listed.stdout, listed.stdout
    assert all(f"[{sid}]" in listed.stdout for sid in ids), listed.stdout    # the second is listed by a summary
    run = gem.run_gemini(gemini, b, fake_api, "GEM-B after unpack", code(b), resume="latest").check()
    asks = run.model_requests("gemini")
    assert asks and all(e.status == 200 for e in asks), [(e.status, e.error) for e in asks]
    assert any(carried(e, "GEM-PACK-TWO") and carried(e, "GEM-B") for e in asks)


def test_gemini_session_unpacked_beside_another_app_project_gets_a_slug_of_its_own(gemini, fake_api, tmp_path):
    """B already has a project whose slug is ``app`` (``B/other/app``): the unpacked ``B/code/app`` goes to
    a folder Gemini claims for it (``app-1``), both projects list their own session, B's untouched."""
    from . import gemini_client as gem
    a, b = homes(tmp_path)
    gem.setup(a)
    gem.run_gemini(gemini, a, fake_api, "GEM-A-PACKED remember this", code(a)).check()
    gem.setup(b)
    other = b.root / "other" / "app"
    other.mkdir(parents=True)
    gem.run_gemini(gemini, b, fake_api, "GEM-B-OWN its own", other).check()
    own = {str(p): p.read_bytes() for p in gem.chats(b)}
    bundle = a.root.parent / "gemini.tar.zst"
    assert histmig(a, "pack", "--all", "-o", str(bundle)).returncode == 0
    done = histmig(b, "unpack", str(bundle), "--rehome", f"{a.root}={b.root}", "--apply")
    assert done.returncode == 0, shown(done)
    assert {str(p): p.read_bytes() for p in gem.chats(b) if str(p) in own} == own
    assert sorted(p.parent.parent.name for p in gem.chats(b)) == ["app", "app-1"]
    ids = {s["cwd"]: s["id"] for s in json.loads(histmig(b, "scan", "--tool", "gemini", "--json").stdout)["sessions"]}
    for folder, mine, theirs in ((code(b), "GEM-A-PACKED", "GEM-B-OWN"), (other, "GEM-B-OWN", "GEM-A-PACKED")):
        listed = gem.run_gemini(gemini, b, fake_api, None, folder, args=("--list-sessions",)).check()
        assert "Available sessions for this project (1)" in listed.stdout, listed.stdout
        assert f"[{ids[str(folder)]}]" in listed.stdout, (ids, listed.stdout)
        run = gem.run_gemini(gemini, b, fake_api, f"GEM-AFTER in {folder.parent.name}", folder, resume="latest").check()
        asks = run.model_requests("gemini")
        assert any(carried(e, mine) for e in asks) and not any(carried(e, theirs) for e in asks)


# ---- OpenCode -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["plain", "git"])
def test_opencode_session_unpacked_with_rehome_is_listed_and_continued(opencode, fake_api, tmp_path, kind):
    """A session is rows (docs/pack.md): OpenCode runs once in B (its database), then the rows are inserted.
    A git project keeps its id (the root commit) when the repository is copied to B."""
    import shutil

    from .opencode_client import db_path, opencode_setup, run_opencode
    from .test_opencode_e2e import git_repo, session_list
    a, b = homes(tmp_path)
    opencode_setup(a, fake_api)
    if kind == "git":
        git_repo(code(a))
    run_opencode(opencode, a, fake_api, ["RUN:", "echo", "oc-pack-marker"], code(a)).check()
    run_opencode(opencode, a, fake_api, ["second", "oc-pack-turn"], code(a), continue_=True).check()
    with closing(sqlite3.connect(db_path(a))) as con:
        [(sid,)] = con.execute("SELECT id FROM session").fetchall()
    if kind == "git":
        shutil.copytree(code(a), code(b), dirs_exist_ok=True)
    opencode_setup(b, fake_api)
    assert "oc-pack" not in session_list(opencode, b, fake_api, code(b))      # B's database, empty
    carry(a, b, "opencode")
    assert sid in session_list(opencode, b, fake_api, code(b))
    cont = run_opencode(opencode, b, fake_api, ["after", "unpack", "oc-in-b"], code(b), session=sid).check()
    [req] = [e for e in cont.model_requests("anthropic") if carried(e, "oc-in-b")]
    assert req.status == 200 and carried(req, "oc-pack-marker") and carried(req, "oc-pack-turn")
    again = run_opencode(opencode, b, fake_api, ["continue", "oc-again"], code(b), continue_=True).check()
    [req] = [e for e in again.model_requests("anthropic") if carried(e, "oc-again")]
    assert carried(req, "oc-pack-marker") and carried(req, "oc-in-b")
    with closing(sqlite3.connect(db_path(b))) as con:
        assert [r[0] for r in con.execute("SELECT id FROM session")] == [sid]       # continued, not a new one


# ---- Qwen Code ----------------------------------------------------------------------------------------

def test_qwen_session_unpacked_with_rehome_is_listed_and_resumed_by_id(qwen, fake_api, tmp_path):
    from .qwen_client import conversation_requests, list_sessions, run_qwen, sessions
    a, b = homes(tmp_path)
    run_qwen(qwen, a, fake_api, "first turn QW-PACK-ONE", code(a)).check()
    run_qwen(qwen, a, fake_api, "RUN: echo qw-pack-marker", code(a), continue_=True).check()
    [recorded] = sessions(a)
    carry(a, b, "qwen")
    listed = list_sessions(qwen, b, fake_api, code(b)).check()
    assert "QW-PACK-ONE" in listed.stdout + listed.stderr
    after = run_qwen(qwen, b, fake_api, "after unpack QW-B", code(b), resume=recorded.stem).check()
    reqs = conversation_requests(after)
    assert reqs and all(r.status == 200 for r in after.model_requests("chat")), [r.error for r in reqs]
    assert carried(reqs[0], "QW-PACK-ONE") and carried(reqs[0], "qw-pack-marker") and carried(reqs[0], "QW-B")
    assert [p.stem for p in sessions(b)] == [recorded.stem]        # resumed, not a new session


# ---- Cline CLI ----------------------------------------------------------------------------------------

def test_cline_session_unpacked_with_rehome_is_listed_and_continued(cline, fake_api, tmp_path):
    """``cline --id`` needs a terminal: tests/e2e/cline_client.py ``resume`` drives it in a pty."""
    from .cline_client import auth, daemons, history, resume, run_cline, sessions, stop_daemons
    a, b = homes(tmp_path)
    try:
        auth(cline, a, fake_api)
        run_cline(cline, a, fake_api, "first turn CL-PACK-ONE", code(a)).check()
        [messages] = sessions(a)
        sid = messages.parent.name
        stop_daemons(a)
        carry(a, b, "cline")
        auth(cline, b, fake_api)
        listed = json.loads(history(cline, b, fake_api).check().stdout)
        assert [(e["sessionId"], e["cwd"]) for e in listed] == [(sid, str(code(b)))]
        after = resume(cline, b, fake_api, sid, "continue CL-PACK-B", code(b))
        reqs = [e for e in after.requests if e.method == "POST" and e.api == "chat"]
        assert reqs and all(r.status == 200 for r in reqs), after.stdout[-2000:]
        assert carried(reqs[0], "CL-PACK-ONE") and carried(reqs[0], "CL-PACK-B")
    finally:
        stop_daemons(a)
        stop_daemons(b)
    assert not daemons(a) and not daemons(b), "a Cline hub daemon is still running"
