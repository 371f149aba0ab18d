"""Issue #12 acceptance 1: apply, keep working in the real clients, then undo.

The matrix: flip, move, convert (codex -> claude-code and claude-code -> codex) x {the session is
continued in the client after the apply, a new session is started after the apply, ``codex archive`` /
``codex unarchive`` (Codex sessions), a second transaction on the same files} -> ``histmig undo``.
After every undo: each byte written after the apply is still there (appended lines with the
transaction's own edit reversed), every session resumes from the folder the user expects with its
earlier turns (the fake API's request log shows them), ``histmig doctor`` is healthy, and the log
says ``undone`` or names what was kept and why. ``undo --force`` on a continued conversion leaves
the continued bytes in ``<state dir>/trash/<txid>/`` (checked by hash).

Real Codex 0.171.0 and Claude Code 2.1.197 against the loopback fake API (tests/e2e/fake_api.py).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from histmig.core.paths import claude_slug

from .clients import (CUSTOM_PROVIDER, Clients, Run, Scratch, carried, claude_setup, claude_transcripts,
                      client_env, codex_session_id, codex_setup, run, run_claude, run_codex, write_codex_config)
from .fake_api import FakeAPI
from .histmig_run import (codex_rows, doctor_healthy, files_with_sha, histmig, last_txid, log, new_session_id,
                          ok, rollouts, sha256, shown, state_dir, tx_state)

pytestmark = pytest.mark.e2e
OTHER = "other-provider"   # a third Codex provider, for a second flip on the same files


# -- the world one test works in -------------------------------------------------------------------

@dataclass
class World:
    clients: Clients
    scratch: Scratch
    api: FakeAPI
    app: Path            # the project folder sessions are recorded in

    def codex(self, prompt: str, cwd: Path | None = None, resume: str | None = None) -> Run:
        return run_codex(self.clients, self.scratch, self.api, prompt, cwd or self.app, resume=resume).check()

    def claude(self, prompt: str, cwd: Path | None = None, *, continue_: bool = False,
               resume: str | None = None) -> Run:
        return run_claude(self.clients, self.scratch, self.api, prompt, cwd or self.app,
                          continue_=continue_, resume=resume).check()

    def codex_cmd(self, *args: str) -> Run:
        """A Codex subcommand (``archive`` / ``unarchive``) in the harness environment."""
        return run([str(self.clients.codex), *args], cwd=self.scratch.home,
                   env=client_env(self.scratch, self.api), api=self.api).check()

    def provider(self, name: str) -> None:
        """Select the Codex provider in config.toml (``OTHER`` is defined whenever it is selected)."""
        extra = ""
        if name == OTHER:
            extra = (f'\n[model_providers.{OTHER}]\nname = "Other"\nbase_url = "{self.api.responses_base(OTHER)}"\n'
                     'wire_api = "responses"\nenv_key = "MYKEY"\n')
        write_codex_config(self.scratch, self.api, name, extra=extra)

    def histmig(self, *args: str):
        return histmig(self.scratch, *args)


@pytest.fixture
def w(clients, scratch, fake_api) -> World:
    codex_setup(clients, scratch, fake_api, provider="openai")
    claude_setup(scratch)
    return World(clients, scratch, fake_api, scratch.project("app"))


def carries(result: Run, *markers: str) -> None:
    """The client sent every marker (earlier prompts, answers) to the fake API, which accepted it."""
    reqs = result.model_requests()
    assert reqs, f"no model request made by {result.args[:4]}"
    bad = [e for e in reqs if e.status != 200]
    assert not bad, f"the fake API refused: {[(e.status, e.error) for e in bad]}"
    for m in markers:
        assert any(carried(e, m) for e in reqs), f"{m!r} not sent by {result.args[:4]}"


def lacks(result: Run, marker: str) -> None:
    assert not any(carried(e, marker) for e in result.model_requests()), f"{marker!r} sent by {result.args[:4]}"


def one(paths: list[Path]) -> Path:
    assert len(paths) == 1, paths
    return paths[0]


def codex_files(w: World) -> list[Path]:
    return rollouts(w.scratch.codex_home)


def claude_files(w: World) -> list[Path]:
    return claude_transcripts(w.scratch)


def values(obj, key: str) -> list:
    """Every value stored under ``key`` anywhere in a parsed JSON record."""
    if isinstance(obj, dict):
        return [v for k, v in obj.items() if k == key] + [x for v in obj.values() for x in values(v, key)]
    if isinstance(obj, list):
        return [x for v in obj for x in values(v, key)]
    return []


def appended_kept(after_undo: bytes, appended: bytes, new: str, old: str, key: str) -> None:
    """The lines written after the apply are the last lines of the file, equal up to ``new`` -> ``old``
    (compared parsed: a same-length edit may pad with spaces), and the transaction's field ``key``
    reads ``old`` again in them: the edit was applied backwards to the appended lines too."""
    lines = appended.splitlines()
    assert lines, "nothing was appended"
    tail = after_undo.splitlines()[-len(lines):]
    norm = lambda ln: json.loads(ln.replace(new.encode(), old.encode()))  # noqa: E731
    assert [norm(x) for x in tail] == [norm(x) for x in lines], "appended lines lost or changed"
    still_new = [v for ln in tail for v in values(json.loads(ln), key) if v == new]
    assert not still_new, f"appended lines still carry {key}={new!r} after undo"


def disk(w: World) -> tuple[dict, dict]:
    """Every session file's bytes (both clients) and the Codex rows."""
    files = {p: p.read_bytes() for p in [*codex_files(w), *claude_files(w)]}
    return files, codex_rows(w.scratch.codex_home)


