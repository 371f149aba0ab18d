"""``histmig move`` on mini-cc and manifest sessions, and the ~/.claude.json / history.jsonl stores."""
from __future__ import annotations

import json
import os
import time

import orjson
import pytest

from histmig.apply import apply_plan
from histmig.core.diagnostics import LockedError, RefusedError
from histmig.verbs.move import plan_move
from histmig.core.paths import claude_slug

from test_move_fixtures import claude_session, homes, manifest_session, minicc_session, structured_leftovers


@pytest.fixture
def h(tmp_path):
    return homes()


def test_minicc_folder_is_renamed_and_cwd_rewritten(h, tmp_path):
    old, new = str(tmp_path / "a/app"), str(tmp_path / "b/app")
    path = minicc_session(h, old)
    apply_plan(plan_move(h, old, new), h)
    moved = h.mini_cc / "projects" / claude_slug(new) / path.name
    assert {orjson.loads(x)["cwd"] for x in moved.read_bytes().splitlines()} == {new}
    assert not path.parent.exists()


def test_minicc_folder_found_by_cwd_even_under_another_name(h, tmp_path):
    old, new = str(tmp_path / "a/データ"), str(tmp_path / "b/データ")
    path = minicc_session(h, old)
    python_style = path.parent.with_name(path.parent.name.rstrip("-") + "-")   # one dash per code point
    os.rename(path.parent, python_style)
    apply_plan(plan_move(h, old, new), h)
    assert (h.mini_cc / "projects" / claude_slug(new) / path.name).is_file()


def test_minicc_existing_target_refuses(h, tmp_path):
    old, new = str(tmp_path / "a/app"), str(tmp_path / "b/app")
    minicc_session(h, old, 1)
    minicc_session(h, new, 2)
    with pytest.raises(RefusedError, match="target folder exists"):
        plan_move(h, old, new)


def test_manifest_meta_rewritten_keeping_indent_and_moves_with_the_claude_folder(h, tmp_path):
    old, new = str(tmp_path / "a/app"), str(tmp_path / "b/app")
    claude_session(h, old, 1)
    meta = manifest_session(h, old)
    before = meta.read_text()
    apply_plan(plan_move(h, old, new), h)
    moved = h.claude / "projects" / claude_slug(new) / "sessions" / meta.parent.name / "meta.json"
    assert moved.read_text() == before.replace(json.dumps(old)[1:-1], json.dumps(new)[1:-1])
    assert structured_leftovers(h.claude, old) == []


def test_manifest_in_a_hash_named_folder_keeps_the_folder(h, tmp_path):
    old, new = str(tmp_path / "a/app"), str(tmp_path / "b/app")
    meta = manifest_session(h, old, folder="3f9a0c77e1")
    apply_plan(plan_move(h, old, new), h)
    assert orjson.loads(meta.read_bytes())["projectPath"] == new


def test_manifest_only_leaves_claude_sessions_in_the_shared_folder(h, tmp_path):
    old, new = str(tmp_path / "a/app"), str(tmp_path / "b/app")
    claude = claude_session(h, old, 1)
    meta = manifest_session(h, old)
    apply_plan(plan_move(h, old, new, tools=["manifest"]), h)
    assert claude.is_file() and str(old) in claude.read_text()
    assert (h.claude / "projects" / claude_slug(new) / "sessions" / meta.parent.name / "meta.json").is_file()


def test_claude_json_rekey_keeps_key_order_indent_and_other_bytes(h, tmp_path):
    old, new = str(tmp_path / "a/app"), str(tmp_path / "b/app")
    doc = {"numStartups": 7, "projects": {"/x": {"allowedTools": []}, old: {"hasTrustDialogAccepted": True, "lastCost": 0.1},
                                          old + "/sub": {}, old + "2": {}}, "userID": "u"}
    raw = json.dumps(doc, indent=4, ensure_ascii=False)
    h.claude_json.parent.mkdir(parents=True, exist_ok=True)
    h.claude_json.write_text(raw)
    apply_plan(plan_move(h, old, new), h)
    out = h.claude_json.read_text()
    assert out == raw.replace(json.dumps(old), json.dumps(new)).replace(json.dumps(old + "/sub"), json.dumps(new + "/sub"))
    assert list(json.loads(out)["projects"]) == ["/x", new, new + "/sub", old + "2"]


def test_claude_json_merge_keeps_flags_and_conflict_needs_force(h, tmp_path):
    old, new = str(tmp_path / "a/app"), str(tmp_path / "b/app")
    h.claude_json.parent.mkdir(parents=True, exist_ok=True)
    h.claude_json.write_text(json.dumps({"projects": {old: {"hasTrustDialogAccepted": True, "a": 1},
                                                      new: {"b": 2}}}, indent=2))
    apply_plan(plan_move(h, old, new), h)
    assert json.loads(h.claude_json.read_text()) == {"projects": {new: {"b": 2, "hasTrustDialogAccepted": True, "a": 1}}}
    assert h.claude_json.read_text().startswith('{\n  "projects": {\n    ')
    h.claude_json.write_text(json.dumps({"projects": {old: {"a": 1}, new: {"a": 2}}}, indent=2))
    with pytest.raises(RefusedError, match="--force"):
        plan_move(h, old, new)
    apply_plan(plan_move(h, old, new, force=True), h)
    assert json.loads(h.claude_json.read_text()) == {"projects": {new: {"a": 1}}}


def test_claude_json_fresh_lock_refuses_and_stale_lock_is_ignored(h, tmp_path, monkeypatch):
    from histmig.tools.claude_code import edits as claude_edits
    old, new = str(tmp_path / "a/app"), str(tmp_path / "b/app")
    h.claude_json.parent.mkdir(parents=True, exist_ok=True)
    h.claude_json.write_text(json.dumps({"projects": {old: {}}}))
    lock = h.claude_json.with_name(h.claude_json.name + ".lock")
    lock.mkdir()
    monkeypatch.setattr(claude_edits, "LOCK_WAIT_S", 0.3)
    with pytest.raises(LockedError, match="locked by Claude Code"):
        plan_move(h, old, new)
    old_time = time.time() - 60
    os.utime(lock, (old_time, old_time))
    plan = plan_move(h, old, new)
    assert any(w.code == "claude-json-stale-lock" for w in plan.warnings)


def test_claude_json_invalid_refuses(h, tmp_path):
    h.claude_json.parent.mkdir(parents=True, exist_ok=True)
    h.claude_json.write_text('{"projects": {"/a": ')
    with pytest.raises(RefusedError, match="not valid JSON"):
        plan_move(h, str(tmp_path / "a"), str(tmp_path / "b"))


def test_history_project_fields_patched_only_for_the_moved_project(h, tmp_path):
    old, new = str(tmp_path / "a/app"), str(tmp_path / "b/app")
    hist = h.claude / "history.jsonl"
    hist.parent.mkdir(parents=True, exist_ok=True)
    lines = [{"display": f"p{i}", "pastedContents": {}, "timestamp": i, "project": p, "sessionId": "s"}
             for i, p in enumerate([old, old + "2", old + "/sub", "/x"])]
    hist.write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in lines))
    apply_plan(plan_move(h, old, new), h)
    assert [orjson.loads(x)["project"] for x in hist.read_bytes().splitlines()] == [new, old + "2", new + "/sub", "/x"]
