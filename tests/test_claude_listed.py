"""A Claude Code listing reads its two ends as ``ListedRecord``s and starts the message count past the
head (histmig/tools/claude_code/listing.py, docs/scan-show.md "What a Claude Code listing reads"): the
row is exactly the one it was when every Record of both ends was built and the count parsed the file
from its first byte. Compared on every sample and on generated files of every shape a listing reads:
assistant messages split over lines (also across the head's end), blank, broken, BOM, CRLF, over-long
and unterminated lines, injected and command prompts, tool results, titles, sidechain, team and SDK
sessions, a cwd only in a broken line, nested markers."""
from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from histmig.core.model import SessionRef
from histmig.core.scanindex import ScanIndex
from histmig.tools.claude_code import listing
from histmig.tools.claude_code.records import records_from_lines
from histmig.tools.claude_family import listing as family
from tests.test_claude_format import SID, assistant, claude_sample_files, conversation, user


def reference(path: Path) -> dict:
    """The row as the listing made it before: Records of both ends, the count by a byte search from
    the first byte."""
    ref = SessionRef(format=listing.NAME, id=path.stem, path=path)
    st_ = path.stat()
    ref.size, ref.updated = st_.st_size, st_.st_mtime
    ends = family.scan_ends(path, st_.st_size, records_from_lines)
    listing.summarize(ref, ends.head, ends.tail, ends.whole)
    if not ends.whole:
        ref.messages = family.count_messages_from(path)[0]
    listing._count_agents(ref, path, None)
    return ref.to_dict()


def listed(path: Path) -> dict:
    return listing.ref_for(path).to_dict()


@pytest.mark.parametrize("path", claude_sample_files(), ids=lambda p: p.parent.name + "/" + p.name)
def test_every_sample_lists_as_before(path):
    assert listed(path) == reference(path)


def big(objs: list[dict], pad: int = 900) -> list[dict]:
    """``objs`` with enough padded user and assistant lines around them to be over 128 KB."""
    fill = [user(f"f{i}", None, [{"type": "tool_result", "tool_use_id": "t", "content": "x" * pad}])
            for i in range(80)]
    return fill + objs + fill


def write(tmp_path: Path, data: bytes) -> Path:
    path = tmp_path / f"{SID}.jsonl"
    path.write_bytes(data)
    return path


def lines(objs: list[dict]) -> bytes:
    return b"".join(orjson.dumps(o) + b"\n" for o in objs)


@pytest.mark.parametrize("shape", ["small", "big", "bom", "crlf", "unterminated", "broken-tail"])
def test_the_usual_conversation_lists_as_before(tmp_path, shape):
    objs = conversation() if shape == "small" else big(conversation())
    data = lines(objs)
    if shape == "bom":
        data = b"\xef\xbb\xbf" + data
    elif shape == "crlf":
        data = data.replace(b"\n", b"\r\n")
    elif shape == "unterminated":
        data = data + b'{"type":"user","message":{"role":"user","content":"late"}}'
    elif shape == "broken-tail":
        data = data + b'{"type":"assistant","trunc\n'
    path = write(tmp_path, data)
    assert listed(path) == reference(path)


def test_an_assistant_message_split_across_the_heads_end_counts_once(tmp_path):
    head = [user(f"h{i}", None, "y" * 700) for i in range(60)]
    split = [assistant(f"a{i}", None, "msg_x", {"type": "text", "text": "z" * 2000}) for i in range(12)]
    path = write(tmp_path, lines(head + split + big([])))
    row = listed(path)
    assert row == reference(path)
    assert row["messages"] == 60 + 1 + 160


def test_an_assistant_message_split_across_the_tails_start_counts_once(tmp_path):
    split = [assistant(f"a{i}", None, "msg_y", {"type": "text", "text": "z" * 2500}) for i in range(40)]
    path = write(tmp_path, lines(big([]) + split + [user("last", None, "bye")]))
    row = listed(path)
    assert row == reference(path)
    assert row["messages"] == 160 + 1 + 1