def undone(w: World, txid: str, *, by_default: bool = False):
    """``undo --dry-run`` changes nothing, then ``undo`` exits 0 and the log says undone. With
    ``by_default`` the command names no transaction (it must pick ``txid``, the latest). Callers run
    doctor once the user is back in the setting they expect: a config naming another provider than
    the sessions' is itself a doctor finding."""
    which = () if by_default else (txid,)
    before = disk(w)
    plan = ok(w.histmig("undo", "--dry-run", *which))
    assert txid in plan.stdout + plan.stderr, "the dry run does not say which transaction:\n" + shown(plan)
    assert disk(w) == before, "undo --dry-run wrote"
    done = ok(w.histmig("undo", *which))
    assert txid in done.stdout + done.stderr, shown(done)
    assert "deleted" not in done.stdout + done.stderr, shown(done)
    assert tx_state(w.scratch, txid) == "undone"
    return done


def kept(w: World, txid: str, session_id: str):
    """A continued conversion: undo exits 3 naming the kept session and why; the log names it too."""
    done = ok(w.histmig("undo", txid), 3)
    assert session_id in done.stdout + done.stderr, shown(done)
    assert tx_state(w.scratch, txid) != "committed"
    # ``paths`` lists every file the transaction touched, kept or not: it does not count as naming
    entry = {k: v for k, v in next(t for t in log(w.scratch) if t["txid"] == txid).items() if k != "paths"}
    text = ok(w.histmig("log")).stdout + json.dumps(entry)
    assert session_id in text, f"histmig log does not name the kept session {session_id}:\n{text}"
    return done


def refuses_for_later(w: World, older: str, newer: str) -> None:
    """Undoing the older transaction while the newer one still covers its sessions: not exit 0, and
    the newer one is named as what to undo first (``undo <newer> first`` / ``... <newer> ...; undo it
    first``)."""
    refused = w.histmig("undo", older)
    out = refused.stdout + refused.stderr
    assert refused.returncode != 0, shown(refused)
    assert newer in out and re.search(rf"undo ({re.escape(newer)}|it) first", out), shown(refused)
    assert "deleted" not in out, "a session the newer transaction moved is not deleted:\n" + shown(refused)


# -- flip -------------------------------------------------------------------------------------------

def flip_world(w: World) -> str:
    """A Codex session under ``openai`` (tool call + provider-bound reasoning), then the user switches
    config to ``my-provider`` and flips. Returns the thread id."""
    tid = codex_session_id(w.codex("RUN: echo flip-earlier"))
    w.provider(CUSTOM_PROVIDER)
    ok(w.histmig("flip", "openai", CUSTOM_PROVIDER, "--apply", "--strip-encrypted"))
    return tid


