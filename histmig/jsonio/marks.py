"""Finding lines by a fixed byte marker without splitting a file into lines (docs/scan-show.md, "Message
counts"): a listing counts messages in files of any size at read speed, and parses only the lines the
marker matches.

The marker is what every line the caller wants *must* contain (a JSON key and value, any JSON whitespace
allowed): lines it matches are candidates the caller verifies by parsing them, so a false match costs a
parse and never a wrong count. A ``KeyValue`` marker is found with ``bytes.find`` on its value's quoted
bytes (a C search several times faster than ``re``; the compact spelling every known writer uses is
checked with one slice, spaced ones by walking back over the whitespace), and matches exactly what the
regex ``"key"\\s*:\\s*"value"`` matches; a bytes regex is still accepted.

Values are parsed leniently (``orjson.loads`` alone): a listing's "broken line" is one orjson cannot
parse. The strict checks (duplicate keys, depth over 256: ``jsonl.parse_json``) are doctor's, ``show
--format native``'s and the writers' (docs/scan-show.md, "What broken means in a listing").
"""
from __future__ import annotations

import re
from typing import Any, BinaryIO, Iterator

import orjson

from histmig.jsonio.jsonl import BOM, DEFAULT_MAX_LINE_BYTES

CHUNK = 1 << 20
_WS = frozenset(b" \t\n\r\x0b\x0c")          # what a bytes regex's \s matches


class KeyValue:
    """The marker ``"key"\\s*:\\s*"value"`` (any of ``values``), found by ``bytes.find`` on ``"value"``.

    ``finditer(buf, pos, endpos)`` yields ``(start, end)`` of the matches ``re.finditer`` would give for
    that regex, in order: each hit of a quoted value is a match when the bytes before it are ``"key":``
    (one slice: the compact form) or ``"key"``, whitespace, ``:``, whitespace (walked back byte by byte).
    A value token cannot overlap another match's key, so the matches found this way do not overlap."""

    def __init__(self, key: bytes, values: tuple[bytes, ...]):
        self.key = b'"' + key + b'"'
        self.compact = self.key + b":"
        self.values = tuple(b'"' + v + b'"' for v in values)

    def finditer(self, buf: bytes, pos: int = 0, endpos: int | None = None) -> Iterator[tuple[int, int]]:
        end = len(buf) if endpos is None else endpos
        if len(self.values) == 1:
            return self._one(buf, self.values[0], pos, end)
        hits = [h for v in self.values for h in self._one(buf, v, pos, end)]
        hits.sort()
        return iter(hits)

    def search(self, buf: bytes) -> bool:
        return next(self.finditer(buf), None) is not None

    def _one(self, buf: bytes, value: bytes, pos: int, end: int) -> Iterator[tuple[int, int]]:
        find, n, compact, c = buf.find, len(value), self.compact, len(self.compact)
        i = find(value, pos, end)
        while i >= 0:
            if i - c >= pos and buf[i - c:i] == compact:
                yield i - c, i + n
            else:
                start = self._spaced(buf, i, pos)
                if start is not None:
                    yield start, i + n
            i = find(value, i + n, end)

    def _spaced(self, buf: bytes, i: int, pos: int) -> int | None:
        """Where the key of a spaced match ending in the value at ``i`` starts, or None."""
        j = i - 1
        while j >= pos and buf[j] in _WS:
            j -= 1
        if j < pos or buf[j] != 58:          # ':'
            return None
        j -= 1
        while j >= pos and buf[j] in _WS:
            j -= 1
        k = j + 1 - len(self.key)
        return k if k >= pos and buf[k:j + 1] == self.key else None


def _spans(pattern: Any, buf: bytes, pos: int, endpos: int) -> Iterator[tuple[int, int]]:
    if isinstance(pattern, KeyValue):
        return pattern.finditer(buf, pos, endpos)
    return ((m.start(), m.end()) for m in pattern.finditer(buf, pos, endpos))


