"""Cline CLI's session files (docs/cline.md): reader, listing, native round trip, homes."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from histmig.cli import samples
from histmig.core.diagnostics import HistmigInputError
from histmig.core.model import Reasoning, Text, ToolCall, ToolResult
from histmig.tools import canonical, resolve_homes
from histmig.tools.cline import adapter

SAMPLES = Path(samples.__file__).resolve().parents[1] / "samples" / "cline"
FILES = sorted(SAMPLES.glob("*/data/sessions/*/*.messages.json"))


def case(name: str) -> Path:
    return next(p for p in FILES if p.parts[-5] == name)


def test_the_samples_were_recorded():
    assert {p.parts[-5] for p in FILES} == {"plain", "tool-call", "resumed", "unicode-cwd"}


@pytest.mark.parametrize("path", FILES, ids=[p.parts[-5] for p in FILES])
def test_native_round_trip_is_byte_identical(path):
    assert adapter.serialize(adapter.read(path)) == path.read_bytes()
    assert adapter.detect(path) and adapter.detect(adapter.manifest_path(path))


@pytest.mark.parametrize("path", FILES, ids=[p.parts[-5] for p in FILES])
def test_every_record_re_encoded_gives_the_same_bytes(path):
    """Cline writes ``JSON.stringify(doc, null, 2)``: a re-encoded record lands in the same shape."""
    s = adapter.read(path)
    s.records = [r.evolve() for r in s.records]
    assert adapter.serialize(s) == path.read_bytes()


def test_reader_maps_wrapped_user_text_calls_and_list_results():
    s = adapter.read(case("tool-call"))
    assert s.cwd == "/tmp/histmig-rec/work/app" and s.model == "fake-model" and s.provider == "openai-compatible"
    assert s.title == "RUN: echo hello from the tool"
    assert [(r.kind, r.role, r.source_type) for r in s.records] == [
        ("message", "user", "user/act"), ("tool_call", "assistant", "assistant"),
        ("tool_result", "tool", "user"), ("message", "assistant", "assistant")]
    assert s.records[0].parts == [Text("RUN: echo hello from the tool")]
    call = s.records[1].parts[0]
    assert isinstance(call, ToolCall) and call.name == "run_commands"
    assert call.arguments == {"commands": ["echo hello from the tool"]}
    result = s.records[2].parts[0]
    assert isinstance(result, ToolResult) and result.call_id == call.call_id
    assert result.output == "hello from the tool\n" and not result.is_error
    assert result.structured["name"] == "run_commands"
    assert s.meta["manifest"]["session_id"] == s.id


def test_blocks_map_both_ways():
    assert adapter.part_of({"type": "thinking", "thinking": "hmm", "signature": "s"}) == Reasoning(text="hmm",
                                                                                                  signature="s")
    r = adapter.part_of({"type": "tool_result", "tool_use_id": "c", "name": "x", "content": "plain"})
    assert r.output == "plain" and adapter.block_of(r, None)["content"] == "plain"
    bad = adapter.part_of({"type": "tool_result", "tool_use_id": "c", "name": "x",
                           "content": [{"query": "q", "result": "no", "success": False}]})
    assert bad.is_error and adapter.block_of(bad, None)["content"][0]["success"] is False


def test_listing_reads_the_manifest_and_counts_messages(tmp_path):
    homes = samples.install(tmp_path / "h", tools=("cline",))
    refs = {r.title: r for r in adapter.discover(homes)}
    assert set(refs) == {"Say hello in one short sentence.", "RUN: echo hello from the tool", "first question",
                         "hello from a unicode folder"}
    assert refs["first question"].messages == 6 and refs["RUN: echo hello from the tool"].messages == 4
    assert refs["first question"].cwd == "/tmp/histmig-rec/work/app"
    for ref in refs.values():   # the samples hook re-pointed messages_path at the copy
        assert json.loads(adapter.manifest_path(ref.path).read_text())["messages_path"] == str(ref.path)


def test_a_broken_messages_file_is_named(tmp_path):
    d = tmp_path / "1796137263007_59v2o"
    d.mkdir()
    (d / f"{d.name}.messages.json").write_text('{"messages": [')
    with pytest.raises(HistmigInputError) as e:
        adapter.read(d / f"{d.name}.messages.json")
    assert d.name in e.value.describe()
    ref = adapter.ref_for(d / f"{d.name}.messages.json")
    assert ref.messages == 0 and "no manifest" in ref.state


def test_homes_and_aliases(monkeypatch, tmp_path):
    assert canonical("Cline-CLI") == "cline"
    homes = resolve_homes()
    assert adapter.sessions_root(homes) == Path(homes.cline) / "data" / "sessions"
    monkeypatch.setenv("CLINE_DATA_DIR", str(tmp_path / "d"))
    assert adapter.sessions_root(resolve_homes()) == tmp_path / "d" / "sessions"


@pytest.mark.parametrize("path", FILES, ids=[p.parts[-5] for p in FILES])
def test_stream_gives_the_records_of_read_one_message_at_a_time(path):
    """``stream`` (histmig/jsonio/jsonpull.py) holds one message, not the file: same records, title,
    warnings and count as ``read``, and the same bytes back while the file is unchanged."""
    s, streamed = adapter.read(path), adapter.stream(path)
    assert [(r.raw, r.parts, r.extra) for r in streamed.records] == [(r.raw, r.parts, r.extra) for r in s.records]
    assert "native" not in streamed.meta and streamed.title == s.title and streamed.warnings == s.warnings
    assert {k: streamed.meta[k] for k in ("count", "envelope", "order")} == {k: s.meta[k] for k in
                                                                             ("count", "envelope", "order")}
    assert adapter.serialize(streamed) == path.read_bytes()


def test_a_streamed_session_whose_file_changed_is_re_encoded_not_read_again(tmp_path):
    path = tmp_path / FILES[0].name
    path.write_bytes(FILES[0].read_bytes())
    streamed = adapter.stream(path)
    path.write_bytes(path.read_bytes() + b" ")
    assert adapter.serialize(streamed) == FILES[0].read_bytes()     # Cline's own shape, from the records


_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2 ** 70), max_value=2 ** 70) | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=25)


@settings(max_examples=3000, deadline=None)
@given(_JSON_VALUES)
def test_a_message_is_dumped_as_json_dumps_indent_2_dumps_it(value):
    """adapter.dump takes orjson's indenting writer where it writes json's bytes (floats spelled
    alike, integers within 64 bits) and json.dumps otherwise: the same bytes either way."""
    try:
        want = json.dumps(value, ensure_ascii=False, indent=2).encode()
    except UnicodeEncodeError:        # a lone surrogate: json cannot encode it as UTF-8 either way
        with pytest.raises(UnicodeEncodeError):
            adapter.dump(value)
        return
    assert adapter.dump(value) == want
