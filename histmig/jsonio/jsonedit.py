"""Where a JSON value's bytes are: a small scanner over one JSON text (no parse, no copy).

``find_span`` gives the byte span of the value at a key path; ``object_members`` walks an object's
members with their key and value spans. The verified edit built on it is ``jsonio.lineedit``
(replace / pad / insert): re-serialising a line would change bytes nobody asked to change (number
formats, escapes, key order, separators) and, for Codex, move every byte offset stored in
``thread_history_1.sqlite`` (docs/safety.md).
"""
from __future__ import annotations

import re
from typing import Sequence

import orjson

# The unrolled form of ``"(?:[^"\\]|\\.)*"`` (the same strings): a run of plain bytes is one
# repeat, so the regex engine keeps no backtracking mark per byte; the plain form grew its stack
# (realloc and copy) on every long string, which made a 2 KB string's scan several times slower.
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
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


def end_of_value(b: bytes, i: int) -> int:
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
        vend = end_of_value(b, vstart)
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
        vend = end_of_value(b, i)
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
    end = end_of_value(body, start)
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
