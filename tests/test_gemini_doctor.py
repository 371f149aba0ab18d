"""Gemini CLI doctor (histmig/tools/gemini/doctor.py; docs/specs/gemini.md §4, §6, §7)."""
from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from clirun import histmig

from histmig.tools import resolve_homes
from histmig.verbs.doctor import diagnose

NOW = datetime.now(timezone.utc)


def iso(dt: datetime) -> str:
    return dt.strftime("%Y-%m-%dT%H:%M:%S.000Z")


def plant(gdir: Path, project: Path, sid: str, *, updated: datetime, minute: str = "2026-01-01T00-00",
          prompt: str | None = "hello") -> Path:
    """A session as Gemini writes one (registry entry, both markers, metadata + messages)."""
    project.mkdir(parents=True, exist_ok=True)
    slug = project.name
    reg_path = gdir / "projects.json"
    reg = json.loads(reg_path.read_text()) if reg_path.exists() else {"projects": {}}
    reg["projects"][str(project)] = slug
    reg_path.parent.mkdir(parents=True, exist_ok=True)
    reg_path.write_text(json.dumps(reg, indent=2))
    for base in ("tmp", "history"):
        (gdir / base / slug).mkdir(parents=True, exist_ok=True)
        (gdir / base / slug / ".project_root").write_text(str(project))
    lines = [{"sessionId": sid, "projectHash": "0", "startTime": iso(updated), "lastUpdated": iso(updated), "kind": "main"},
             {"$set": {"messages": [{"id": "ctx", "timestamp": iso(updated), "type": "user",
                                     "content": [{"text": "<session_context>\nx\n</session_context>"}]}]}}]
    if prompt:
        lines += [{"id": "u1", "timestamp": iso(updated), "type": "user", "content": [{"text": prompt}]},
                  {"id": "a1", "timestamp": iso(updated), "type": "gemini", "content": "hi", "model": "gemini-2.5-flash"}]
    path = gdir / "tmp" / slug / "chats" / f"session-{minute}-{sid[:8]}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def codes(home: Path) -> list:
    return [f for f in diagnose(resolve_homes(home=home)).findings if f.tool == "gemini"]


def test_a_moved_project_is_named_with_the_move_that_fixes_it(tmp_path):
    gdir, home = tmp_path / "home/.gemini", tmp_path / "home"
    gone = tmp_path / "old/app"
    plant(gdir, gone, "88888888-0000-4000-8000-000000000000", updated=NOW)
    gone.rmdir()
    f = next(f for f in codes(home) if f.code == "gemini.project-missing")
    assert f.data["cwd"] == str(gone) and f.count == 1
    # the client ran in the moved folder: its registry names the new place, which doctor proposes
    moved = tmp_path / "w/app"
    reg = json.loads((gdir / "projects.json").read_text())
    reg["projects"][str(moved)] = "app-1"
    (gdir / "projects.json").write_text(json.dumps(reg))
    moved.mkdir(parents=True)
    f = next(f for f in codes(home) if f.code == "gemini.project-missing")
    assert f.fix == f"histmig move {gone} {moved} --apply"
    assert histmig("--home", home, "move", gone, moved, "--apply").exit_code == 0
    assert not [f for f in codes(home) if f.code == "gemini.project-missing"]


def test_sessions_past_retention_are_named_with_the_setting_that_saves_them(tmp_path):
    gdir = tmp_path / "home/.gemini"
    old = plant(gdir, tmp_path / "w/p1", "11111111-0000-4000-8000-000000000000", updated=NOW - timedelta(days=40))
    plant(gdir, tmp_path / "w/p2", "22222222-0000-4000-8000-000000000000", updated=NOW - timedelta(days=25))
    plant(gdir, tmp_path / "w/p3", "33333333-0000-4000-8000-000000000000", updated=NOW)
    fs = [f for f in codes(tmp_path / "home") if f.code == "gemini.retention"]
    assert [(f.data["due"], f.data["paths"]) for f in fs][0] == (True, [str(old)])
    assert len(fs) == 2 and "sessionRetention" in fs[0].fix
    (gdir / "settings.json").write_text(json.dumps({"general": {"sessionRetention": {"enabled": False}}}))
    assert not [f for f in codes(tmp_path / "home") if f.code == "gemini.retention"]
    (gdir / "settings.json").write_text(json.dumps({"general": {"sessionRetention": {"enabled": True, "maxAge": "8w"}}}))
    assert not [f for f in codes(tmp_path / "home") if f.code == "gemini.retention"]


def test_a_stub_sharing_the_short_id_is_repaired_by_deleting_it_and_undo_brings_it_back(tmp_path):
    gdir, home = tmp_path / "home/.gemini", tmp_path / "home"
    sid = "44444444-0000-4000-8000-000000000000"
    real = plant(gdir, tmp_path / "w/p4", sid, updated=NOW, minute="2026-12-01T05-49")
    stub = plant(gdir, tmp_path / "w/p4", sid, updated=NOW, minute="2026-12-01T05-50", prompt=None)
    f = next(f for f in codes(home) if f.code == "gemini.stub-short-id")
    assert f.data["stubs"] == [str(stub)] and f.data["sessions"] == [str(real)] and f.repair
    stub_bytes = stub.read_bytes()
    done = histmig("--home", home, "doctor", "--tool", "gemini", "--repair", "--apply")
    assert done.exit_code == 0, done.stdout + done.stderr
    assert real.exists() and not stub.exists()
    assert histmig("--home", home, "undo").exit_code == 0
    assert stub.read_bytes() == stub_bytes


