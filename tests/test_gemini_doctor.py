"""Gemini CLI doctor (histmig/tools/gemini/doctor.py; docs/specs/gemini.md §4, §6, §7)."""
from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

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
