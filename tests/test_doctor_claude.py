"""Claude Code doctor checks on crafted config homes, and the dangling-tool_use / duplicate repairs."""
from __future__ import annotations

import json
import os
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest

from histmig.apply import apply_plan
from histmig.verbs.undo.run import undo
from histmig.tools import resolve_homes
from histmig.verbs.doctor import diagnose, plan_repair
from histmig.core.paths import claude_slug

SID = "6f1d2a3b-4c5d-4e6f-8a9b-0c1d2e3f4a5b"
SID2 = "7a1d2a3b-4c5d-4e6f-8a9b-0c1d2e3f4a5b"


def rec(kind: str, uuid: str, parent: str | None, cwd: str, content, sid: str = SID) -> dict:
    return {"parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": cwd, "sessionId": sid,
            "version": "2.1.197", "gitBranch": "", "entrypoint": "cli", "type": kind,
            "message": {"role": kind, "content": content}, "uuid": uuid, "timestamp": "2026-11-29T10:00:00.000Z"}


def transcript(cwd: str, *, dangling: bool = False, sid: str = SID) -> bytes:
    recs = [rec("user", "u1", None, cwd, "hello", sid),
            rec("assistant", "a1", "u1", cwd, [{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}}], sid),  # noqa: E501 (a literal record)
            rec("user", "u2", "a1", cwd, [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "a.py"}], sid),
            rec("assistant", "a2", "u2", cwd, [{"type": "text", "text": "done"}], sid)]
    if dangling:
        recs.append(rec("assistant", "a3", "a2", cwd, [{"type": "tool_use", "id": "toolu_2", "name": "Bash",
                                                         "input": {"command": "make"}}], sid))
    return b"".join(json.dumps(r, separators=(",", ":")).encode() + b"\n" for r in recs)


@pytest.fixture
def world(isolated_homes):
    homes = resolve_homes()
    proj = Path(isolated_homes["HOME"]) / "code" / "app"
    proj.mkdir(parents=True)
    return homes, str(proj)


def put(homes, cwd: str, data: bytes, *, sid: str = SID, folder: str | None = None) -> Path:
    p = homes.claude / "projects" / (folder or claude_slug(cwd)) / f"{sid}.jsonl"
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(data)
    return p


def found(homes, code=None, **kw):
    fs = diagnose(homes, tools=["claude"], **kw).findings
    return [f for f in fs if code is None or f.code == code]


def test_consistent_project_is_healthy(world):
    homes, proj = world
    put(homes, proj, transcript(proj))
    assert found(homes) == []


def test_missing_cwd_is_reported_per_folder_with_a_move_suggestion(world):
    homes, proj = world
    gone = str(Path(homes.home) / "old" / "app")
    put(homes, gone, transcript(gone))
    put(homes, gone, transcript(gone, sid=SID2), sid=SID2)
    [f] = found(homes, "claude.cwd-missing")
    assert f.count == 2 and f.fix == f"histmig move {gone} {proj} --apply"


def test_folder_named_after_another_path_is_a_slug_mismatch(world):
    homes, proj = world
    put(homes, proj, transcript(proj), folder="-some-other-place")
    [f] = found(homes, "claude.slug-mismatch")
    assert f.data["expected"] == claude_slug(proj)


def test_long_path_folder_with_other_hash_suffix_is_accepted(world):
    homes, _ = world
    deep = Path(homes.home, *(["a-rather-long-folder-name"] * 10))
    deep.mkdir(parents=True)
    slug = claude_slug(str(deep))
    assert len(slug) > 200
    put(homes, str(deep), transcript(str(deep)), folder=slug[:200] + "-bunhash")
    assert found(homes, "claude.slug-mismatch") == []