def test_flip_then_session_continued_undo_reverts_appended_lines_and_resumes_under_old_provider(w):
    tid = flip_world(w)
    txid = last_txid(w.scratch)
    f = one(codex_files(w))
    at_apply = f.read_bytes()
    w.codex("flip-continued turn", resume="last")
    appended = f.read_bytes()[len(at_apply):]
    undone(w, txid)
    appended_kept(f.read_bytes(), appended, CUSTOM_PROVIDER, "openai", key="model_provider")
    assert codex_rows(w.scratch.codex_home)["threads"][tid]["provider"] == "openai"
    w.provider("openai")
    doctor_healthy(w.scratch)
    carries(w.codex("after undo", resume="last"), "flip-earlier", "flip-continued")


def test_flip_then_new_session_undo_leaves_the_new_session_under_the_new_provider(w):
    tid = flip_world(w)
    txid = last_txid(w.scratch)
    new_tid = codex_session_id(w.codex("flip-new-session"))
    new_file = one([p for p in codex_files(w) if new_tid in p.name])
    new_bytes = new_file.read_bytes()
    undone(w, txid)
    assert new_file.read_bytes() == new_bytes
    threads = codex_rows(w.scratch.codex_home)["threads"]
    assert (threads[tid]["provider"], threads[new_tid]["provider"]) == ("openai", CUSTOM_PROVIDER)
    # sessions under two providers: whichever config is chosen, the other's are (rightly) "hidden"
    doctor_healthy(w.scratch, "codex.provider-hidden")
    new = w.codex("under my-provider again", resume="last")
    carries(new, "flip-new-session")
    lacks(new, "flip-earlier")
    w.provider("openai")
    old = w.codex("under openai again", resume="last")
    carries(old, "flip-earlier")
    lacks(old, "flip-new-session")


@pytest.mark.parametrize("when", ["archived-after-flip", "unarchived-after-flip"])
def test_flip_then_codex_archive_or_unarchive_undo_follows_the_rollout(w, when):
    tid = codex_session_id(w.codex("RUN: echo flip-earlier"))
    if when == "unarchived-after-flip":
        w.codex_cmd("archive", tid)
    w.provider(CUSTOM_PROVIDER)
    ok(w.histmig("flip", "openai", CUSTOM_PROVIDER, "--apply", "--strip-encrypted"))
    txid = last_txid(w.scratch)
    w.codex_cmd("archive" if when == "archived-after-flip" else "unarchive", tid)
    where = one(codex_files(w))
    undone(w, txid)
    assert one(codex_files(w)) == where, "undo moved the rollout back to where the apply found it"
    assert b'"model_provider":"openai"' in where.read_bytes()
    assert codex_rows(w.scratch.codex_home)["threads"][tid]["provider"] == "openai"
    w.provider("openai")
    doctor_healthy(w.scratch)
    if when == "archived-after-flip":
        w.codex_cmd("unarchive", tid)
    carries(w.codex("after undo", resume="last"), "flip-earlier")


def test_flip_twice_on_the_same_files_undo_latest_then_older(w):
    tid = flip_world(w)
    tx1 = last_txid(w.scratch)
    w.provider(OTHER)
    ok(w.histmig("flip", CUSTOM_PROVIDER, OTHER, "--apply"))
    tx2 = last_txid(w.scratch)
    undone(w, tx2, by_default=True)
    assert codex_rows(w.scratch.codex_home)["threads"][tid]["provider"] == CUSTOM_PROVIDER
    undone(w, tx1, by_default=True)
    assert codex_rows(w.scratch.codex_home)["threads"][tid]["provider"] == "openai"
    w.provider("openai")
    doctor_healthy(w.scratch)
    carries(w.codex("after both undos", resume="last"), "flip-earlier")


