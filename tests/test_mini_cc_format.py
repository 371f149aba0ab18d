"""mini-cc adapter: byte-exact round trip in both styles, parts, usage, listing, folders."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from histmig.tools.mini_cc import adapter as mc
from histmig.tools import resolve_homes
from histmig.core.model import Reasoning, Text, ToolCall, ToolResult

SAMPLES = Path(__file__).resolve().parent.parent / "histmig" / "samples"
BASIC = SAMPLES / "mini-cc" / "basic"
NODE = "6ec7a169-ab5d-4f12-bf8d-16f92f2c50f4"
PY = "b25c2034-6d1f-4e8a-9b3c-2f7e1a0d5c48"
TOOLS = "e4a1f0c2-7b3d-4c5e-9a8f-1d2c3b4a5e6f"


def mini_sample_files() -> list[Path]:
    return sorted((SAMPLES / "mini-cc").rglob("*.jsonl")) + sorted((SAMPLES / "broken" / "mini-cc").rglob("*.jsonl"))


@pytest.mark.parametrize("path", mini_sample_files(), ids=lambda p: str(p.relative_to(SAMPLES)))
def test_serialize_of_read_is_byte_identical_for_every_mini_cc_sample(path):
    assert mc.serialize(mc.read(path)) == path.read_bytes()


def sample(sid: str) -> Path:
    return next(BASIC.rglob(f"{sid}.jsonl"))


@pytest.fixture
def home(isolated_homes):
    tree = resolve_homes().mini_cc
    shutil.copytree(BASIC, tree)
    return resolve_homes()


def test_both_serialisation_styles_are_recognised():
    assert mc.read(sample(NODE)).meta["style"] == "compact"
    assert mc.read(sample(PY)).meta["style"] == "spaced"
    assert sample(PY).read_bytes().startswith(b'{"type": "user", "uuid": ')


def test_reminder_block_is_injected_and_the_title_is_the_typed_prompt():
    session = mc.read(sample(NODE))
    first = session.records[0].parts
    assert first[0].injected and first[0].text.startswith("<system-reminder>")
    assert first[1] == Text("记一下：测试命令是 npm test")
    assert session.title == "记一下：测试命令是 npm test"


def test_tool_use_result_and_signed_thinking_map_to_parts():
    session = mc.read(sample(TOOLS))
    thinking, text, call = session.records[1].parts
    assert isinstance(thinking, Reasoning) and thinking.signature.startswith("EuYB")
    assert call == ToolCall("toolu_01A2b3C4d5E6f7G8h9I0j1K2", "bash", {"command": "find src -name '*.py' | wc -l"})
    assert session.records[1].kind == "tool_call"
    [result] = session.records[2].parts
    assert result == ToolResult("toolu_01A2b3C4d5E6f7G8h9I0j1K2", "17\n", is_error=False)


def test_usage_is_read_from_the_top_level_and_summed_like_status():
    session = mc.read(sample(NODE))
    assert [r.usage for r in session.records] == [None, {"input_tokens": 120, "output_tokens": 24}, None,
                                                  {"input_tokens": 80, "output_tokens": 16}]
    assert session.meta["usage"] == {"input_tokens": 200, "output_tokens": 40, "requests": 2}


def test_records_keep_the_parent_chain_and_session_fields():
    session = mc.read(sample(PY))
    assert session.records[0].parent_id is None
    assert [r.parent_id for r in session.records[1:]] == [r.id for r in session.records[:-1]]
    assert session.cwd == "/home/user/work/py-app" and session.id == PY
    assert session.created == "2026-10-21T11:44:41.544+00:00"


@pytest.mark.parametrize("sid, style_prefix", [(NODE, b'{"type":"user","uuid":'), (PY, b'{"type": "user", "uuid": ')])
def test_an_evolved_record_is_written_in_the_files_own_style(sid, style_prefix):
    session = mc.read(sample(sid))
    session.records[2] = session.records[2].evolve(parts=[Text("changed")])
    out = mc.serialize(session).splitlines(keepends=True)
    old = sample(sid).read_bytes().splitlines(keepends=True)
    assert [i for i, (a, b) in enumerate(zip(out, old)) if a != b] == [2]
    assert out[2].startswith(style_prefix)
    new, before = json.loads(out[2]), json.loads(old[2])
    assert list(new) == list(before)                       # the writer's key order
    assert new["message"]["content"] in ("changed", [{"type": "text", "text": "changed"}])


def test_discover_lists_every_session_with_cwd_title_and_count(home):
    refs = {r.id: r for r in mc.discover(home)}
    assert set(refs) == {NODE, PY, TOOLS}
    assert refs[PY].cwd == "/home/user/work/py-app" and refs[PY].title == "记一下：测试命令是 uv run pytest -q"
    assert refs[NODE].messages == 4 and refs[NODE].state == []


def test_folders_are_located_by_the_recorded_cwd_not_by_a_computed_name(home):
    root = mc.projects_root(home)
    (root / "-home-user-work-py-app").rename(root / "renamed-by-hand")
    assert mc.project_dirs(root, "/home/user/work/py-app") == [root / "renamed-by-hand"]
    folder, odd = mc.folder_for(root, "/home/user/work/py-app")
    assert folder == root / "renamed-by-hand" and odd == [folder]
    folder, odd = mc.folder_for(root, "/home/user/new")
    assert folder == root / "-home-user-new" and odd == []


def test_detect_accepts_mini_cc_and_rejects_claude(tmp_path):
    assert mc.detect(sample(NODE)) and mc.detect(sample(PY))
    claude = next((SAMPLES / "broken" / "claude-code").rglob("00000007-*.jsonl"))
    assert not mc.detect(claude)