# ---- tool results stored twice (docs/specs/gemini.md §10) --------------------------------------

def _two_results(gdir: Path, project: Path, sid: str, extra: list | None = None) -> Path:
    """A session as Gemini 0.61.0 writes a tool call: the result in the call's ``toolCalls[].result``
    and again as a ``user`` functionResponse record; ``extra`` lines appended."""
    path = plant(gdir, project, sid, updated=NOW)
    response = {"functionResponse": {"id": "call-1", "name": "run_shell_command", "response": {"output": "hi\n"}}}
    lines = [{"id": "a2", "timestamp": iso(NOW), "type": "gemini", "content": "",
              "toolCalls": [{"id": "call-1", "name": "run_shell_command", "args": {"command": "echo hi"},
                             "result": [response], "status": "success"}], "model": "gemini-2.5-flash"},
             {"id": "r2", "timestamp": iso(NOW), "type": "user", "content": [response]},
             {"$set": {"lastUpdated": iso(NOW)}},
             {"id": "a3", "timestamp": iso(NOW), "type": "gemini", "content": "it printed hi", "model": "gemini-2.5-flash"}]
    with open(path, "a") as fh:
        fh.write("".join(json.dumps(x, separators=(",", ":")) + "\n" for x in lines + (extra or [])))
    return path


def _conversation(path: Path) -> list:
    from histmig.tools.gemini.adapter import stream
    from histmig.tools.gemini.records import RESOLVED
    return [(r.id, r.role, r.kind, repr(r.parts)) for r in stream(path).records if r.source_type == RESOLVED]


@pytest.mark.parametrize("resumed", [False, True])
def test_results_stored_twice_are_repaired_by_removing_the_repeated_records_and_undo_puts_them_back(tmp_path, resumed):
    gdir, home = tmp_path / "home/.gemini", tmp_path / "home"
    path = _two_results(gdir, tmp_path / "w/p5", "55555555-0000-4000-8000-000000000000")
    if resumed:    # a resume writes the metadata and the whole list again, then its own turns
        lines = [json.loads(ln) for ln in path.read_text().splitlines()]
        listed = [x for x in lines if "id" in x]
        with open(path, "a") as fh:
            for x in ({**lines[0], "startTime": iso(NOW)}, {"$set": {"messages": listed}},
                      {"id": "u9", "timestamp": iso(NOW), "type": "user", "content": [{"text": "and now?"}]}):
                fh.write(json.dumps(x, separators=(",", ":"), ensure_ascii=False) + "\n")
    before, conversation = path.read_bytes(), _conversation(path)
    f = next(f for f in codes(home) if f.code == "gemini.repeated-tool-result")
    assert f.count == 1 and f.data["message_ids"] == ["r2"] and f.repair and f.fix.startswith("histmig doctor --repair")
    done = histmig("--home", home, "doctor", "--tool", "gemini", "--repair", "--apply")
    assert done.exit_code == 0, done.stdout + done.stderr
    # the repeated record is gone (its line, and from the list a resume wrote); every other line is
    # as it was, and the conversation the client rebuilds is the same
    after = path.read_bytes()
    old_lines, new_lines = before.splitlines(keepends=True), after.splitlines(keepends=True)
    gone = [ln for ln in old_lines if ln not in new_lines]
    assert b'"r2"' not in after and len(new_lines) == len(old_lines) - 1
    assert len(gone) == (2 if resumed else 1) and all(b'"r2"' in ln for ln in gone)
    assert _conversation(path) == conversation
    assert not [f for f in codes(home) if f.code == "gemini.repeated-tool-result"]
    assert histmig("--home", home, "undo").exit_code == 0
    assert path.read_bytes() == before


def test_results_stored_twice_are_left_when_a_rewind_names_the_repeated_record(tmp_path):
    gdir, home = tmp_path / "home/.gemini", tmp_path / "home"
    # the rewind drops r2, a3 and a4, then r2 comes again: without r2's lines the rewind would do
    # nothing and a3, a4 would stay in the conversation, so no repair
    a4 = {"id": "a4", "timestamp": iso(NOW), "type": "gemini", "content": "more", "model": "gemini-2.5-flash"}
    again = {"id": "r2", "timestamp": iso(NOW), "type": "user", "content": [{"functionResponse": {
        "id": "call-1", "name": "run_shell_command", "response": {"output": "hi\n"}}}]}
    path = _two_results(gdir, tmp_path / "w/p6", "66666666-0000-4000-8000-000000000000",
                        [a4, {"$rewindTo": "r2"}, again])
    f = next(f for f in codes(home) if f.code == "gemini.repeated-tool-result")
    assert not f.repair and "none histmig makes" in f.fix
    before = path.read_bytes()
    histmig("--home", home, "doctor", "--tool", "gemini", "--repair", "--apply")
    assert path.read_bytes() == before
