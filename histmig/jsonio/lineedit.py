"""THE verified byte-level edit of JSON values inside one line: replace, pad, insert.

Every rewrite of a JSON line goes through here: flip's provider values and doctor's repair of them
(tools/codex/provider.py), move's path fields (toolkit/move/), the manifest's ``meta.json``, and the
lines appended after a plan (core/tail_rules.py). Only the edited values' bytes change (docs/safety.md:
untouched bytes stay byte-identical), and the patched text must parse to exactly the intended object
(the old one with those values changed), else EditError and no patch.

The values are found by a byte search when that is unambiguous (by the key for ``edit_line``, by
the old string for ``edit_strings``), else by the scanner of ``jsonio.jsonedit``. A search that hits
the wrong bytes cannot slip through: the verification fails and the scanner redoes the edit.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable, NamedTuple, Sequence

import orjson

from histmig.core.plan import Patch, compact
from histmig.jsonio.jsonedit import EditError, Path, end_of_value, find_span
from histmig.jsonio.jsonl import parse_json

__all__ = ["EditError", "Edit", "REPLACE", "PAD", "INSERT", "edit_line", "edit_strings", "replace_values",
           "pad_to", "splice", "splice_spans", "edit_appended", "intended", "set_path", "encode_value", "encoded"]

REPLACE, PAD, INSERT = "replace", "pad", "insert"
Span = tuple[int, int, bytes]          # (start, end, new bytes) inside one JSON text

_loads, _dumps, _JSONError = orjson.loads, orjson.dumps, orjson.JSONDecodeError


class Edit(NamedTuple):
    """One change to a line's object. ``replace`` the value at ``path``; ``pad`` replaces it too and
    follows a shorter value with spaces inside the old span (JSON whitespace before the next ``,`` or
    ``}``), so the line keeps its length and no byte offset after it moves; ``insert`` adds the last
    key of ``path`` as the last member of the object at ``path[:-1]`` (which lacks that key)."""
    path: Sequence[str | int]
    value: Any
    how: str = REPLACE


def encode_value(value: Any) -> bytes:
    """Compact JSON with raw non-ASCII, as serde_json and JSON.stringify write it."""
    return _dumps(value)


# ---- the intended object -----------------------------------------------------------------------

def set_path(obj: Any, path: Path, value: Any) -> Any:
    """``obj`` with the value at ``path`` set (copies along the path; ``obj`` is not changed)."""
    if not path:
        return value
    head, rest = path[0], path[1:]
    out = dict(obj) if isinstance(obj, dict) else list(obj)
    out[head] = set_path(obj[head], rest, value)
    return out


def intended(obj: Any, edits: Sequence[Edit]) -> Any:
    """What the line must parse to once ``edits`` are made."""
    for path, value, how in edits:
        if how == INSERT:
            parent = obj
            for step in path[:-1]:
                parent = parent[step]
            obj = set_path(obj, path[:-1], {**parent, path[-1]: value})
        else:
            obj = set_path(obj, path, value)
    return obj


# ---- splicing and verifying ----------------------------------------------------------------------

def splice_spans(text: bytes, spans: Sequence[Span]) -> bytes:
    """``text`` with each ``(start, end)`` span replaced by its new bytes."""
    out, pos = bytearray(), 0
    for s, e, new in sorted(spans):
        if s < pos:
            raise EditError("overlapping edits")
        out += text[pos:s]
        out += new
        pos = e
    out += text[pos:]
    return bytes(out)


def splice(data: bytes, patches: Sequence[Patch], base: int = 0) -> bytes:
    """``data`` (which starts at file offset ``base``) with ``patches`` made: how the edit of the
    lines appended after a plan (flip's and move's ``tail_transform``) returns its bytes."""
    out, pos = bytearray(), 0
    for p in sorted(patches, key=_offset):
        rel = p.offset - base
        out += data[pos:rel]
        out += p.new
        pos = rel + len(p.old)
    out += data[pos:]
    return bytes(out)


def _offset(p: Patch) -> int:
    return p.offset


def edit_appended(data: bytes, lines: Iterable[tuple[int, bytes]],
                  patches_of: Callable[[bytes, int], list[Patch]]) -> bytes:
    """``data`` with each line's verified edit made: the appended-lines transform of flip and move
    (bytes a tool appended after the plan, docs/safety.md). ``lines`` yields ``(offset of the JSON
    text in data, JSON text)``; ``patches_of(text, offset)`` returns its patches or raises: a line
    that does not parse or whose edit does not verify is kept as it is. Deterministic."""
    patches: list[Patch] = []
    for base, body in lines:
        try:
            patches += patches_of(body, base)
        except (EditError, _JSONError):
            continue
    return splice(data, patches) if patches else data


def _verify(body: bytes, spans: Sequence[Span], expected: Any) -> bytes:
    """The patched text, if it parses to ``expected``; else EditError."""
    if len(spans) == 1:
        s, e, new = spans[0]
        text = body[:s] + new + body[e:]
    else:
        text = splice_spans(body, spans)
    try:
        if _loads(text) == expected:
            return text
    except _JSONError:
        pass
    raise EditError("edit did not verify")


def _checked(body: bytes, spans: Sequence[Span], expected: Any, base: int) -> list[Patch]:
    _verify(body, spans, expected)
    return [Patch(base + s, body[s:e], new) for s, e, new in spans]   # slices are exact-size copies


# ---- edits by key path (flip, doctor's provider repair, meta.json) ----------------------------------

def edit_line(body: bytes, obj: Any, edits: Sequence[Edit], *, base: int = 0) -> list[Patch]:
    """Patches (at ``base`` + their offset in ``body``, in the order of ``edits``) that make the JSON
    text ``body``, which parses to ``obj``, parse to ``obj`` with ``edits`` made.

    One edit of a key that occurs once in the line is found by searching for the key (no walk over
    the 20 KB of instructions before a Codex provider value); anything else by the scanner.
    Raises EditError("edit did not verify")."""
    expected = intended(obj, edits)
    if len(edits) == 1 and edits[0].how != INSERT and isinstance(edits[0].path[-1], str):
        try:
            return _checked(body, [_key_span(body, edits[0])], expected, base)
        except EditError:
            pass
    try:
        return _checked(body, [_scanned_span(body, e) for e in edits], expected, base)
    except EditError:
        raise EditError("edit did not verify") from None


def _new_bytes(value: Any, how: str, room: int) -> bytes:
    new = _dumps(value)
    if how == PAD and len(new) < room:
        new += b" " * (room - len(new))
    return compact(new)


def _key_span(body: bytes, edit: Edit) -> Span:
    needle = _dumps(edit.path[-1]) + b":"
    i = body.find(needle)
    if i <= 0 or body.find(needle, i + 1) >= 0 or body[i - 1:i] == b"\\":
        s, e = find_span(body, edit.path)
    else:
        s = i + len(needle)
        while body[s:s + 1] in (b" ", b"\t"):
            s += 1
        e = end_of_value(body, s)
    return s, e, _new_bytes(edit.value, edit.how, e - s)


def _scanned_span(body: bytes, edit: Edit) -> Span:
    if edit.how == INSERT:
        s, e = find_span(body, edit.path[:-1])
        inner = body[s + 1:e - 1].strip()
        member = (b"," if inner else b"") + _dumps(edit.path[-1]) + b":" + _dumps(edit.value)
        return e - 1, e - 1, compact(member)
    s, e = find_span(body, edit.path)
    return s, e, _new_bytes(edit.value, edit.how, e - s)


def replace_values(body: bytes, edits: Sequence[tuple[Path, Any]]) -> bytes:
    """``body`` with each path's value replaced; every other byte unchanged. Verified."""
    old_obj, err = parse_json(body)
    if err:
        raise EditError(f"line is not editable: {err}")
    changes = [Edit(path, value) for path, value in edits]
    spans = [_scanned_span(body, e) for e in changes]
    return _verify(body, spans, intended(old_obj, changes))


