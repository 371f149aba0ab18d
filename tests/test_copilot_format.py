"""Copilot CLI's session folders (docs/copilot.md): reader, listing, native round trip, broken lines, homes."""
from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from histmig.cli import samples
from histmig.core.model import Reasoning, Text, ToolCall, ToolResult
from histmig.tools import canonical, resolve_homes
from histmig.tools.copilot import adapter, workspace

SAMPLES = Path(samples.__file__).resolve().parents[1] / "samples" / "copilot"
FILES = sorted(SAMPLES.glob("*/session-state/*/events.jsonl"))


def case(name: str) -> Path:
    return next(p for p in FILES if p.parts[-4] == name)


def test_the_samples_were_recorded():
    assert {p.parts[-4] for p in FILES} == {"plain", "tool-call", "resumed", "unicode-cwd"}


@pytest.mark.parametrize("path", FILES, ids=[p.parts[-4] for p in FILES])
def test_native_round_trip_is_byte_identical(path):
    assert adapter.serialize(adapter.read(path)) == path.read_bytes()
    assert adapter.serialize(adapter.stream(path)) == path.read_bytes()
    assert adapter.detect(path) and adapter.detect(path.parent)


@pytest.mark.parametrize("path", FILES, ids=[p.parts[-4] for p in FILES])
def test_every_event_re_encodes_to_the_same_json(path):
    s = adapter.read(path)
    s.records = [r.evolve() for r in s.records]
    for new, old in zip(adapter.serialize(s).splitlines(), path.read_bytes().splitlines(), strict=True):
        assert orjson.loads(new) == orjson.loads(old)


def test_reader_maps_messages_calls_results_and_reasoning():
    s = adapter.read(case("tool-call"))
    assert s.cwd == "/tmp/histmig-rec/work/app" and s.title == "RUN: echo hello from the tool"
    assert s.model == "claude-sonnet-4.5" and s.provider == "copilot-byok"
    assert s.meta["chain_breaks"] == 0
    convo = [(r.source_type, r.kind) for r in s.records if r.kind != "event"]
    assert convo == [("user.message", "message"), ("assistant.message", "message"),
                     ("tool.execution_complete", "tool_result"), ("assistant.message", "message")]
    first = next(r for r in s.records if r.source_type == "assistant.message")
    thinking, text, call = first.parts
    assert isinstance(thinking, Reasoning) and thinking.signature and thinking.text.startswith("I will run")
    assert isinstance(text, Text) and isinstance(call, ToolCall) and call.name == "bash"
    assert call.arguments["command"] == "echo hello from the tool"
    result = next(r for r in s.records if r.kind == "tool_result").parts[0]
    assert isinstance(result, ToolResult) and result.call_id == call.call_id and not result.is_error
    assert "hello from the tool" in result.output


def test_listing_reads_workspace_yaml_and_counts_message_lines(isolated_homes):
    import shutil
    homes = resolve_homes()
    shutil.copytree(SAMPLES / "resumed" / "session-state", homes.copilot / "session-state")
    (ref,) = list(adapter.discover(homes))
    assert ref.cwd == "/tmp/histmig-rec/work/app" and ref.title == "first question"
    s = adapter.read(ref)
    assert ref.messages == sum(1 for r in s.records if r.source_type in ("user.message", "assistant.message"))


def test_a_broken_line_is_kept_and_counted(tmp_path):
    d = tmp_path / "session-state" / "0ab1742d-9fb0-4bea-b380-4169ea651c24"
    d.mkdir(parents=True)
    data = case("plain").read_bytes()
    lines = data.splitlines(keepends=True)
    broken = lines[0] + b'{"type":"user.mess\n' + b"".join(lines[1:])
    (d / "events.jsonl").write_bytes(broken)
    s = adapter.read(d / "events.jsonl")
    assert adapter.serialize(s) == broken and s.opaque_count == 1 and len(s.warnings) == 1


def test_workspace_yaml_field_edit_touches_one_line():
    data = (case("unicode-cwd").parent / "workspace.yaml").read_bytes()
    assert workspace.parse(data)["cwd"] == "/tmp/histmig-rec/work/my app/データ"
    new = workspace.replace_field(data, "cwd", "/tmp/x: y")
    assert workspace.parse(new)["cwd"] == "/tmp/x: y"
    assert [a for a, b in zip(data.splitlines(), new.splitlines()) if a != b] == [
        next(line for line in data.splitlines() if line.startswith(b"cwd:"))]


def test_the_tool_and_its_home(isolated_homes, monkeypatch):
    assert canonical("copilot-cli") == "copilot" and canonical("Copilot") == "copilot"
    assert resolve_homes().copilot == Path(isolated_homes["HOME"]) / ".copilot"
    monkeypatch.setenv("COPILOT_HOME", str(Path(isolated_homes["HOME"]) / "elsewhere"))
    assert resolve_homes().copilot == Path(isolated_homes["HOME"]) / "elsewhere"


@pytest.mark.parametrize("chunk", [1, 7, 64, 1 << 20])
def test_the_message_count_reads_chunks_and_keeps_line_semantics(tmp_path, monkeypatch, chunk):
    """``count_messages`` reads the unbuffered file in chunks (line by line it was one read per byte: 5
    minutes for a 157 MB file): a line's type is seen across chunk edges, and an unfinished last line
    counts now but is read again next time."""
    monkeypatch.setattr(adapter, "COUNT_CHUNK", chunk)
    user, other = b'{"type":"user.message","data":{"content":"' + b"x" * 50 + b'"}}', b'{"type":"session.start"}'
    short = b'{"type":"assistant.message"}'
    path = tmp_path / "events.jsonl"
    path.write_bytes(b"\n".join([other, user, b"", short, user]) + b"\n" + short)
    done = len(b"\n".join([other, user, b"", short, user])) + 1
    assert adapter.count_messages(path) == (4, {"end": done, "msgs": 3})
    path.write_bytes(path.read_bytes() + b"\n" + other + b"\n")
    assert adapter.count_messages(path, end=done, msgs=3) == (4, {"end": path.stat().st_size, "msgs": 4})
