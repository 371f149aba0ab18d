"""``histmig move`` on Claude Code history: folders, cwd fields, ~/.claude.json, history.jsonl."""
from __future__ import annotations

import json
import os

import orjson
import pytest

from histmig.apply import apply_plan
from histmig.cli import cli
from histmig.cli.common import run_guarded
from histmig.core.diagnostics import RefusedError
from histmig.verbs.move import plan_move
from histmig.core.paths import claude_slug
from histmig.core.plan import Rename, WriteFile

from test_apply_fixtures import snapshot
from test_move_fixtures import MTIME, claude_session, homes, jl, sid, structured_leftovers, tool_trees


def run(*argv) -> int:
    return run_guarded(cli, list(argv))


@pytest.fixture
def h(tmp_path):
    return homes()


def test_move_renames_folder_rewrites_every_cwd_and_undo_restores_bytes_and_mtimes(h, tmp_path, capsys):
    old, new = str(tmp_path / "W/app"), str(tmp_path / "W/app2")
    main = claude_session(h, old, 1, subagent=True, sub=old + "/sub")
    (h.claude / "history.jsonl").write_bytes(jl([{"display": "hi", "pastedContents": {}, "timestamp": 1,
                                                  "project": old, "sessionId": sid(1)}]))
    h.claude_json.write_text(json.dumps({"numStartups": 3, "projects": {old: {"hasTrustDialogAccepted": True}}}, indent=2))
    text_before = [orjson.loads(x)["message"] for x in main.read_bytes().splitlines() if b'"message"' in x]
    before = tool_trees(h)

    assert run("move", old, new, "--apply") == 0
    out = capsys.readouterr().out
    assert "transaction" in out
    dst = h.claude / "projects" / claude_slug(new)
    moved = dst / main.name
    assert moved.is_file() and not main.parent.exists()
    assert (dst / sid(1) / "subagents" / "agent-a1b2c3.jsonl").is_file()
    assert (dst / sid(1) / "tool-results" / "toolu_1.txt").read_text() == "big output"
    assert structured_leftovers(h.claude, old) == []
    recs = [orjson.loads(x) for x in moved.read_bytes().splitlines()]
    assert {r["cwd"] for r in recs if "cwd" in r} == {new, new + "/sub"}
    assert [r["message"] for r in recs if "message" in r] == text_before      # message text untouched
    assert moved.stat().st_mtime_ns == MTIME
    assert list(json.loads(h.claude_json.read_text())["projects"]) == [new]
    assert orjson.loads((h.claude / "history.jsonl").read_bytes())["project"] == new

    assert run("undo") == 0
    assert tool_trees(h) == before


def test_a_second_plan_after_apply_is_empty(h, tmp_path):
    old, new = str(tmp_path / "a/app"), str(tmp_path / "b/app")
    claude_session(h, old, 1, subagent=True)
    apply_plan(plan_move(h, old, new), h)
    assert plan_move(h, old, new).empty


def test_path_with_spaces_and_non_ascii_gets_the_claude_slug(h, tmp_path):
    old, new = str(tmp_path / "my app/データ"), str(tmp_path / "their app/données")
    claude_session(h, old, 1)
    apply_plan(plan_move(h, old, new), h)
    folder = h.claude / "projects" / claude_slug(new)
    assert claude_slug(new).endswith("-their-app-donn-es")
    recs = [orjson.loads(x) for x in next(folder.glob("*.jsonl")).read_bytes().splitlines()]
    assert {r["cwd"] for r in recs if "cwd" in r} == {new}


def test_long_path_over_200_chars_uses_the_hashed_slug(h, tmp_path):
    old = str(tmp_path / ("x" * 120) / ("y" * 100))
    new = str(tmp_path / ("z" * 120) / ("w" * 101))
    assert len(claude_slug(old)) > 200 and len(claude_slug(new)) > 200
    claude_session(h, old, 1)
    plan = plan_move(h, old, new)
    [rename] = [op for op in plan.operations if isinstance(op, Rename)]
    assert os.path.basename(rename.src) == claude_slug(old)
    assert os.path.basename(rename.dst) == claude_slug(new)
    apply_plan(plan, h)
    assert (h.claude / "projects" / claude_slug(new) / f"{sid(1)}.jsonl").is_file()