def pad_to(body: bytes, length: int) -> bytes | None:
    """Pad a JSON text with trailing spaces to ``length`` bytes (valid JSON whitespace), or None
    if it is already longer."""
    if len(body) > length:
        return None
    return body + b" " * (length - len(body))


# ---- edits of known strings (move) ---------------------------------------------------------------

StringEdit = tuple[Path, str, str]          # (path in the record, old value, new value)


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


def edit_strings(body: bytes, obj: Any, edits: Sequence[StringEdit], base: int = 0) -> list[Patch]:
    """Patches (sorted; offsets ``base`` + their offset in ``body``) replacing each string value,
    verified like ``edit_line``; EditError names what failed (a missing key, overlapping edits, or
    an edit that did not verify).

    Fast path: the same old value always maps to the same new value, so when the encoded old string
    (quotes included) occurs in the line exactly as often as there are edits of it, every occurrence
    is a target. In a valid JSON text an unescaped quote only occurs as structure, so a miscount can
    only come from unusual escaping; the verification catches it and the scanner redoes the edit.
    """
    if len(edits) == 1:
        return _one_string(body, obj, edits[0], base)
    proven = _proven_spans(body, obj, edits)
    if proven is not None:
        return [Patch(base + s, enc, new) for s, e, new in proven for enc in (body[s:e],)]
    expected = intended(obj, [Edit(path, new) for path, _, new in edits])
    try:
        return _checked(body, sorted(_string_spans(body, edits)), expected, base)
    except EditError:
        spans = [(*find_span(body, path), encoded(new)) for path, _, new in edits]
        return _checked(body, sorted(spans), expected, base)


