"""The streaming JSONL layer: exact bytes, offsets, opaque lines, chunk invariance, line limits."""
from __future__ import annotations

import io

from hypothesis import given, settings, strategies as st

from histmig.jsonio.jsonl import BOM, iter_lines, parse_json, read_lines, head_lines, tail_lines

DAMAGED = {
    "truncated tail": b'{"type":"user","cwd":"/a',
    "spliced records": b'{"type":"user","x":1{"type":"assistant"}',
    "NUL run": b"\x00" * 512,
    "invalid UTF-8": b'{"t":"\xff\xfe"}',
    "deep nesting": b"[" * 100000 + b"]" * 100000,
    "duplicate keys": b'{"cwd":"/a","cwd":"/b"}',
    "huge integer": b'{"n":' + b"9" * 5000 + b"}",
    "NaN": b'{"n":NaN}',
}


def test_every_damaged_line_kind_is_opaque_counted_and_kept_byte_for_byte():
    good = b'{"ok":1}\n'
    data = good + b"\n".join(DAMAGED.values()) + b"\n" + good
    lines = list(iter_lines(io.BytesIO(data)))
    assert b"".join(ln.raw for ln in lines) == data
    opaque = [ln for ln in lines if ln.opaque]
    assert len(opaque) == len(DAMAGED)
    reasons = {ln.error for ln in opaque}
    assert "duplicate key 'cwd'" in reasons and "NUL bytes" in reasons and "invalid UTF-8" in reasons
    assert lines[0].obj == {"ok": 1} and lines[-1].obj == {"ok": 1}


def test_bom_crlf_and_missing_final_newline_are_kept_per_line():
    data = BOM + b'{"a":1}\r\n{"b":2}\n{"c":3}'
    lines = list(iter_lines(io.BytesIO(data)))
    assert [ln.terminator for ln in lines] == [b"\r\n", b"\n", b""]
    assert lines[0].has_bom and lines[0].body == b'{"a":1}' and lines[0].obj == {"a": 1}
    assert not lines[2].complete and lines[2].obj == {"c": 3}
    assert [ln.offset for ln in lines] == [0, 12, 20]
    assert b"".join(ln.raw for ln in lines) == data


def test_over_limit_line_is_yielded_without_its_bytes_and_with_its_extent():
    data = b'{"a":1}\n' + b'{"big":"' + b"x" * 5000 + b'"}\n' + b'{"z":0}\n'
    lines = list(iter_lines(io.BytesIO(data), max_line_bytes=1000, chunk_size=64))
    assert [ln.oversize for ln in lines] == [False, True, False]
    big = lines[1]
    assert big.raw is None and big.offset == 8 and big.length == 5000 + 11
    assert lines[2].offset == big.offset + big.length and lines[2].obj == {"z": 0}


lines_strategy = st.lists(st.one_of(
    st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")),
    st.sampled_from([b'{"a":"\xc3\xa9"}', b'{"x":[1,2]}', BOM + b"{}", b"\x00\x00", b"{"])),
    max_size=12)


@settings(max_examples=200, deadline=None)
@given(lines_strategy, st.sampled_from([b"\n", b"\r\n"]), st.booleans(), st.integers(1, 64))
def test_reader_gives_the_same_lines_for_any_chunk_size(parts, term, final_newline, chunk):
    data = term.join(parts) + (term if final_newline and parts else b"")
    expected = [(ln.offset, ln.raw) for ln in iter_lines(io.BytesIO(data), chunk_size=1 << 16)]
    got = [(ln.offset, ln.raw) for ln in iter_lines(io.BytesIO(data), chunk_size=chunk)]
    assert got == expected
    assert b"".join(raw for _, raw in got) == data


def test_parse_json_never_raises_and_names_the_reason():
    assert parse_json(b'{"a":1}') == ({"a": 1}, None)
    for body in DAMAGED.values():
        value, reason = parse_json(body)
        assert value is None and reason


def test_head_reads_only_the_beginning_and_tail_only_complete_lines(tmp_path):
    f = tmp_path / "s.jsonl"
    f.write_bytes(b"".join(b'{"n":%d}\n' % i for i in range(100000)))
    head = head_lines(f, max_lines=3)
    assert [ln.obj["n"] for ln in head] == [0, 1, 2]
    tail = tail_lines(f, max_bytes=40)
    assert tail and tail[-1].obj == {"n": 99999} and all(ln.complete for ln in tail)
    assert len(list(read_lines(f))) == 100000
