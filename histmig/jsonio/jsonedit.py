"""Surgical edits of one JSON value inside a line: only the value's bytes change.

Re-serialising a line changes bytes the user never asked to change (number formats, escapes, key
order, separators) and, for Codex, moves every byte offset stored in ``thread_history_1.sqlite``.
So we locate the byte span of the value at a key path with a small scanner and splice in the new
value's encoding, then verify that the result parses to exactly the old object with that one value
changed.
"""
from __future__ import annotations

import re
from typing import Any, Sequence

import orjson

from histmig.jsonio.jsonl import parse_json

_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.S)
_STRUCT = re.compile(rb'["{}\[\]]')
_WS = b" \t\r\n"

Path = Sequence[str | int]


class EditError(ValueError):
    """The value could not be located or the edit did not verify."""


def _skip_ws(b: bytes, i: int) -> int:
    n = len(b)
    while i < n and b[i] in _WS:
        i += 1
    return i


def _end_of_string(b: bytes, i: int) -> int:
    m = _STRING.match(b, i)
    if not m:
        raise EditError("unterminated string")
    return m.end()


def _end_of_value(b: bytes, i: int) -> int:
    """Index just past the JSON value starting at ``i`` (which is not whitespace)."""
    c = b[i:i + 1]
    if c == b'"':
        return _end_of_string(b, i)
    if c in (b"{", b"["):
        depth = 0
        j = i
        while True:
            m = _STRUCT.search(b, j)
            if not m:
                raise EditError("unbalanced brackets")
            j = m.start()
            ch = b[j:j + 1]
            if ch == b'"':
                j = _end_of_string(b, j)
                continue
            depth += 1 if ch in (b"{", b"[") else -1
            j += 1
            if depth == 0:
                return j
    # number, true, false, null
    j = i
    n = len(b)
    while j < n and b[j] not in b",]} \t\r\n":
        j += 1
    return j


def object_members(b: bytes, i: int):
    """Yield ``(key, key_start, key_end, value_start, value_end)`` for the object starting at
    ``b[i] == '{'``; the key span includes its quotes."""
    i = _skip_ws(b, i + 1)
    if b[i:i + 1] == b"}":
        return
    while True:
        if b[i:i + 1] != b'"':
            raise EditError("expected a key")
        kstart, kend = i, _end_of_string(b, i)
        key = orjson.loads(b[kstart:kend])
        i = _skip_ws(b, kend)
        if b[i:i + 1] != b":":
            raise EditError("expected ':'")
        vstart = _skip_ws(b, i + 1)
        vend = _end_of_value(b, vstart)
        yield key, kstart, kend, vstart, vend
        i = _skip_ws(b, vend)
        if b[i:i + 1] == b",":
            i = _skip_ws(b, i + 1)
            continue
        return


def _element_spans(b: bytes, i: int):
    i = _skip_ws(b, i + 1)
    if b[i:i + 1] == b"]":
        return
    while True:
        vend = _end_of_value(b, i)
        yield i, vend
        i = _skip_ws(b, vend)
        if b[i:i + 1] == b",":
            i = _skip_ws(b, i + 1)
            continue
        return


def find_span(body: bytes, path: Path) -> tuple[int, int]:
    """Byte span ``(start, end)`` of the value at ``path`` inside the JSON text ``body``.

    Raises EditError if a key is missing or present twice (a duplicate would make the edit
    ambiguous: which one does the reader use?).
    """
    start = _skip_ws(body, 0)
    end = _end_of_value(body, start)
    for step in path:
        if isinstance(step, str):
            if body[start:start + 1] != b"{":
                raise EditError(f"not an object at {step!r}")
            hits = [(s, e) for k, _, _, s, e in object_members(body, start) if k == step]
            if len(hits) != 1:
                raise EditError(f"key {step!r} {'missing' if not hits else 'duplicated'}")
            start, end = hits[0]
        else:
            if body[start:start + 1] != b"[":
                raise EditError(f"not an array at [{step}]")
            for idx, (s, e) in enumerate(_element_spans(body, start)):
                if idx == step:
                    start, end = s, e
                    break
            else:
                raise EditError(f"index {step} out of range")
    return start, end


def encode_value(value: Any) -> bytes:
    """Compact JSON with raw non-ASCII, as serde_json and JSON.stringify write it."""
    return orjson.dumps(value)


def _set_path(obj: Any, path: Path, value: Any) -> Any:
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(obj, dict):
        out = dict(obj)
        out[head] = _set_path(obj[head], rest, value)
        return out
    out_list = list(obj)
    out_list[head] = _set_path(obj[head], rest, value)
    return out_list


def replace_values(body: bytes, edits: Sequence[tuple[Path, Any]]) -> bytes:
    """Return ``body`` with each path's value replaced; every other byte unchanged. Verified."""
    old_obj, err = parse_json(body)
    if err:
        raise EditError(f"line is not editable: {err}")
    spans = []
    expected = old_obj
    for path, value in edits:
        s, e = find_span(body, path)
        spans.append((s, e, encode_value(value)))
        expected = _set_path(expected, path, value)
    spans.sort()
    for (_s1, e1, _), (s2, _, _) in zip(spans, spans[1:]):
        if s2 < e1:
            raise EditError("overlapping edits")
    out = bytearray()
    pos = 0
    for s, e, new in spans:
        out += body[pos:s]
        out += new
        pos = e
    out += body[pos:]
    new_body = bytes(out)
    new_obj, err = parse_json(new_body)
    if err or new_obj != expected:
        raise EditError("edit did not verify")
    return new_body


def pad_to(body: bytes, length: int) -> bytes | None:
    """Pad a JSON text with trailing spaces to ``length`` bytes (valid JSON whitespace), or None
    if it is already longer."""
    if len(body) > length:
        return None
    return body + b" " * (length - len(body))