def test_duplicate_session_prefix_copy_is_moved_out_of_the_wrong_folder(world):
    homes, proj = world
    full = transcript(proj)
    right = put(homes, proj, full)
    wrong = put(homes, proj, full[: full.index(b"\n") + 1], folder="-elsewhere")
    [f] = found(homes, "claude.duplicate-session")
    assert [(op.src, op.dst) for op in f.repair] == [(str(wrong), str(wrong) + ".histmig-duplicate")]
    apply_plan(plan_repair(homes, diagnose(homes, tools=["claude"])), homes)
    assert not wrong.exists() and right.read_bytes() == full
    assert found(homes, "claude.duplicate-session") == []


def test_duplicate_with_newer_records_in_the_wrong_folder_is_not_repaired(world):
    homes, proj = world
    full = transcript(proj)
    put(homes, proj, full[: full.index(b"\n") + 1])
    put(homes, proj, full, folder="-elsewhere")
    [f] = found(homes, "claude.duplicate-session")
    assert not f.repair and "compare them by hand" in f.fix


def test_broken_lines_and_truncated_tail_are_reported_separately(world):
    homes, proj = world
    data = transcript(proj)
    lines = data.splitlines(keepends=True)
    put(homes, proj, lines[0] + b'{"broken\n' + b"".join(lines[1:]) + b'{"parentUuid":"a2","tru')
    codes = sorted((f.code, f.line) for f in found(homes))
    assert codes == [("claude.broken-lines", 2), ("claude.truncated-tail", None)]


def test_dangling_tool_use_gets_the_tool_result_a_client_would_write(world):
    homes, proj = world
    data = transcript(proj, dangling=True)
    path = put(homes, proj, data)
    [f] = found(homes, "claude.dangling-tool-use")
    assert f.data["tool_use_ids"] == ["toolu_2"]
    apply_plan(plan_repair(homes, diagnose(homes, tools=["claude"])), homes)
    after = path.read_bytes()
    assert after.startswith(data)
    added = json.loads(after[len(data):])
    assert list(added)[0] == "parentUuid" and added["parentUuid"] == "a3"
    assert added["message"]["content"] == [{"type": "tool_result", "content": "[Request interrupted by user for tool use]",
                                            "is_error": True, "tool_use_id": "toolu_2"}]
    assert b'"uuid":"' + added["uuid"].encode() + b'","timestamp":"' in after   # adjacent, for the >5 MB loader
    assert found(homes) == []
    undo(homes)
    assert path.read_bytes() == data


def test_dangling_tool_use_on_a_torn_file_is_not_appended_to(world):
    homes, proj = world
    put(homes, proj, transcript(proj, dangling=True) + b'{"half')
    [f] = found(homes, "claude.dangling-tool-use")
    assert f.repair == []


def test_project_key_for_a_vanished_folder_is_reported(world):
    homes, proj = world
    gone = str(Path(homes.home) / "gone")
    homes.claude.mkdir(parents=True, exist_ok=True)
    homes.claude_json.write_text(json.dumps({"projects": {proj: {}, gone: {"hasTrustDialogAccepted": True}}}))
    [f] = found(homes, "claude.project-key-missing")
    assert f.data["key"] == gone


def _age(path: Path, days: float) -> None:
    t = time.time() - days * 86400
    os.utime(path, (t, t))


def test_cleanup_warns_past_the_cutoff_and_within_seven_days_of_it(world):
    homes, proj = world
    old = put(homes, proj, transcript(proj))
    soon = put(homes, proj, transcript(proj, sid=SID2), sid=SID2)
    fresh = put(homes, proj, transcript(proj, sid="8a1d2a3b-4c5d-4e6f-8a9b-0c1d2e3f4a5b"),
                sid="8a1d2a3b-4c5d-4e6f-8a9b-0c1d2e3f4a5b")
    (homes.claude / "settings.json").write_text(json.dumps({"cleanupPeriodDays": 10}))
    _age(old, 11), _age(soon, 5), _age(fresh, 2)
    fs = found(homes, "claude.cleanup-soon", now=datetime.now(timezone.utc))
    assert sorted((f.count, tuple(f.data["paths"])) for f in fs) == [(1, (str(old),)), (1, (str(soon),))]
