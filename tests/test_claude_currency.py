"""Client currency (issue 14): what Claude Code 2.1.265 / 2.1.332 add, read from a real 2.1.332 recording.

``histmig/samples/versions/claude-code-2.1.332/subagent`` was recorded by the real 2.1.332 client with
``HISTMIG_E2E_CLIENTS=newest python -m tests.e2e.record_samples --only claude-code subagent`` (see
histmig/samples/README.md). It is not one of the demo's cases (those are the pinned client's).
"""
from __future__ import annotations

import shutil
from pathlib import Path

import orjson
import pytest

from histmig.cli import cli
from histmig.cli.common import run_guarded
from histmig.core.paths import claude_slug
from histmig.tools.claude_code import adapter, records
from histmig.tools.claude_code.move import claude_fields
from histmig.toolkit.move.common import PathMap

from test_move_fixtures import homes, structured_leftovers, tool_trees

SAMPLE = Path(__file__).resolve().parents[1] / "histmig/samples/versions/claude-code-2.1.332/subagent"
RECORDED_CWD = "/tmp/histmig-rec/work/app"
NEW_RECORD_TYPES = {"atis-latch", "api-request-shape", "api-request-blob", "api-request", "cost-state", "tools-used"}
NEW_ATTACHMENTS = {"environment", "model", "deferred_tools_delta", "session_context", "date",
                   "remote_session_change", "prompt_snapshot"}


def transcripts(root: Path) -> list[Path]:
    return sorted(p for p in (root / "projects").rglob("*.jsonl"))


def test_new_record_types_are_named_by_the_reader_and_counted():
    counts: dict[str, int] = {}
    for path in transcripts(SAMPLE):
        for name, n in records.type_counts(adapter.read_file(path).records).items():
            counts[name] = counts.get(name, 0) + n
    assert not [k for k in counts if k.startswith("unknown")], counts
    assert NEW_RECORD_TYPES <= set(counts)
    assert {f"attachment/{a}" for a in NEW_ATTACHMENTS} <= set(counts)
    assert NEW_RECORD_TYPES <= records.CLIENT_STATE_TYPES and NEW_ATTACHMENTS <= records.ATTACHMENT_TYPES


def test_new_record_types_are_kept_byte_exact():
    for path in transcripts(SAMPLE):
        session = adapter.read_file(path)
        assert records.serialize(session) == path.read_bytes()
        assert all(r.raw is not None for r in session.records)


def test_new_record_types_are_not_messages():
    session = adapter.read_file(next(p for p in transcripts(SAMPLE) if "subagents" not in p.parts))
    new = [r for r in session.records if r.source_type in NEW_RECORD_TYPES]
    assert new and all(r.kind == "event" and r.role is None for r in new)
    assert records.count_messages(session.records) == records.count_messages(
        [r for r in session.records if r.source_type not in NEW_RECORD_TYPES])


def environment_line() -> bytes:
    """A recorded 2.1.332 ``environment`` attachment line, unchanged."""
    for raw in transcripts(SAMPLE)[0].read_bytes().splitlines(keepends=True):
        if b'"type":"environment"' in raw:
            return raw
    raise AssertionError("no environment attachment in the 2.1.332 recording")


def test_move_rewrites_environment_snapshot_working_directory_fields():
    obj = orjson.loads(environment_line())
    assert obj["attachment"]["snapshot"]["workingDirectory"] == RECORDED_CWD
    edits = claude_fields(obj, PathMap((RECORDED_CWD,), "/srv/app2"))
    assert (("attachment", "snapshot", "workingDirectory"), RECORDED_CWD, "/srv/app2") in edits
    assert (("cwd",), RECORDED_CWD, "/srv/app2") in edits
    obj["attachment"]["snapshot"]["additionalWorkingDirectories"] = [RECORDED_CWD + "/lib", "/elsewhere"]
    extra = claude_fields(obj, PathMap((RECORDED_CWD,), "/srv/app2"))
    assert (("attachment", "snapshot", "additionalWorkingDirectories", 0), RECORDED_CWD + "/lib",
            "/srv/app2/lib") in extra
    assert not [e for e in extra if e[1] == "/elsewhere"]


@pytest.fixture
def h():
    return homes()


def test_move_of_a_2_1_332_recording_rewrites_working_directory_and_undo_restores(h, tmp_path):
    shutil.copytree(SAMPLE / "projects", h.claude / "projects")
    new = str(tmp_path / "work" / "app2")
    before = tool_trees(h)
    assert run_guarded(cli, ["move", RECORDED_CWD, new, "--apply"]) in (0, 3)
    moved = transcripts(h.claude)
    assert moved and all(claude_slug(new) in str(p) for p in moved)
    assert structured_leftovers(h.claude, RECORDED_CWD) == []
    envs = [orjson.loads(x) for p in moved for x in p.read_bytes().splitlines() if b'"type":"environment"' in x]
    assert len(envs) == 2 and {e["attachment"]["snapshot"]["workingDirectory"] for e in envs} == {new}
    old_lines = {raw for p in transcripts(SAMPLE) for raw in p.read_bytes().splitlines()}
    changed = [x for p in moved for x in p.read_bytes().splitlines() if x not in old_lines]
    # only lines naming the cwd changed; the new bookkeeping records (no cwd field) are byte-identical
    assert changed and all(orjson.loads(x).get("cwd") == new or b'"type":"environment"' in x for x in changed)
    assert run_guarded(cli, ["undo"]) == 0
    assert tool_trees(h) == before


def test_show_counts_the_new_record_types_and_names_unknown_ones(tmp_path):
    from histmig.cli.render import write_text
    path = next(p for p in transcripts(SAMPLE) if "subagents" not in p.parts)
    out: list[str] = []
    write_text(adapter.read_file(path), out.append, verbose=True)
    counted = next(ln for ln in "".join(out).splitlines() if ln.startswith("records by type: "))
    assert all(f"{t} " in counted for t in NEW_RECORD_TYPES & {"atis-latch", "api-request", "cost-state"})
    assert "attachment/environment 1" in counted
    # a type the reader does not name yet is said in the default view, and kept
    odd = tmp_path / path.name
    odd.write_bytes(path.read_bytes() + b'{"type":"brand-new-thing","sessionId":"x"}\n')
    out = []
    write_text(adapter.read_file(odd), out.append)
    assert "types histmig does not name yet, kept byte for byte: brand-new-thing 1" in "".join(out)
