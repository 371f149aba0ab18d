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
from histmig.tools.mini_cc import adapter as mini_cc
from histmig.jsonio.marks import MarkedLines, ends_line, parse_line
from tests.test_claude_format import SID, assistant, claude_sample_files, conversation, user


def old_count(path: Path, grouped: bool = True) -> tuple[int, dict]:
    """The count and resume point as 1c64820 made them: one byte search from the first byte (a frozen
    copy of its ``count_messages_from``)."""
    total, mid, at, resume = 0, None, -1, None
    with open(path, "rb") as fh:
        lines = MarkedLines(fh, family.MESSAGE_MARK, start=0)
        for offset, raw in lines:
            if not ends_line(raw):
                resume = {"end": offset, "msgs": total, "mid": mid if at == offset else None}
            obj = parse_line(offset, raw)[0]
            t = obj.get("type") if isinstance(obj, dict) else None
            msg = obj.get("message") if t == "assistant" else None
            new_mid = msg["id"] if grouped and isinstance(msg, dict) and isinstance(msg.get("id"), str) else None
            if t in ("user", "assistant") and not (new_mid is not None and new_mid == mid and at == offset):
                total += 1
            mid, at = new_mid, offset + len(raw)
    if resume is None:
        resume = {"end": lines.end, "msgs": total, "mid": mid if at == lines.end else None}
    return total, resume


def reference(path: Path) -> dict:
    """The row as the listing made it before: Records of both ends, the count by a byte search from
    the first byte."""
    ref = SessionRef(format=listing.NAME, id=path.stem, path=path)
    st_ = path.stat()
    ref.size, ref.updated = st_.st_size, st_.st_mtime
    ends = family.scan_ends(path, st_.st_size, records_from_lines)
    listing.summarize(ref, ends.head, ends.tail, ends.whole)
    if not ends.whole:
        ref.messages = old_count(path)[0]
    listing._count_agents(ref, path, None)
    return ref.to_dict()


def stored_resume(path: Path, tmp_path: Path, ref_for=listing.ref_for) -> dict | None:
    """The resume point a cold listing stores in the scan index."""
    index = ScanIndex(str(tmp_path / "resume.idx"))
    ref_for(path, index=index)
    return index.record(str(path))[3]


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
        spans.append((count.at, stop))
        return real(p, count, stop)
    monkeypatch.setattr(family, "search_messages", spy)
    index = ScanIndex(str(tmp_path / "a.idx"))
    listing.ref_for(path, index=index)
    [(start, stop)] = spans
    size = path.stat().st_size
    assert family.HEAD_TAIL <= start < stop <= size - family.HEAD_TAIL + 2048   # each line parsed once
    total, resume = old_count(path)                                            # from the first byte
    assert index.record(str(path))[3] == resume and index.record(str(path))[2]["messages"] == total


@pytest.mark.parametrize("cut", [0, 1, 40])
def test_a_last_line_without_its_newline_is_where_a_later_count_resumes(tmp_path, cut):
    data = lines(big(conversation()))
    last = lines([assistant("z", None, "msg_2", {"type": "text", "text": "still writing"})])
    path = write(tmp_path, data + last[:len(last) - 1 - cut])
    index = ScanIndex(str(tmp_path / "a.idx"))
    row = listing.ref_for(path, index=index).to_dict()
    assert row == reference(path)
    assert index.record(str(path))[3] == old_count(path)[1]
    assert index.record(str(path))[3]["end"] == len(data)


KINDS = st.sampled_from(["user", "prompt", "meta", "command", "tool", "assistant", "blank", "broken",
                         "progress", "title", "ai-title", "last-prompt", "sidechain", "team", "sdk",
                         "spaced", "raw-cwd", "no-cwd", "list", "long"])


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
    elif kind == "long":                       # a line over the 64 KB an end is
        o = user(f"u{i}", None, "L" * 70_000)
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
    if len(data) > 2 * family.HEAD_TAIL:
        assert stored_resume(path, tmp_path) == old_count(path)[1]


def test_mini_cc_counts_every_assistant_line_as_before(tmp_path):
    split = [assistant(f"a{i}", None, "msg_y", {"type": "text", "text": "z" * 2500}) for i in range(40)]
    path = write(tmp_path, lines(split + big([]) + split + [user("last", None, "bye")]))
    total, resume = old_count(path, grouped=False)
    assert mini_cc.ref_for(path).messages == total == 40 + 160 + 40 + 1
    assert stored_resume(path, tmp_path, mini_cc.ref_for) == resume


@pytest.mark.parametrize("case", ["head-to-the-end", "unterminated-head-to-the-end", "no-tail-line"])
def test_a_line_over_the_ends_lists_as_before(tmp_path, case):
    long = lines([user("big", None, "L" * 200_000)])
    if case == "head-to-the-end":
        data = lines(conversation()) + long
    elif case == "unterminated-head-to-the-end":
        data = lines(conversation()) + long[:-1]
    else:
        data = lines(big(conversation())) + long[:-1]
    path = write(tmp_path, data)
    assert listed(path) == reference(path)
    assert stored_resume(path, tmp_path) == old_count(path)[1]


def test_a_head_line_finished_while_the_file_is_listed_is_counted_once(tmp_path, monkeypatch):
    """The head was read to the end of a file whose last line was still being written; before the
    tail is read, the writer ends it, adds a line and starts another: the count is the old one-pass
    count of the file as it is then, and so is the stored resume point."""
    big_line = lines([user("big", None, "L" * 200_000)])
    path = write(tmp_path, lines(conversation()) + big_line[:150_000])       # cut inside its text
    real = family.tail_lines

    def growing(p, **kw):
        with open(p, "ab") as fh:
            fh.write(big_line[150_000:] + lines([user("next", None, "n")]) + b'{"type":"user","mess')
        return real(p, **kw)
    monkeypatch.setattr(family, "tail_lines", growing)
    index = ScanIndex(str(tmp_path / "a.idx"))
    ref = listing.ref_for(path, index=index)
    total, resume = old_count(path)
    assert ref.messages == total and index.record(str(path))[3] == resume