def test_flip_twice_undo_of_the_older_names_the_newer_and_keeps_the_session_whole(w):
    tid = flip_world(w)
    tx1 = last_txid(w.scratch)
    w.provider(OTHER)
    ok(w.histmig("flip", CUSTOM_PROVIDER, OTHER, "--apply"))
    tx2 = last_txid(w.scratch)
    f = one(codex_files(w))
    before, rows = f.read_bytes(), codex_rows(w.scratch.codex_home)
    refuses_for_later(w, tx1, tx2)
    assert f.read_bytes() == before and codex_rows(w.scratch.codex_home) == rows
    doctor_healthy(w.scratch)
    carries(w.codex("still under the newer flip", resume="last"), "flip-earlier")
    assert codex_rows(w.scratch.codex_home)["threads"][tid]["provider"] == OTHER


# -- move -------------------------------------------------------------------------------------------

def move_world(w: World) -> tuple[str, str, Path]:
    """A Codex and a Claude session in ``app``; the user renames the folder to ``app2`` and moves the
    history after it. Returns (codex thread id, claude session id, app2)."""
    ctid = codex_session_id(w.codex("RUN: echo move-earlier-codex"))
    w.claude("RUN: echo move-earlier-claude")
    csid = one(claude_files(w)).stem
    app2 = w.app.rename(w.app.with_name("app2"))
    ok(w.histmig("move", str(w.app), str(app2), "--apply"))
    return ctid, csid, app2


def session_file(w: World, sid: str) -> Path:
    return one([p for p in [*codex_files(w), *claude_files(w)] if sid in p.name])


def test_move_then_sessions_continued_undo_moves_them_back_with_the_continued_turns(w):
    ctid, csid, app2 = move_world(w)
    txid = last_txid(w.scratch)
    cfile, tfile = session_file(w, ctid), session_file(w, csid)
    at_apply = {p: p.read_bytes() for p in (cfile, tfile)}
    w.codex("move-continued-codex", app2, resume="last")
    w.claude("move-continued-claude", app2, continue_=True)
    assert session_file(w, csid) == tfile, "claude -c wrote a new transcript instead of continuing"
    appended = {p: p.read_bytes()[len(b):] for p, b in at_apply.items()}
    undone(w, txid)
    for sid, old_path in ((ctid, cfile), (csid, tfile)):
        now = session_file(w, sid)
        if sid == csid:
            assert now.parent.name == claude_slug(str(w.app)), "the transcript is not back in app's folder"
        appended_kept(now.read_bytes(), appended[old_path], str(app2), str(w.app), key="cwd")
    assert codex_rows(w.scratch.codex_home)["threads"][ctid]["cwd"] == str(w.app)
    app2.rename(w.app)                     # the user renames the folder back
    doctor_healthy(w.scratch)
    carries(w.codex("after undo", resume="last"), "move-earlier-codex", "move-continued-codex")
    carries(w.claude("after undo", continue_=True), "move-earlier-claude", "move-continued-claude")


def test_move_then_new_sessions_in_the_new_folder_undo_leaves_them_there(w):
    ctid, csid, app2 = move_world(w)
    txid = last_txid(w.scratch)
    new_ctid = codex_session_id(w.codex("move-new-codex", app2))
    w.claude("move-new-claude", app2)
    new_csid = one([p for p in claude_files(w) if p.stem != csid]).stem
    new = {sid: session_file(w, sid) for sid in (new_ctid, new_csid)}
    new_bytes = {sid: p.read_bytes() for sid, p in new.items()}
    undone(w, txid)
    assert {sid: session_file(w, sid) for sid in new} == new, "undo moved a session it never moved"
    assert {sid: p.read_bytes() for sid, p in new.items()} == new_bytes
    threads = codex_rows(w.scratch.codex_home)["threads"]
    assert (threads[ctid]["cwd"], threads[new_ctid]["cwd"]) == (str(w.app), str(app2))
    w.app.mkdir()                          # the user works in both folders again
    doctor_healthy(w.scratch)
    old_codex, old_claude = w.codex("in app", resume="last"), w.claude("in app", continue_=True)
    carries(old_codex, "move-earlier-codex")
    carries(old_claude, "move-earlier-claude")
    lacks(old_codex, "move-new-codex")
    lacks(old_claude, "move-new-claude")
    new_codex, new_claude = w.codex("in app2", app2, resume="last"), w.claude("in app2", app2, continue_=True)
    carries(new_codex, "move-new-codex")
    carries(new_claude, "move-new-claude")
    lacks(new_codex, "move-earlier-codex")
    lacks(new_claude, "move-earlier-claude")


