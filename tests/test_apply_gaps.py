"""Gaps the planner authors reported, closed in apply: folder modes for created files, a missing
plan root, removing a folder a merge emptied (RmDir), Claude Code's ~/.claude.json lock, and the
planners' own transform for lines appended between plan and apply."""
from __future__ import annotations

import os
import stat
import time

import orjson
import pytest

from histmig.apply import apply_plan
from histmig.verbs.undo.run import undo
from histmig.apply.options import ApplyOptions
from histmig.core.diagnostics import LockedError, RefusedError
from histmig.tools import resolve_homes
from histmig.verbs.flip import plan_flip
from histmig.verbs.move import plan_move
from histmig.core.paths import claude_slug
from histmig.core.plan import CreateFile, Fingerprint, Plan, Patch, RmDir, WriteFile, op_from_dict

from codex_fixtures import dumps, home_with, rollout, settings, tid
from test_move_fixtures import claude_session, homes, jl, sid


# -- 1. CreateFile.dir_mode ------------------------------------------------------------------------
def test_create_file_dir_mode_is_exact_despite_the_umask_and_round_trips():
    h = homes()
    target = h.claude / "projects" / "-p-new" / "sub" / "f.jsonl"
    (h.claude / "projects").mkdir(parents=True)
    op = CreateFile(path=str(target), data=b'{"a":1}\n', dir_mode=0o775)
    assert op_from_dict(op.to_dict()) == op
    assert "dir_mode" not in CreateFile(path=str(target), data=b"").to_dict()   # old plans unchanged
    old = os.umask(0o027)
    try:
        res = apply_plan(Plan("convert", {}, [str(h.claude)], [op]), h)
    finally:
        os.umask(old)
    assert res.exit_code == 0 and target.read_bytes() == b'{"a":1}\n'
    for d in (target.parent, target.parent.parent):
        assert stat.S_IMODE(d.stat().st_mode) == 0o775, d


# -- 2. a plan root that does not exist yet -----------------------------------------------------------
def test_missing_root_inside_the_home_is_created_and_undo_removes_it():
    h = homes()
    assert not h.claude.exists()
    target = h.claude / "projects" / "-p" / "s.jsonl"
    op = CreateFile(path=str(target), data=b"{}\n", dir_mode=0o700)
    res = apply_plan(Plan("convert", {}, [str(h.claude / "projects")], [op]), h)
    assert res.exit_code == 0 and target.read_bytes() == b"{}\n"
    assert stat.S_IMODE(target.parent.stat().st_mode) == 0o700
    undo(h, res.txid)
    assert not h.claude.exists(), "undo removes every folder the apply created"


def test_missing_root_whose_existing_ancestor_is_outside_the_home_is_refused(monkeypatch, tmp_path_factory):
    outside = tmp_path_factory.mktemp("elsewhere")
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(outside / "claude"))
    h = resolve_homes()
    target = h.claude / "projects" / "-p" / "s.jsonl"
    with pytest.raises(RefusedError, match="not inside the home"):
        apply_plan(Plan("convert", {}, [str(h.claude)], [CreateFile(path=str(target), data=b"{}\n")]), h)
    assert not (outside / "claude").exists()


# -- 3. RmDir -------------------------------------------------------------------------------------
def test_merge_removes_the_emptied_folder_and_undo_recreates_it_with_mode_and_mtime(tmp_path):
    h = homes()
    old, new = str(tmp_path / "a/app"), str(tmp_path / "b/app")
    first = claude_session(h, old, 1)
    claude_session(h, new, 2)
    src = first.parent
    mem = src / "memory"
    mem.mkdir()
    (mem / "MEMORY.md").write_text("notes")
    os.chmod(src, 0o750)
    os.utime(src, ns=(1_700_000_000_000_000_000, 1_700_000_000_123_456_789))
    before = src.stat()
    plan = plan_move(h, old, new)
    assert [op.path for op in plan.operations if isinstance(op, RmDir)] == [str(src)]
    res = apply_plan(plan, h)
    assert res.exit_code == 0 and not src.exists()
    target = h.claude / "projects" / claude_slug(new)
    assert (target / "memory" / "MEMORY.md").read_text() == "notes"
    undo(h, res.txid)
    after = src.stat()
    assert stat.S_IMODE(after.st_mode) == 0o750 and after.st_mtime_ns == before.st_mtime_ns
    assert (src / first.name).exists() and (src / "memory" / "MEMORY.md").read_text() == "notes"


