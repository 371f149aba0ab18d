"""issue 16/15: a small Pi file's listing facts come from its bytes (rowfacts.objects_of_bytes), exactly
as ``Line`` judges each line (blank, strictly parsed, kept as bytes): BOM, CRLF, duplicate keys, deep
nesting, non-objects, an unterminated last line."""
from __future__ import annotations

import pytest

from histmig.jsonio.jsonl import read_lines
from histmig.tools.pi import rowfacts

CASES = {
    "plain": b'{"type":"session","id":"a","cwd":"/w"}\n{"type":"message","message":{"role":"user","content":"hi"}}\n',
    "bom": b'\xef\xbb\xbf{"type":"session","id":"a"}\n',
    "bom-blank": b"\xef\xbb\xbf\n{}\n",
    "crlf": b'{"type":"session"}\r\n\r\n{"a": 1}\r\n',
    "blank": b"\n  \n\t\n\x0c\n",
    "duplicate-key": b'{"a":1,"a":2}\n{"b": 1, "b": 2}\n',
    "not-objects": b'[1]\nnull\n"x"\n3\n{broken\n',
    "deep": b"[" * 300 + b"]" * 300 + b"\n" + b'{"a":' * 260 + b"1" + b"}" * 260 + b"\n",
    "unterminated": b'{"type":"session"}\n{"type":"message"',
    "unterminated-ok": b'{"type":"session"}\n{"type":"message"}',
    "cr-only": b'{"a":1}\r',
    "nul": b'{"a":"\x00"}\n',
    "empty": b"",
    "lone-newline": b"\n",
    "brace-blank": b"{\n",
    # canonical lines take jsonl.canonical_values' one-call path; lines that parse only joined to
    # their neighbours (a string or a list across the newline) must not
    "canonical": b'{"type":"session","id":"a","cwd":"/w"}\n{"type":"message","message":{"role":"user"}}\n[1]\n3\n',
    "canonical-unterminated": b'{"type":"session"}\n{"a":[1,2.5,null]}',
    "joined-string": b'{"a":"x}\n{y"},{"b":1}\n',
    "joined-list": b'{"a":[1\n2]},{"b":3}\n',
    "canonical-then-spaced": b'{"a":1}\n{"a": 1}\n',
    "escaped-nul": b'{"a":"\\u0000"}\n',
}


@pytest.mark.parametrize("name", list(CASES))
def test_bytes_give_what_lines_give(tmp_path, name):
    path = tmp_path / "s.jsonl"
    path.write_bytes(CASES[name])
    assert rowfacts.objects_of_bytes(CASES[name]) == rowfacts.objects(list(read_lines(path)))


@pytest.mark.parametrize("name", list(CASES))
def test_parsed_lines_are_each_body_parsed(name):
    """jsonl.parsed_lines (one orjson call for a canonical file) gives what bodies + parse_json give."""
    from histmig.jsonio.jsonl import bodies, parse_json, parsed_lines
    assert list(parsed_lines(CASES[name])) == [None if b is None else parse_json(b) for b in bodies(CASES[name])]