def test_move_then_codex_archive_undo_follows_the_rollout_into_the_archive(w):
    ctid, csid, app2 = move_world(w)
    txid = last_txid(w.scratch)
    w.codex_cmd("archive", ctid)
    archived = session_file(w, ctid)
    assert "archived_sessions" in archived.parts
    undone(w, txid)
    assert session_file(w, ctid) == archived
    assert json.loads(archived.read_bytes().splitlines()[0])["payload"]["cwd"] == str(w.app)
    assert codex_rows(w.scratch.codex_home)["threads"][ctid]["cwd"] == str(w.app)
    app2.rename(w.app)
    doctor_healthy(w.scratch)
    w.codex_cmd("unarchive", ctid)
    carries(w.codex("after undo", resume="last"), "move-earlier-codex")
    carries(w.claude("after undo", continue_=True), "move-earlier-claude")


def move_twice(w: World) -> tuple[str, str, Path, str, str]:
    ctid, csid, app2 = move_world(w)
    tx1 = last_txid(w.scratch)
    app3 = app2.rename(w.app.with_name("app3"))
    ok(w.histmig("move", str(app2), str(app3), "--apply"))
    return ctid, csid, app3, tx1, last_txid(w.scratch)


def test_move_twice_on_the_same_files_undo_latest_then_older(w):
    ctid, csid, app3, tx1, tx2 = move_twice(w)
    undone(w, tx2, by_default=True)
    assert codex_rows(w.scratch.codex_home)["threads"][ctid]["cwd"] == str(w.app.with_name("app2"))
    undone(w, tx1, by_default=True)
    assert codex_rows(w.scratch.codex_home)["threads"][ctid]["cwd"] == str(w.app)
    app3.rename(w.app)
    doctor_healthy(w.scratch)
    carries(w.codex("after both undos", resume="last"), "move-earlier-codex")
    carries(w.claude("after both undos", continue_=True), "move-earlier-claude")


def test_move_twice_undo_of_the_older_names_the_newer_and_keeps_the_sessions_whole(w):
    ctid, csid, app3, tx1, tx2 = move_twice(w)
    before = {p: p.read_bytes() for p in [*codex_files(w), *claude_files(w)]}
    rows = codex_rows(w.scratch.codex_home)
    refuses_for_later(w, tx1, tx2)
    assert {p: p.read_bytes() for p in [*codex_files(w), *claude_files(w)]} == before
    assert codex_rows(w.scratch.codex_home) == rows
    doctor_healthy(w.scratch)
    carries(w.codex("still in app3", app3, resume="last"), "move-earlier-codex")
    carries(w.claude("still in app3", app3, continue_=True), "move-earlier-claude")


# -- convert codex -> claude-code -------------------------------------------------------------------

def to_claude_world(w: World) -> tuple[str, str]:
    """A Codex session in ``app`` converted to Claude Code. Returns (codex thread id, new claude id)."""
    ctid = codex_session_id(w.codex("RUN: echo cvt-earlier-codex"))
    done = ok(w.histmig("convert", "--to", "claude-code", "--from", "codex", "--apply"))
    return ctid, new_session_id(done)


# -- convert claude-code -> codex -------------------------------------------------------------------

def to_codex_world(w: World, codex_used_before: bool = True) -> str:
    """A Claude session in ``app`` converted to Codex under ``my-provider``. Returns the new thread id.

    By default Codex has been used before (another project), so its databases exist and the
    conversion registers its ``threads`` row there; on a fresh Codex, Codex adds the row itself later."""
    w.claude("RUN: echo cvt-earlier-claude")
    w.provider(CUSTOM_PROVIDER)
    if codex_used_before:
        w.codex("codex-elsewhere", w.scratch.project("elsewhere"))
    done = ok(w.histmig("convert", "--to", "codex", "--from", "claude-code", "--apply"))
    return new_session_id(done)


def convert_world(w: World, to: str) -> tuple[str, str]:
    """Either conversion; returns (the created session id, the marker of the source's first prompt)."""
    if to == "claude-code":
        return to_claude_world(w)[1], "cvt-earlier-codex"
    return to_codex_world(w), "cvt-earlier-claude"