def test_rmdir_leaves_a_folder_that_is_not_empty_and_reports_it():
    h = homes()
    d = h.claude / "projects" / "-x"
    d.mkdir(parents=True)
    (d / "keep.txt").write_text("x")
    op = RmDir(path=str(d), expect=Fingerprint(dev=d.stat().st_dev, ino=d.stat().st_ino))
    res = apply_plan(Plan("move", {}, [str(h.claude)], [op]), h)
    assert (d / "keep.txt").read_text() == "x"
    assert any(w.code == "folder-not-empty" for w in res.warnings)


# -- 4. ~/.claude.json.lock ----------------------------------------------------------------------
def _claude_json_plan(h) -> Plan:
    h.claude_json.parent.mkdir(parents=True, exist_ok=True)
    h.claude_json.write_bytes(b'{"projects": {"/a/app": {}}}\n')
    i = h.claude_json.read_bytes().find(b"/a/app")
    op = WriteFile(path=str(h.claude_json), expect=Fingerprint.of(h.claude_json),
                   patches=(Patch(i, b"/a/app", b"/b/app2"),))
    return Plan("move", {}, [str(h.claude_json)], [op])


def test_fresh_claude_json_lock_refuses_and_leaves_the_file():
    h = homes()
    plan = _claude_json_plan(h)
    lock = f"{h.claude_json}.lock"
    os.mkdir(lock)
    with pytest.raises(LockedError, match="locked by Claude Code"):
        apply_plan(plan, h)
    assert h.claude_json.read_bytes() == b'{"projects": {"/a/app": {}}}\n' and os.path.isdir(lock)


def test_stale_claude_json_lock_is_taken_over_and_released():
    h = homes()
    plan = _claude_json_plan(h)
    lock = f"{h.claude_json}.lock"
    os.mkdir(lock)
    t = time.time() - 60
    os.utime(lock, (t, t))
    taken = []
    from histmig.apply import fsio
    fs = fsio.FS(hooks={"before-replace": lambda label: taken.append(os.path.isdir(lock))})
    with fsio.using(fs):
        res = apply_plan(plan, h)
    assert res.exit_code == 0 and h.claude_json.read_bytes() == b'{"projects": {"/b/app2": {}}}\n'
    assert taken == [True], "the lock is held while the file is replaced"
    assert ("mkdir", lock) in fs.log and not os.path.exists(lock)


# -- 5. appended lines get the planner's transform -------------------------------------------------
def test_flip_transforms_a_line_appended_between_plan_and_apply():
    h = homes()
    t = tid(1)
    path = home_with(h.codex, {t: rollout(t, "openai")})[t]
    plan = plan_flip(h, "openai", "my-provider")
    with open(path, "ab") as fh:
        fh.write(dumps(settings("openai")))
    res = apply_plan(plan, h, options=ApplyOptions(allow_appended=True))
    assert res.exit_code == 0
    last = orjson.loads(path.read_bytes().splitlines()[-1])
    assert last["payload"]["thread_settings"]["model_provider_id"] == "my-provider"
    assert b'"model_provider_id":"openai"' not in path.read_bytes()


def test_move_transforms_a_line_appended_between_plan_and_apply(tmp_path):
    h = homes()
    old, new = str(tmp_path / "a/app"), str(tmp_path / "b/app")
    f = claude_session(h, old, 1)
    plan = plan_move(h, old, new)
    with open(f, "ab") as fh:
        fh.write(jl([{"type": "user", "cwd": old, "sessionId": sid(1), "message": {"content": "later"}}]))
    res = apply_plan(plan, h, options=ApplyOptions(allow_appended=True))
    assert res.exit_code == 0
    moved = h.claude / "projects" / claude_slug(new) / f.name
    cwds = {orjson.loads(x).get("cwd") for x in moved.read_bytes().splitlines()} - {None}
    assert cwds == {new}, "the appended record's cwd is rewritten like the planned ones"
