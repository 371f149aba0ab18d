"""manifest adapter: byte-exact transcript, meta.json and checkpoints; health; separation from Claude."""
from __future__ import annotations

import shutil
from datetime import datetime, timezone
from pathlib import Path

import pytest

from histmig.tools.claude_code import adapter as cc
from histmig.tools.manifest import adapter as mf
from histmig.tools import resolve_homes
from histmig.core.model import Text, ToolCall, ToolResult

SAMPLES = Path(__file__).resolve().parent.parent / "histmig" / "samples"
HEALTHY = SAMPLES / "manifest" / "healthy"
UNHEALTHY = SAMPLES / "manifest" / "unhealthy-checkpoint-past-end"


def manifest_session_dirs() -> list[Path]:
    return sorted({p.parent for p in (SAMPLES / "manifest").rglob("*")
                   if p.name in ("transcript.jsonl", "meta.json") and p.parent.parent.name == "sessions"})


@pytest.mark.parametrize("d", manifest_session_dirs(), ids=lambda p: str(p.relative_to(SAMPLES)))
def test_transcript_meta_and_checkpoints_are_byte_identical_after_read(d):
    session = mf.read(d)
    assert mf.serialize(session) == (d / "transcript.jsonl").read_bytes()
    assert mf.serialize_meta(session) == (d / "meta.json").read_bytes()
    for cp in session.meta["checkpoints"]:
        assert cp["raw"] == (d / "checkpoints" / cp["name"]).read_bytes()


def test_there_are_manifest_samples():
    assert len(manifest_session_dirs()) == 2


def healthy_session():
    return mf.read(next(HEALTHY.rglob("transcript.jsonl")))


def test_roles_map_to_parts_and_kinds():
    session = healthy_session()
    roles = [r.role for r in session.records]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "user"]
    assert session.records[0].parts[0].injected
    assert session.records[2].parts == [Text("Running the test suite."),
                                        ToolCall("toolu_01Xy7Qm3Rt9Vw2Za5Bc8De4F", "Bash", {"command": "npm test"})]
    assert session.records[3].kind == "tool_result"
    assert session.records[3].parts == [ToolResult("toolu_01Xy7Qm3Rt9Vw2Za5Bc8De4F", "1 failing: parser handles empty input")]
    assert session.title == "Run the tests and tell me what fails."
    assert session.cwd == "/home/user/work/app" and session.model == "claude-sonnet-4-5"
    assert mf.latest_checkpoint(session)["name"] == "cp-0002.json"


def test_healthy_sample_has_no_problems_and_unhealthy_names_its_checkpoint():
    assert mf.health(healthy_session()) == []
    bad = mf.read(next(UNHEALTHY.rglob("transcript.jsonl")))
    assert mf.health(bad) == ["checkpoint cp-0003.json index 12 > 4 messages"]


def test_meta_edit_changes_only_that_value_and_keeps_the_layout():
    session = healthy_session()
    raw = session.meta["meta_raw"]
    session.meta["meta"] = dict(session.meta["meta"], cwd="/home/user/moved/app")
    out = mf.serialize_meta(session)
    assert out == raw.replace(b'"cwd": "/home/user/work/app"', b'"cwd": "/home/user/moved/app"')


def test_meta_with_a_new_key_is_redumped_with_the_files_indentation():
    session = healthy_session()
    session.meta["meta"] = dict(session.meta["meta"], parentSessionId="p")
    out = mf.serialize_meta(session)
    assert out.endswith(b'\n  "parentSessionId": "p"\n}\n')


@pytest.fixture
def mixed_home(isolated_homes):
    """A Claude home whose project folder holds a Claude session and a manifest session."""
    homes = resolve_homes()
    shutil.copytree(HEALTHY, homes.claude)
    folder = homes.claude / "projects" / "-home-user-work-app"
    claude = next((SAMPLES / "broken" / "claude-code").rglob("00000007-*.jsonl"))
    shutil.copy(claude, folder / claude.name)
    return homes


def test_manifest_and_claude_sessions_never_show_up_as_each_other(mixed_home):
    claude_refs = list(cc.discover(mixed_home))
    manifest_refs = list(mf.discover(mixed_home))
    assert [r.id for r in claude_refs] == ["00000007-0b0c-4d0e-8f10-000000000007"]
    assert [r.id for r in manifest_refs] == ["3f9c2a1e-5b7d-4c1a-9e2f-8a6b0c4d1e7f"]
    assert all(mf.detect(r.path) and not cc.detect(r.path) for r in manifest_refs)
    assert all(cc.detect(r.path) and not mf.detect(r.path) for r in claude_refs)


def test_ref_carries_updated_at_as_the_ordering_key_and_health_in_state(isolated_homes):
    homes = resolve_homes()
    shutil.copytree(UNHEALTHY, homes.claude)
    [ref] = list(mf.discover(homes))
    assert ref.extra["updatedAt"] == "2026-10-19T14:02:30.000Z"
    assert ref.updated == datetime(2026, 10, 19, 14, 2, 30, tzinfo=timezone.utc).timestamp()
    assert ref.state == ["checkpoint cp-0003.json index 12 > 4 messages"]


def test_lock_file_and_missing_meta_are_reported(isolated_homes):
    homes = resolve_homes()
    shutil.copytree(HEALTHY, homes.claude)
    d = next(homes.claude.rglob("transcript.jsonl")).parent
    (d / ".lock").write_text("")
    (d / "meta.json").unlink()
    [ref] = list(mf.discover(homes))
    assert "locked (.lock)" in ref.state and "meta.json missing" in ref.state
    assert ref.id == d.name
