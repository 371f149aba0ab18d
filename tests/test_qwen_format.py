"""Qwen Code's session files (docs/qwen.md): reader, listing, native round trip, broken lines, homes."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from histmig.cli import samples
from histmig.core.model import Reasoning, Text, ToolCall, ToolResult
from histmig.tools import canonical, resolve_homes
from histmig.tools.qwen import adapter

SAMPLES = Path(samples.__file__).resolve().parents[1] / "samples" / "qwen"
FILES = sorted(SAMPLES.glob("*/projects/*/chats/*.jsonl"))


def test_the_samples_were_recorded():
    assert {p.parts[-5] for p in FILES} == {"plain", "tool-call", "resumed", "unicode-cwd"}


@pytest.mark.parametrize("path", FILES, ids=[p.parts[-5] for p in FILES])
def test_native_round_trip_is_byte_identical(path):
    assert adapter.serialize(adapter.read(path)) == path.read_bytes()
    assert adapter.serialize(adapter.stream(path)) == path.read_bytes()
    assert adapter.detect(path)


def test_reader_maps_calls_results_usage_and_envelope():
    path = next(p for p in FILES if p.parts[-5] == "tool-call")
    s = adapter.read(path)
    assert s.cwd == "/tmp/histmig-rec/work/app" and s.model == "fake-model"
    assert s.title == "RUN: echo hello from the tool"
    kinds = [(r.source_type, r.kind, r.role) for r in s.records if r.source_type != "system"]
    assert kinds == [("user", "message", "user"), ("assistant", "tool_call", "assistant"),
                     ("tool_result", "tool_result", "tool"), ("assistant", "message", "assistant")]
    call = s.records[3].parts[0]
    assert isinstance(call, ToolCall) and call.name == "run_shell_command"
    assert call.arguments == {"command": "echo hello from the tool"}
    result = next(r for r in s.records if r.kind == "tool_result").parts[0]
    assert isinstance(result, ToolResult) and result.call_id == call.call_id and "hello from the tool" in result.output
    assert s.meta["usage"]["requests"] == 2
    assert all(r.extra.get("cwd") == s.cwd for r in s.records)


def test_a_changed_record_is_encoded_in_qwens_shape():
    path = next(p for p in FILES if p.parts[-5] == "tool-call")
    s = adapter.read(path)
    recs = [r.evolve() for r in s.records]   # raw cleared: every record re-encoded
    s.records = recs
    again = adapter.serialize(s)
    import orjson
    for new, old in zip(again.splitlines(), path.read_bytes().splitlines()):
        assert orjson.loads(new) == orjson.loads(old)


def test_thought_parts_are_reasoning_with_their_signature():
    part = adapter.part_of({"text": "hmm", "thought": True, "thoughtSignature": "sig"}, None)
    assert part == Reasoning(text="hmm", signature="sig")
    assert adapter.part_of({"text": "hi"}, None) == Text("hi")
    assert adapter.part_to_json(part) == {"text": "hmm", "thought": True, "thoughtSignature": "sig"}


def test_broken_lines_are_counted_and_kept(tmp_path):
    src = next(p for p in FILES if p.parts[-5] == "plain")
    folder = tmp_path / ".qwen" / "projects" / "-w" / "chats"
    folder.mkdir(parents=True)
    dst = folder / src.name
    lines = src.read_bytes().splitlines(keepends=True)
    data = lines[0] + b'{"uuid": broken\n' + b"".join(lines[1:]) + b'{"torn'
    dst.write_bytes(data)
    s = adapter.read(dst)
    assert adapter.serialize(s) == data
    assert s.opaque_count == 2 and len(s.warnings) == 2
    ref = adapter.ref_for(dst)
    assert "2 broken lines" in ref.state


def test_discover_lists_chats_and_archived_chats(tmp_path):
    homes = samples.install(tmp_path / "h", tools=("qwen",))
    arch = next((homes.qwen / "projects").glob("*/chats")) / "archive"
    arch.mkdir()
    one = next(arch.parent.glob("*.jsonl"))
    os.rename(one, arch / one.name)
    refs = {r.id: r for r in adapter.discover(homes)}
    assert len(refs) == 4 and refs[one.stem].archived and "archived" in refs[one.stem].state


def test_slug_is_qwens_sanitize_cwd():
    assert adapter.qwen_slug("/tmp/histmig-rec/work/my app/データ") == "-tmp-histmig-rec-work-my-app----"
    assert adapter.qwen_slug("/a/b_c.d") == "-a-b-c-d"
    assert adapter.qwen_slug("/x/😀") == "-x---"     # one code point outside the BMP is two JS units
    assert {p.parts[-3] for p in FILES} == {adapter.qwen_slug(adapter.read(p).cwd) for p in FILES}


def test_home_is_runtime_dir_then_qwen_home_then_default(tmp_path):
    env = {"HOME": "/h"}
    assert resolve_homes(env=env).qwen == Path("/h/.qwen")
    assert resolve_homes(env=env | {"QWEN_HOME": "/q"}).qwen == Path("/q")
    assert resolve_homes(env=env | {"QWEN_HOME": "/q", "QWEN_RUNTIME_DIR": "/r"}).qwen == Path("/r")
    assert resolve_homes(home="/o", env=env | {"QWEN_HOME": "/q", "QWEN_RUNTIME_DIR": "/r"}).qwen == Path("/o/.qwen")
    assert resolve_homes(env=env | {"QWEN_HOME": "/q"}, qwen_home="/f").qwen == Path("/f")
    assert canonical("qwen-code") == canonical("Qwen") == "qwen"


def test_a_big_session_is_counted_exactly_and_the_index_answers_the_second_scan(tmp_path):
    src = next(p for p in FILES if p.parts[-5] == "resumed")
    folder = tmp_path / ".qwen" / "projects" / "-w" / "chats"
    folder.mkdir(parents=True)
    big = folder / src.name
    lines = src.read_bytes().splitlines(keepends=True)
    big.write_bytes(b"".join(lines * 40))                 # ~330 KB: past the two 64 KB ends
    ref = adapter.ref_for(big)
    assert ref.messages == 5 * 40 and ref.title == "first question"
    from histmig.core.scanindex import ScanIndex
    index = ScanIndex(str(tmp_path / "idx.json"))
    first = adapter.ref_for(big, index=index)
    again = adapter.ref_for(big, index=index)
    assert (first.messages, first.cwd, first.title) == (again.messages, again.cwd, again.title) == (200, ref.cwd, ref.title)