class MarkedLines:
    """Iterate ``(offset, raw line)`` over the lines from ``start`` that ``pattern`` matches, in order.

    A line is its bytes with the ``\\n``; a final line without one is yielded too (a record, as
    ``jsonl.iter_lines`` reads it) but ``end`` stops before it: after the iteration, ``end`` is the
    offset just past the last newline, where a later read of the grown file resumes. Lines over
    ``max_line`` bytes are never held (``jsonl`` makes them opaque) and never yielded. Memory is one
    chunk plus the longest line."""

    def __init__(self, fh: BinaryIO, pattern: re.Pattern[bytes] | KeyValue, *, start: int = 0, chunk: int | None = None,
                 max_line: int = DEFAULT_MAX_LINE_BYTES):
        self.fh, self.pattern, self.start, self.max_line = fh, pattern, start, max_line
        self.chunk = chunk or CHUNK          # read when made: a test shrinks CHUNK to cross boundaries
        self.end = start

    def __iter__(self) -> Iterator[tuple[int, bytes]]:
        parts: list[bytes] = []               # the unfinished line carried into the next chunk
        held = 0                              # its length
        base = self.start                     # file offset of the held line's first byte
        skipping = False                      # inside an over-long line: drop bytes up to its newline
        pattern, read, limit = self.pattern, self.fh.read, self.max_line
        while True:
            data = read(self.chunk)
            if not data:
                break
            if skipping:
                nl = data.find(b"\n")
                if nl < 0:
                    base += len(data)
                    continue
                skipping, base, data = False, base + nl + 1, data[nl + 1:]
                self.end = base
            last = data.rfind(b"\n")
            if last < 0:                      # no line ends here: hold the piece (joined once, not per chunk)
                parts.append(data)
                held += len(data)
                if held > limit:
                    skipping, base, parts, held = True, base + held, [], 0
                continue
            buf = b"".join(parts) + data if parts else data
            last += held
            done = 0                          # buf offset past the last line yielded
            for m_start, m_end in _spans(pattern, buf, 0, last + 1):
                if m_start < done:
                    continue                  # a second match on a line already yielded
                ls = buf.rfind(b"\n", 0, m_start) + 1
                done = buf.find(b"\n", m_end) + 1
                if done - ls <= limit:
                    yield base + ls, buf[ls:done]
            base += last + 1
            self.end = base
            parts = [buf[last + 1:]] if last + 1 < len(buf) else []
            held = len(buf) - last - 1
            if held > limit:
                skipping, base, parts, held = True, base + held, [], 0
        rest = b"".join(parts)
        if rest and self.pattern.search(rest):
            yield base, rest


def parse_line(offset: int, raw: bytes) -> tuple[Any, bool]:
    """``(value or None, opaque)`` of one line as ``jsonl.Line`` parses it (terminator and, at offset 0,
    a BOM left out)."""
    end = len(raw)
    if raw.endswith(b"\n"):
        end -= 2 if raw.endswith(b"\r\n") else 1
    start = 3 if offset == 0 and raw.startswith(BOM) else 0
    return _value(raw[start:end])


def _value(body: bytes) -> tuple[Any, bool]:
    """``(value, opaque)``, leniently: what ``orjson.loads`` gives, a line it cannot parse is opaque
    (a blank one is not). ``jsonl.parse_json`` also refuses duplicate keys and nesting over 256: such a
    line is listed with its value (as Claude's and Codex's own readers take it) and left to doctor."""
    try:
        return orjson.loads(body), False
    except orjson.JSONDecodeError:
        return None, bool(body.strip())


def head_values(data: bytes, eof: bool, *, max_lines: int, max_bytes: int) -> tuple[list, int] | None:
    """The lines ``jsonl.head_lines(max_lines, max_bytes)`` would give from a file starting with
    ``data`` (``eof``: that is the whole file), as ``(value or None, opaque)`` pairs, and the offset
    where they end; None when ``data`` ends inside them (read more)."""
    out: list[tuple[Any, bool]] = []
    pos, size = 0, len(data)
    while pos < size:
        nl = data.find(b"\n", pos)
        if nl < 0 and not eof:
            return None
        end = size if nl < 0 else nl + 1
        stop = end - (0 if nl < 0 else 2 if nl > pos and data[nl - 1] == 13 else 1)
        start = pos + 3 if pos == 0 and data.startswith(BOM) else pos
        out.append(_value(data[start:stop]))
        pos = end
        if len(out) >= max_lines or end >= max_bytes:
            break
    return out, pos


def last_lines_with(data: bytes, marker: bytes) -> Iterator[bytes]:
    """The lines of ``data`` (starting at a line start) holding ``marker``, last first."""
    pos = len(data)
    while True:
        i = data.rfind(marker, 0, pos)
        if i < 0:
            return
        ls = data.rfind(b"\n", 0, i) + 1
        le = data.find(b"\n", i)
        yield data[ls:len(data) if le < 0 else le + 1]
        pos = ls