def continue_converted(w: World, to: str, sid: str, marker: str) -> Run:
    if to == "claude-code":
        return w.claude(marker, resume=sid)
    return w.codex(marker, resume=sid)


def resume_converted(w: World, to: str) -> Run:
    """What the user types to pick the work up again in the target client."""
    return w.claude("again", continue_=True) if to == "claude-code" else w.codex("again", resume="last")


def resume_source(w: World, to: str) -> Run:
    return w.codex("again", resume="last") if to == "claude-code" else w.claude("again", continue_=True)


CONVERT = pytest.mark.parametrize("to", ["claude-code", "codex"], ids=["codex-to-claude", "claude-to-codex"])


@CONVERT
def test_convert_then_session_continued_undo_keeps_it_names_it_and_exits_3(w, to):
    sid, earlier = convert_world(w, to)
    txid = last_txid(w.scratch)
    continue_converted(w, to, sid, "cvt-continued")
    f = session_file(w, sid)
    continued = f.read_bytes()
    rows = codex_rows(w.scratch.codex_home)["threads"].get(sid)
    kept(w, txid, sid)
    assert session_file(w, sid) == f and f.read_bytes() == continued
    assert codex_rows(w.scratch.codex_home)["threads"].get(sid) == rows
    doctor_healthy(w.scratch)
    carries(resume_converted(w, to), earlier, "cvt-continued")
    carries(resume_source(w, to), earlier)


@CONVERT
def test_convert_then_session_continued_undo_force_moves_it_to_the_trash(w, to):
    sid, earlier = convert_world(w, to)
    txid = last_txid(w.scratch)
    continue_converted(w, to, sid, "cvt-continued")
    f = session_file(w, sid)
    digest = sha256(f.read_bytes())
    done = ok(w.histmig("undo", "--force", txid))
    assert not f.exists()
    trash = state_dir(w.scratch) / "trash"
    [copy] = files_with_sha(trash, digest)
    assert copy.relative_to(trash).parts[0] in {t["txid"] for t in log(w.scratch)}
    named = [a for a in (copy, *copy.parents) if trash in a.parents and str(a) in done.stdout + done.stderr]
    assert named, "undo --force does not print where the continued session went:\n" + shown(done)
    assert sid not in codex_rows(w.scratch.codex_home)["threads"]
    doctor_healthy(w.scratch)
    carries(resume_source(w, to), earlier)


@CONVERT
def test_convert_then_new_session_undo_removes_only_the_unchanged_conversion_keeping_a_copy(w, to):
    sid, earlier = convert_world(w, to)
    txid = last_txid(w.scratch)
    f = session_file(w, sid)
    digest = sha256(f.read_bytes())
    others = set(disk(w)[0]) - {f}
    if to == "claude-code":
        w.claude("cvt-new-session")
    else:
        w.codex("cvt-new-session")
    [new] = set(disk(w)[0]) - others - {f}
    new_bytes = {new: new.read_bytes()}
    undone(w, txid)
    assert not f.exists() and sid not in codex_rows(w.scratch.codex_home)["threads"]
    assert files_with_sha(state_dir(w.scratch), digest), "the removed conversion has no copy in the state dir"
    assert {new: new.read_bytes()} == new_bytes
    doctor_healthy(w.scratch)
    again = resume_converted(w, to)
    carries(again, "cvt-new-session")
    carries(resume_source(w, to), earlier)


def test_convert_codex_to_claude_then_codex_archive_of_the_source_undo_removes_the_conversion(w):
    ctid, sid = to_claude_world(w)
    txid = last_txid(w.scratch)
    w.codex_cmd("archive", ctid)
    archived = session_file(w, ctid)
    archived_bytes = archived.read_bytes()
    undone(w, txid)
    assert not [p for p in claude_files(w) if p.stem == sid]
    assert archived.read_bytes() == archived_bytes
    doctor_healthy(w.scratch)
    w.codex_cmd("unarchive", ctid)
    carries(w.codex("again", resume="last"), "cvt-earlier-codex")