def test_the_byte_search_runs_between_the_ends_and_the_index_resumes_as_before(tmp_path, monkeypatch):
    path = write(tmp_path, lines(big(conversation())))
    spans = []
    real = family.search_messages

    def spy(p, count, stop=None):
        spans.append((count.pos, stop))
        return real(p, count, stop)
    monkeypatch.setattr(family, "search_messages", spy)
    index = ScanIndex(str(tmp_path / "a.idx"))
    listing.ref_for(path, index=index)
    [(start, stop)] = spans
    size = path.stat().st_size
    assert family.HEAD_TAIL <= start < stop <= size - family.HEAD_TAIL + 2048   # each line parsed once
    total, resume = family.count_messages_from(path)                           # from the first byte
    assert index.records[str(path)][3] == resume and index.records[str(path)][2]["messages"] == total


@pytest.mark.parametrize("cut", [0, 1, 40])
def test_a_last_line_without_its_newline_is_where_a_later_count_resumes(tmp_path, cut):
    data = lines(big(conversation()))
    last = lines([assistant("z", None, "msg_2", {"type": "text", "text": "still writing"})])
    path = write(tmp_path, data + last[:len(last) - 1 - cut])
    index = ScanIndex(str(tmp_path / "a.idx"))
    row = listing.ref_for(path, index=index).to_dict()
    assert row == reference(path)
    assert index.records[str(path)][3] == family.count_messages_from(path)[1]
    assert index.records[str(path)][3]["end"] == len(data)


KINDS = st.sampled_from(["user", "prompt", "meta", "command", "tool", "assistant", "blank", "broken",
                         "progress", "title", "ai-title", "last-prompt", "sidechain", "team", "sdk",
                         "spaced", "raw-cwd", "no-cwd", "list"])


def line_of(kind: str, i: int, mid: str, pad: int) -> bytes:
    text = "p" * pad
    if kind == "assistant":
        o = assistant(f"a{i}", None, mid, {"type": "text", "text": text})
    elif kind == "prompt":
        o = user(f"u{i}", None, [{"type": "text", "text": f"  prompt {i} {text}"}])
    elif kind == "meta":
        o = user(f"u{i}", None, [{"type": "text", "text": "ctx"}], isMeta=True)
    elif kind == "command":
        o = user(f"u{i}", None, "<command-name>/clear</command-name>")
    elif kind == "tool":
        o = user(f"u{i}", None, [{"type": "tool_result", "tool_use_id": "t", "content": text}])
    elif kind == "progress":
        o = {"type": "progress", "data": {"message": {"type": "user", "message": {"content": text}}}}
    elif kind == "title":
        o = {"type": "custom-title", "customTitle": f"custom {i}", "sessionId": SID}
    elif kind == "ai-title":
        o = {"type": "ai-title", "aiTitle": f"ai {i}", "sessionId": SID}
    elif kind == "last-prompt":
        o = {"type": "last-prompt", "lastPrompt": f"last {i}", "sessionId": SID}
    elif kind == "sidechain":
        o = {**user(f"u{i}", None, text), "isSidechain": True}
    elif kind == "team":
        o = {**user(f"u{i}", None, text), "teamName": "t"}
    elif kind == "sdk":
        o = {**user(f"u{i}", None, text), "entrypoint": "sdk-cli"}
    elif kind == "no-cwd":
        o = {k: v for k, v in user(f"u{i}", None, text).items() if k != "cwd"}
    elif kind == "list":
        return b"[1, 2]\n"
    elif kind == "blank":
        return b"  \n"
    elif kind == "broken":
        return b'{"type":"user","message":' + text.encode() + b"\n"
    elif kind == "raw-cwd":
        return b'{"cwd":"/raw/' + str(i).encode() + b'","type":"user","mess\n'
    elif kind == "spaced":
        return b'{"type" : "user", "message": {"role": "user", "content": "' + text.encode() + b'"}}\n'
    else:
        o = user(f"u{i}", None, text)
    return orjson.dumps(o) + b"\n"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(KINDS, st.sampled_from(["m1", "m2"]), st.integers(0, 9000)), min_size=1, max_size=90),
       st.sampled_from(["", "bom", "crlf", "unterminated"]))
def test_any_file_lists_as_before(tmp_path, items, variant):
    data = b"".join(line_of(kind, i, mid, pad) for i, (kind, mid, pad) in enumerate(items))
    if variant == "bom":
        data = b"\xef\xbb\xbf" + data
    elif variant == "crlf":
        data = data.replace(b"\n", b"\r\n")
    elif variant == "unterminated":
        data = data[:-1]
    path = write(tmp_path, data)
    assert listed(path) == reference(path)