def test_long_path_target_reuses_a_sibling_with_the_same_prefix_that_records_new(h, tmp_path):
    old = str(tmp_path / ("x" * 120) / ("y" * 100))
    new = str(tmp_path / ("z" * 120) / ("w" * 101))
    bun_era = claude_slug(new)[:200] + "-bunhash1"
    claude_session(h, old, 1)
    claude_session(h, new, 2, folder=bun_era)
    plan = plan_move(h, old, new)
    dsts = {os.path.dirname(op.dst) for op in plan.operations if isinstance(op, Rename)}
    assert dsts == {str(h.claude / "projects" / bun_era)}


def test_sibling_with_a_longer_name_is_left_alone(h, tmp_path):
    old, new = str(tmp_path / "a/app"), str(tmp_path / "b/app")
    claude_session(h, old, 1)
    sibling = claude_session(h, str(tmp_path / "a/app2"), 2)
    dash = claude_session(h, str(tmp_path / "a/app-x"), 3)
    before = (sibling.read_bytes(), dash.read_bytes())
    plan = plan_move(h, old, new)
    assert all(str(sibling.parent) not in " ".join(op.paths()) for op in plan.operations)
    apply_plan(plan, h)
    assert (sibling.read_bytes(), dash.read_bytes()) == before


def test_subfolder_session_moves_to_the_slug_of_the_new_subfolder(h, tmp_path):
    old, new = str(tmp_path / "a/app"), str(tmp_path / "b/app")
    claude_session(h, old + "/sub dir", 1)
    apply_plan(plan_move(h, old, new), h)
    moved = h.claude / "projects" / claude_slug(new + "/sub dir") / f"{sid(1)}.jsonl"
    assert {orjson.loads(x).get("cwd") for x in moved.read_bytes().splitlines()} - {None} == {new + "/sub dir"}


def test_merge_into_an_existing_target_folder_moves_file_by_file(h, tmp_path):
    old, new = str(tmp_path / "a/app"), str(tmp_path / "b/app")
    claude_session(h, old, 1, subagent=True)
    existing = claude_session(h, new, 2)
    mem_old = h.claude / "projects" / claude_slug(old) / "memory"
    mem_old.mkdir()
    (mem_old / "MEMORY.md").write_text("old notes")
    plan = plan_move(h, old, new)
    assert not any(isinstance(op, Rename) and op.src.endswith(claude_slug(old)) for op in plan.operations)
    apply_plan(plan, h)
    target = existing.parent
    assert sorted(p.name for p in target.iterdir()) == sorted([existing.name, f"{sid(1)}.jsonl", sid(1), "memory"])
    assert (target / "memory" / "MEMORY.md").read_text() == "old notes"
    assert any(w.code == "folder-merged" for w in plan.warnings)


def test_session_id_in_both_folders_refuses_the_whole_plan(h, tmp_path):
    old, new = str(tmp_path / "a/app"), str(tmp_path / "b/app")
    claude_session(h, old, 1)
    claude_session(h, new, 1)
    with pytest.raises(RefusedError, match="exists in both"):
        plan_move(h, old, new)


def test_case6_two_cwds_sharing_one_folder_name_skip_that_folder_naming_both(h, tmp_path):
    old, other = str(tmp_path / "a/app"), str(tmp_path / "a-app")
    assert claude_slug(old) == claude_slug(other)
    s1 = claude_session(h, old, 1)
    claude_session(h, other, 2)
    plan = plan_move(h, old, str(tmp_path / "b/app"))
    [skip] = plan.skips
    assert skip.code == "slug-collision" and skip.path == str(s1.parent)
    assert old in skip.reason and other in skip.reason and "--split-shared" in skip.reason
    assert not any(str(s1.parent) in p for op in plan.operations for p in op.paths())


def test_case6_live_session_makes_its_whole_folder_wait(h, tmp_path):
    old, new = str(tmp_path / "a/app"), str(tmp_path / "b/app")
    live = claude_session(h, old, 1)
    claude_session(h, old, 2)
    (h.claude / "sessions").mkdir()
    (h.claude / "sessions" / f"{os.getpid()}.json").write_bytes(orjson.dumps(
        {"pid": os.getpid(), "sessionId": sid(1), "cwd": old}))
    plan = plan_move(h, old, new)
    assert [(s.path, s.code) for s in plan.skips] == [(str(live.parent), "live-folder")]
    assert f"live Claude Code session {sid(1)} (pid {os.getpid()})" in plan.skips[0].reason
    assert not any(str(live.parent) in p for op in plan.operations for p in op.paths())


