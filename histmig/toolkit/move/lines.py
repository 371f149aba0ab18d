"""One line of a move: which values to rewrite (field finders) and the verified surgical edit.

Every edited line is re-parsed and compared with the object we meant to produce (the old record with
exactly those values changed); only then do its patches count. The spans are found by a plain byte
search when that is unambiguous, else by the JSON scanner of ``jsonedit``.
"""
from __future__ import annotations

import re
from typing import Any, Sequence

import orjson

from histmig.jsonio.jsonedit import EditError, find_span
from histmig.core.plan import Patch, compact

JsonPath = tuple
FieldEdit = tuple[JsonPath, str, str]          # (path in the record, old value, new value)

_loads, _dumps, _JSONError = orjson.loads, orjson.dumps, orjson.JSONDecodeError


# ---- shared encodings ------------------------------------------------------------------------

class _Encodings:
    """``orjson.dumps`` of recurring strings, as one exact-size bytes object each.

    A move rewrites the same few values on every line (one ``cwd`` per session); sharing one copy
    saves a dumps per line and lets the plan's patches point at the same bytes. Bounded: long
    strings are not kept, and the table is cleared when full.
    """

    LIMIT, MAX_LEN = 4096, 1024

    def __init__(self):
        self.table: dict[str, bytes] = {}

    def __call__(self, value: str) -> bytes:
        enc = self.table.get(value)
        if enc is None:
            enc = compact(_dumps(value))
            if len(value) <= self.MAX_LEN:
                if len(self.table) >= self.LIMIT:
                    self.table.clear()
                self.table[value] = enc
        return enc


encoded = _Encodings()


# ---- surgical edits of one line --------------------------------------------------------------

def _set(obj: Any, path: Sequence, value: Any) -> Any:
    if not path:
        return value
    head, rest = path[0], path[1:]
    out = dict(obj) if isinstance(obj, dict) else list(obj)
    out[head] = _set(obj[head], rest, value)
    return out


def line_patches(body: bytes, obj: Any, edits: Sequence[FieldEdit], base: int) -> list[Patch]:
    """Patches (offsets relative to the file) replacing each value's bytes; verified by re-parsing.

    Fast path: the same old value always maps to the same new value, so when the encoded old string
    (quotes included) occurs in the line exactly as often as there are edits of it, every occurrence
    is a target. In a valid JSON text an unescaped quote only occurs as structure, so a miscount can
    only come from unusual escaping; the re-parse catches it and we redo the edit with the scanner.
    """
    if len(edits) == 1:
        return _one_edit(body, obj, edits[0], base)
    expected = obj
    for path, _, new in edits:
        expected = _set(expected, path, new)
    try:
        return _verified(body, _fast_spans(body, edits), expected, base)
    except EditError:
        spans = [(*find_span(body, path), encoded(new)) for path, _, new in edits]
        return _verified(body, spans, expected, base)


def _one_edit(body: bytes, obj: Any, edit: FieldEdit, base: int) -> list[Patch]:
    """``line_patches`` for the common line with one edit (a Claude ``cwd``): the same spans, the
    same verification and the same errors, without the general bookkeeping."""
    path, old, new = edit
    enc, new_enc = encoded(old), encoded(new)
    s = body.find(enc)
    if s >= 0 and body.find(enc, s + len(enc)) < 0:      # exactly one occurrence
        e = s + len(enc)
        expected = _set(obj, path, new)
        try:
            if _loads(body[:s] + new_enc + body[e:]) == expected:
                return [Patch(base + s, enc, new_enc)]
        except _JSONError:
            pass
    else:
        expected = _set(obj, path, new)
    return _verified(body, [(*find_span(body, path), new_enc)], expected, base)


def _fast_spans(body: bytes, edits: Sequence[FieldEdit]) -> list[tuple[int, int, bytes]]:
    groups: dict[str, list[FieldEdit]] = {}
    for e in edits:
        groups.setdefault(e[1], []).append(e)
    spans = []
    for old, group in groups.items():
        enc, new = encoded(old), encoded(group[0][2])
        if body.count(enc) == len(group):
            i = body.find(enc)
            while i >= 0:
                spans.append((i, i + len(enc), new))
                i = body.find(enc, i + len(enc))
        else:
            spans += [(*find_span(body, path), encoded(n)) for path, _, n in group]
    return spans


def _verified(body: bytes, spans: list[tuple[int, int, bytes]], expected: Any, base: int) -> list[Patch]:
    spans.sort()
    for (_s1, e1, _), (s2, _, _) in zip(spans, spans[1:]):
        if s2 < e1:
            raise EditError("overlapping edits")
    out, pos = bytearray(), 0
    for s, e, new in spans:
        out += body[pos:s]
        out += new
        pos = e
    out += body[pos:]
    try:
        if _loads(bytes(out)) != expected:
            raise EditError("edit did not verify")
    except _JSONError:
        raise EditError("edit did not verify") from None
    return [Patch(base + s, body[s:e], new) for s, e, new in spans]   # slices are exact-size copies


# ---- field finders ---------------------------------------------------------------------------

def path_strings(value: Any, pm, prefix: JsonPath = ()) -> list[FieldEdit]:
    """Every string in ``value`` that *is* a path under OLD (not text that mentions one)."""
    out: list[FieldEdit] = []
    if isinstance(value, str):
        new = pm.rebase(value)
        if new is not None and new != value:
            out.append((prefix, value, new))
    elif isinstance(value, dict):
        for k, v in value.items():
            out.extend(path_strings(v, pm, prefix + (k,)))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out.extend(path_strings(v, pm, prefix + (i,)))
    return out


def field_at(obj: Any, path: JsonPath, pm) -> list[FieldEdit]:
    """The edit for one named field, if it holds a path under OLD."""
    cur = obj
    for step in path:
        if isinstance(cur, dict) and isinstance(step, str) and step in cur:
            cur = cur[step]
        else:
            return []
    new = pm.rebase(cur)
    return [(path, cur, new)] if new is not None and new != cur else []


_CONTENT_CACHE: dict[Any, re.Pattern] = {}


def content_regex(pm) -> re.Pattern:
    if pm not in _CONTENT_CACHE:
        alts = "|".join(re.escape(o) for o in pm.olds)
        # OLD preceded by no path character, followed by '/', or by anything that cannot continue
        # a file name: "/a/app/x", "/a/app." and "(/a/app)" match; "/a/app2" and "/x/a/app" do not.
        _CONTENT_CACHE[pm] = re.compile(rf"(?<![\w.\-/])(?:{alts})(?![\w\-]|\.\w)")
    return _CONTENT_CACHE[pm]


def content_edits(obj: Any, pm, done: set) -> list[FieldEdit]:
    """``--rewrite-content``: every string value mentioning OLD, with OLD replaced by NEW."""
    rx = content_regex(pm)
    out: list[FieldEdit] = []

    def walk(value: Any, prefix: JsonPath) -> None:
        if prefix in done:
            return
        if isinstance(value, str):
            if any(o in value for o in pm.olds):
                new = rx.sub(lambda m: pm.new, value)
                if new != value:
                    out.append((prefix, value, new))
        elif isinstance(value, dict):
            for k, v in value.items():
                walk(v, prefix + (k,))
        elif isinstance(value, list):
            for i, v in enumerate(value):
                walk(v, prefix + (i,))

    walk(obj, ())
    return out