def test_convert_claude_to_codex_then_codex_archive_undo_removes_the_archived_conversion(w):
    sid = to_codex_world(w)
    txid = last_txid(w.scratch)
    w.codex_cmd("archive", sid)
    assert "archived_sessions" in session_file(w, sid).parts
    undone(w, txid)
    assert not [p for p in codex_files(w) if sid in p.name]
    assert sid not in codex_rows(w.scratch.codex_home)["threads"]
    doctor_healthy(w.scratch)
    carries(w.claude("again", continue_=True), "cvt-earlier-claude")


def test_convert_codex_to_claude_then_move_undo_latest_then_older(w):
    ctid, sid = to_claude_world(w)
    tx1 = last_txid(w.scratch)
    app2 = w.app.rename(w.app.with_name("app2"))
    ok(w.histmig("move", str(w.app), str(app2), "--apply"))
    tx2 = last_txid(w.scratch)
    undone(w, tx2, by_default=True)
    undone(w, tx1, by_default=True)
    assert not claude_files(w)
    app2.rename(w.app)
    doctor_healthy(w.scratch)
    carries(w.codex("again", resume="last"), "cvt-earlier-codex")


def test_convert_codex_to_claude_then_move_undo_of_the_convert_names_the_move(w):
    ctid, sid = to_claude_world(w)
    tx1 = last_txid(w.scratch)
    app2 = w.app.rename(w.app.with_name("app2"))
    ok(w.histmig("move", str(w.app), str(app2), "--apply"))
    tx2 = last_txid(w.scratch)
    f = session_file(w, sid)
    before = f.read_bytes()
    refuses_for_later(w, tx1, tx2)
    assert session_file(w, sid) == f and f.read_bytes() == before
    doctor_healthy(w.scratch)
    carries(w.claude("still in app2", app2, continue_=True), "cvt-earlier-codex")


def test_convert_claude_to_codex_then_flip_undo_latest_then_older(w):
    sid = to_codex_world(w)
    tx1 = last_txid(w.scratch)
    w.provider("openai")
    ok(w.histmig("flip", CUSTOM_PROVIDER, "openai", "--apply"))
    tx2 = last_txid(w.scratch)
    undone(w, tx2, by_default=True)
    assert codex_rows(w.scratch.codex_home)["threads"][sid]["provider"] == CUSTOM_PROVIDER
    undone(w, tx1, by_default=True)
    assert not [p for p in codex_files(w) if sid in p.name]
    assert sid not in codex_rows(w.scratch.codex_home)["threads"]
    w.provider(CUSTOM_PROVIDER)            # the user goes back to the provider the flip left
    doctor_healthy(w.scratch)
    carries(w.claude("again", continue_=True), "cvt-earlier-claude")


def test_convert_claude_to_codex_then_flip_undo_of_the_convert_names_the_flip(w):
    sid = to_codex_world(w)
    tx1 = last_txid(w.scratch)
    w.provider("openai")
    ok(w.histmig("flip", CUSTOM_PROVIDER, "openai", "--apply"))
    tx2 = last_txid(w.scratch)
    f = session_file(w, sid)
    before, rows = f.read_bytes(), codex_rows(w.scratch.codex_home)
    refuses_for_later(w, tx1, tx2)
    assert f.read_bytes() == before and codex_rows(w.scratch.codex_home) == rows
    doctor_healthy(w.scratch)
    carries(w.codex("still under openai", resume="last"), "cvt-earlier-claude")


def test_convert_claude_to_codex_on_a_fresh_codex_then_new_session_undo_leaves_no_row_behind(w):
    """No Codex database at convert time: the conversion writes only the rollout, and the next Codex
    start registers it itself. Undo removes the unchanged rollout and must not leave that row."""
    sid = to_codex_world(w, codex_used_before=False)
    txid = last_txid(w.scratch)
    w.codex("cvt-new-session")
    assert sid in codex_rows(w.scratch.codex_home)["threads"], "Codex did not register the converted rollout"
    undone(w, txid)
    assert not [p for p in codex_files(w) if sid in p.name]
    assert sid not in codex_rows(w.scratch.codex_home)["threads"]
    doctor_healthy(w.scratch)
    carries(w.codex("again", resume="last"), "cvt-new-session")
    carries(w.claude("again", continue_=True), "cvt-earlier-claude")