def test_file_open_for_writing_is_skipped(h, tmp_path):
    old, new = str(tmp_path / "a/app"), str(tmp_path / "b/app")
    path = claude_session(h, old, 1)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        plan = plan_move(h, old, new)
    finally:
        os.close(fd)
    assert [s.path for s in plan.skips] == [str(path.parent)] and "open for writing" in plan.skips[0].reason
    assert not [op for op in plan.operations if isinstance(op, WriteFile)]


def test_worktree_state_relocated_and_agent_meta_paths_are_rewritten(h, tmp_path):
    old, new = str(tmp_path / "a/app"), str(tmp_path / "b/app")
    path = claude_session(h, old, 1, subagent=True)
    with open(path, "ab") as fh:
        fh.write(jl([{"type": "worktree-state", "worktreeSession": {"originalCwd": old, "worktreePath": old + "/.wt/x",
                                                                     "worktreeName": "x"}, "sessionId": sid(1)},
                     {"type": "relocated", "sessionId": sid(1), "relocatedCwd": old + "/sub"}]))
    apply_plan(plan_move(h, old, new), h)
    assert structured_leftovers(h.claude, old) == []
    meta = h.claude / "projects" / claude_slug(new) / sid(1) / "subagents" / "agent-a1b2c3.meta.json"
    assert orjson.loads(meta.read_bytes())["worktreePath"] == new + "/.claude/worktrees/x"


def test_rewrite_content_replaces_text_on_boundaries_and_reports_per_file(h, tmp_path):
    old, new = str(tmp_path / "a/app"), str(tmp_path / "b/app")
    path = claude_session(h, old, 1)
    with open(path, "ab") as fh:
        fh.write(jl([{"type": "user", "cwd": old, "sessionId": sid(1),
                      "message": {"role": "user", "content": f"{old}2 and {old}. and ({old}/x)"}}]))
    plan = plan_move(h, old, new, rewrite_content=True)
    assert any(w.code == "content-rewritten" and w.path == str(path) for w in plan.warnings)
    apply_plan(plan, h)
    last = orjson.loads((h.claude / "projects" / claude_slug(new) / path.name).read_bytes().splitlines()[-1])
    assert last["message"]["content"] == f"{old}2 and {new}. and ({new}/x)"


def test_memory_only_folder_keyed_by_a_claude_json_project_moves(h, tmp_path):
    old, new = str(tmp_path / "a/repo"), str(tmp_path / "b/repo")
    mem = h.claude / "projects" / claude_slug(old + "/pkg") / "memory"
    mem.mkdir(parents=True)
    (mem / "MEMORY.md").write_text("notes")
    h.claude_json.write_text(json.dumps({"projects": {old + "/pkg": {}}}))
    apply_plan(plan_move(h, old, new), h)
    assert (h.claude / "projects" / claude_slug(new + "/pkg") / "memory" / "MEMORY.md").read_text() == "notes"


def test_tool_restriction_leaves_claude_alone(h, tmp_path):
    old, new = str(tmp_path / "a/app"), str(tmp_path / "b/app")
    claude_session(h, old, 1)
    assert plan_move(h, old, new, tools=["codex"]).empty


def test_dry_run_prints_a_table_and_writes_nothing(h, tmp_path, capsys):
    old, new = str(tmp_path / "a/app"), str(tmp_path / "b/app")
    claude_session(h, old, 1, subagent=True)
    before = snapshot(h.home)
    assert run("move", old, new) == 0
    out = capsys.readouterr().out
    assert "claude-code" in out and "would rename" in out and "nothing written" in out
    assert snapshot(h.home) == before and not h.state.exists()


def test_neither_path_existing_warns(h, tmp_path):
    plan = plan_move(h, str(tmp_path / "nope/a"), str(tmp_path / "nope/b"))
    assert [w.code for w in plan.warnings] == ["paths-missing"]


@pytest.mark.parametrize("new", ["same", "inside"])
def test_nonsense_moves_are_usage_errors(h, tmp_path, new):
    from histmig.core.diagnostics import UsageError
    old = str(tmp_path / "a")
    with pytest.raises(UsageError):
        plan_move(h, old, old if new == "same" else old + "/b")
