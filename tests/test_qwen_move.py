"""``histmig move`` on Qwen Code sessions (docs/qwen.md): slug folder renamed, every record's cwd rewritten."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import orjson
import pytest

from histmig.apply import apply_plan
from histmig.core.diagnostics import RefusedError
from histmig.tools import resolve_homes
from histmig.tools.qwen.adapter import qwen_slug
from histmig.verbs.move import plan_move

SAMPLE = next((Path(__file__).resolve().parents[1] / "histmig/samples/qwen/tool-call/projects").glob("*/chats/*.jsonl"))
REC = "/tmp/histmig-rec/work/app"


def session(h, cwd: str, sid: str | None = None, *, meta: bool = True) -> Path:
    """The recorded tool-call sample, re-pointed at ``cwd`` (every record), in cwd's slug folder."""
    sid = sid or SAMPLE.stem
    folder = h.qwen / "projects" / qwen_slug(cwd)
    (folder / "chats").mkdir(parents=True, exist_ok=True)
    if meta:
        (folder / "meta.json").write_text('{"version": 1}\n')
    data = SAMPLE.read_bytes().replace(f'"cwd":"{REC}"'.encode(), f'"cwd":{json.dumps(cwd)}'.encode())
    data = data.replace(SAMPLE.stem.encode(), sid.encode())
    path = folder / "chats" / f"{sid}.jsonl"
    path.write_bytes(data)
    return path


def cwds(path: Path) -> set[str]:
    return {orjson.loads(x)["cwd"] for x in path.read_bytes().splitlines()}


@pytest.fixture
def h():
    return resolve_homes()


def test_folder_renamed_and_every_cwd_rewritten_other_bytes_kept(h, tmp_path):
    old, new = str(tmp_path / "a/my_app"), str(tmp_path / "b/my.app")
    path = session(h, old)
    before = path.read_bytes()
    plan = plan_move(h, old, new)
    assert plan.summary["tools"]["qwen"]["folders"] == 1
    apply_plan(plan, h)
    moved = h.qwen / "projects" / qwen_slug(new) / "chats" / path.name
    assert cwds(moved) == {new} and not path.parent.parent.exists()
    assert moved.read_bytes().replace(new.encode(), old.encode()) == before
    assert (moved.parent.parent / "meta.json").is_file()


def test_archived_sessions_are_rewritten_too(h, tmp_path):
    old, new = str(tmp_path / "a/app"), str(tmp_path / "b/app")
    path = session(h, old)
    archived = path.parent / "archive" / path.name
    archived.parent.mkdir()
    path.rename(archived)
    apply_plan(plan_move(h, old, new), h)
    assert cwds(h.qwen / "projects" / qwen_slug(new) / "chats" / "archive" / path.name) == {new}


def test_existing_target_gets_the_sessions_and_keeps_its_own(h, tmp_path):
    old, new = str(tmp_path / "a/app"), str(tmp_path / "b/app")
    mine = session(h, old, "11111111-1111-4111-8111-111111111111")
    theirs = session(h, new, "22222222-2222-4222-8222-222222222222")
    plan = plan_move(h, old, new)
    assert any(w.code == "folder-merged" for w in plan.warnings)
    apply_plan(plan, h)
    assert cwds(theirs.parent / mine.name) == {new} and cwds(theirs) == {new}
    assert (mine.parent.parent / "meta.json").is_file()    # the rest stays, named


def test_same_session_on_both_sides_refuses(h, tmp_path):
    old, new = str(tmp_path / "a/app"), str(tmp_path / "b/app")
    session(h, old)
    session(h, new)
    with pytest.raises(RefusedError, match="both exist"):
        plan_move(h, old, new)


def test_folder_shared_with_another_path_is_left_and_named(h, tmp_path):
    old, new = str(tmp_path / "a/b-c"), str(tmp_path / "z")
    session(h, old, "11111111-1111-4111-8111-111111111111")
    other = session(h, str(tmp_path / "a/b/c"), "22222222-2222-4222-8222-222222222222")
    assert qwen_slug(old) == other.parent.parent.name
    plan = plan_move(h, old, new)
    assert [s.code for s in plan.skips] == ["slug-collision"] and not plan.operations


def test_a_folder_without_sessions_moves_by_its_name(h, tmp_path):
    old, new = str(tmp_path / "a/app"), str(tmp_path / "b/app")
    folder = h.qwen / "projects" / qwen_slug(old)
    (folder / "memory").mkdir(parents=True)
    apply_plan(plan_move(h, old, new), h)
    assert (h.qwen / "projects" / qwen_slug(new) / "memory").is_dir() and not folder.exists()


def test_other_projects_are_untouched(h, tmp_path):
    old, new = str(tmp_path / "a/app"), str(tmp_path / "b/app")
    other = session(h, str(tmp_path / "a/application"))
    before = other.read_bytes()
    shutil.copy(other, tmp_path / "x")
    plan = plan_move(h, old, new)
    assert not plan.operations
    assert other.read_bytes() == before


def test_a_live_qwen_session_makes_its_folder_wait(h, tmp_path):
    import socket
    old, new = str(tmp_path / "a/app"), str(tmp_path / "b/app")
    path = session(h, old)
    marker = path.with_name(path.stem + ".runtime.json")
    marker.write_text(json.dumps({"schema_version": 1, "pid": os.getpid(), "session_id": path.stem, "work_dir": old,
                                  "hostname": socket.gethostname(), "started_at": 1.0, "qwen_version": "0.24.4"}))
    plan = plan_move(h, old, new)
    assert [s.code for s in plan.skips] == ["live-folder"] and not plan.operations
    marker.write_text(marker.read_text().replace(str(os.getpid()), "999999999"))   # a dead pid: moves
    assert plan_move(h, old, new).operations