def _one_string(body: bytes, obj: Any, edit: StringEdit, base: int) -> list[Patch]:
    """``edit_strings`` for the common line with one edit (a Claude ``cwd``): the same spans, the
    same verification and the same errors, without the general bookkeeping."""
    path, old, new = edit
    enc, new_enc = encoded(old), encoded(new)
    s = body.find(enc)
    once = s >= 0 and body.find(enc, s + len(enc)) < 0       # exactly one occurrence
    if once and _plain(enc) and (_last_member(body, path, s, s + len(enc)) or _plainly_written(body, obj)):
        return [Patch(base + s, enc, new_enc)]
    expected = set_path(obj, path, new)
    if once:
        e = s + len(enc)
        try:
            if _loads(body[:s] + new_enc + body[e:]) == expected:
                return [Patch(base + s, enc, new_enc)]
        except _JSONError:
            pass
    return _checked(body, [(*find_span(body, path), new_enc)], expected, base)


# ---- edits proven by their bytes (no verifying parse) ----------------------------------------------
#
# When a line is written the way orjson writes it, a string value's bytes are known, and an edit's span
# can be proven instead of verified by parsing the patched line again (the re-parse was half of a
# move's planning time, docs/bench.md). ``enc`` is the encoded old string, ``"X"``, with no backslash
# in X and X not starting with a byte that can follow a string's closing quote. Then in a line whose
# every string is escape-free, or that is exactly ``orjson.dumps`` of what it parses to:
# - every string token equal to old (key or value) is written as ``enc`` at its opening quote (the
#   line writes strings canonically, and has no duplicate keys when it is orjson's output);
# - any other occurrence of ``enc`` starts at an escaped quote inside a string and ends at that string's
#   closing quote (a quote is an opener, a closer or escaped; after a closer comes one of ``,:}]`` or
#   whitespace, which X does not start with), so it is disjoint from every token;
# so when ``enc`` occurs exactly as often as there are edits of it (distinct paths, one new value),
# the occurrences are exactly the edited values, and replacing each with the new string's encoding
# gives a line that parses to the intended object: what the verifying parse would have accepted, with
# the same patches. Anything else goes the verified way.

_AFTER_CLOSER = frozenset(b",:}] \t\r\n")


def _plain(enc: bytes) -> bool:
    return len(enc) > 2 and enc[1] not in _AFTER_CLOSER and b"\\" not in enc


def _plainly_written(body: bytes, obj: Any) -> bool:
    if b"\\" not in body:              # no escapes at all: every string is its own bytes
        return True
    try:
        return _dumps(obj) == body
    except (TypeError, ValueError):
        return False


def _last_member(body: bytes, path: Path, s: int, e: int) -> bool:
    """Whether the string token ``body[s:e]`` (a plain ``enc``, its only occurrence in the line) is the
    value of the one-key ``path`` in the top-level object: a proof that looks at a few bytes around it
    and at the rest of the line only, instead of comparing the whole line with ``orjson.dumps`` (a
    Claude record's escaped tool output before its ``cwd`` made that compare cost as much as its parse).
    For a valid JSON text whose top level is an object:
    - the key is written ``"K":`` right before ``s``, ``K`` plain like ``enc`` and no backslash before
      its quote: that quote is not escaped and cannot be a closer (``K`` does not start with a byte that
      follows one), so it opens the key ``K``, and ``:`` is structure. ``body[s]`` follows it, so it
      opens a string whose content is the old string (no quote or backslash in it): the token is
      ``enc``, the value of a member ``K``;
    - after ``e`` there is no backslash (every quote is a delimiter, every string is its plain bytes)
      and one ``}``: the top level's closer (only whitespace follows that one), so it also closes the
      object holding the member, which is therefore the top-level object; and no ``"K"``: no later
      duplicate of the key overrides this member (orjson keeps the last one).
    Replacing the token then gives a line that parses to the intended object: what the verifying
    parse would accept, with the same patch."""
    if len(path) != 1 or not isinstance(path[0], str):
        return False
    key = encoded(path[0])
    k = s - len(key) - 1
    if k < 1 or body[k - 1] == 92 or body[s - 1] != 58 or not body.startswith(key, k) or not _plain(key):
        return False                      # 92 is a backslash, 58 a colon
    tail = body[e:]
    return tail.count(b"}") == 1 and b"\\" not in tail and key not in tail


def _proven_spans(body: bytes, obj: Any, edits: Sequence[StringEdit]) -> list[Span] | None:
    """The sorted spans of ``edits`` when the proof above holds, else None."""
    groups: dict[str, list[StringEdit]] = {}
    for e in edits:
        groups.setdefault(e[1], []).append(e)
    spans: list[Span] = []
    for old, group in groups.items():
        enc, new = encoded(old), group[0][2]
        if (not _plain(enc) or any(n != new for _, _, n in group) or len({p for p, _, _ in group}) != len(group)
                or body.count(enc) != len(group)):
            return None
        new_enc = encoded(new)
        i = body.find(enc)
        while i >= 0:
            spans.append((i, i + len(enc), new_enc))
            i = body.find(enc, i + len(enc))
    return sorted(spans) if _plainly_written(body, obj) else None


def _string_spans(body: bytes, edits: Sequence[StringEdit]) -> list[Span]:
    groups: dict[str, list[StringEdit]] = {}
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
