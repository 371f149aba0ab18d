"""Finding lines by a fixed byte marker without splitting a file into lines (docs/scan-show.md, "Message
counts"): a listing counts messages in files of any size at read speed, and parses only the lines the
marker matches.

The marker is a bytes regex, or a :class:`ValueMark`, that every line the caller wants *must* contain
(a JSON key and value as the writer spells them, any JSON whitespace allowed): lines it matches are
candidates the caller verifies by parsing them, so a false match costs a parse and never a wrong count.
(A ``bytes.find`` on the compact spelling alone is faster still but would miss spaced lines.)

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


class MarkedLines:
    """Iterate ``(offset, raw line)`` over the lines from ``start`` that ``pattern`` matches, in order.
    A raw line is a ``memoryview`` into the chunk it was found in: a line of tens of MB is not copied
    out again before it is parsed (docs/scan-show.md, "Memory limits").

    A line is its bytes with the ``\\n``; a final line without one is yielded too (a record, as
    ``jsonl.iter_lines`` reads it) but ``end`` stops before it: after the iteration, ``end`` is the
    offset just past the last newline, where a later read of the grown file resumes. Lines over
    ``max_line`` bytes are never held (``jsonl`` makes them opaque) and never yielded. Memory is one
    chunk plus the longest line.

    ``first``: the bytes from ``start`` the caller has already read (``fh`` is positioned after them),
    searched before anything is read; ``eof``: they are the rest of the file (nothing more is read).
    After the iteration, ``unterminated`` holds a final line without
    its newline (up to ``max_line`` bytes; b"" when the file ends with one), whether or not it matched."""

    def __init__(self, fh: BinaryIO, pattern: re.Pattern[bytes], *, start: int = 0, chunk: int | None = None,
                 max_line: int = DEFAULT_MAX_LINE_BYTES, first: bytes | None = None, eof: bool = False):
        self.fh, self.pattern, self.start, self.max_line = fh, pattern, start, max_line
        self.chunk = chunk or CHUNK          # read when made: a test shrinks CHUNK to cross boundaries
        self.end = start
        self.first, self.eof = first, eof
        self.unterminated = b""

    def __iter__(self) -> Iterator[tuple[int, bytes]]:
        parts: list[bytes] = []               # the unfinished line carried into the next chunk
        held = 0                              # its length
        base = self.start                     # file offset of the held line's first byte
        skipping = False                      # inside an over-long line: drop bytes up to its newline
        spans, read, limit = _spans_of(self.pattern), self.fh.read, self.max_line
        view = memoryview(b"")
        pending, self.first = self.first, None
        if self.eof:
            read = _no_more
        while True:
            data, pending = (pending, None) if pending else (read(self.chunk), None)
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
            if parts:                         # one copy, and the pieces let go before the line is cut out
                parts.append(data)
                buf, parts = b"".join(parts), []
            else:
                buf = data
            last += held
            done, view = 0, memoryview(buf)   # buf offset past the last line yielded
            for m_start, m_end in spans(buf, 0, last + 1):
                if m_start < done:
                    continue                  # a second match on a line already yielded
                ls = buf.rfind(b"\n", 0, m_start) + 1
                done = buf.find(b"\n", m_end) + 1
                if done - ls <= limit:
                    yield base + ls, view[ls:done]
            base += last + 1
            self.end = base
            parts = [buf[last + 1:]] if last + 1 < len(buf) else []
            held = len(buf) - last - 1
            if held > limit:
                skipping, base, parts, held = True, base + held, [], 0
        rest = self.unterminated = b"".join(parts)
        if rest and next(spans(rest, 0, len(rest)), None) is not None:
            yield base, memoryview(rest)


def _no_more(_n: int) -> bytes:
    return b""


def _spans_of(pattern: Any) -> Any:
    """``spans(buf, pos, endpos)``: the ``(start, end)`` of each match, from a ``ValueMark`` or a regex."""
    if isinstance(pattern, ValueMark):
        return pattern.spans
    return lambda buf, pos, endpos: (m.span() for m in pattern.finditer(buf, pos, endpos))


class ValueMark:
    """The marker ``"key" : "value"`` (JSON whitespace other than a newline around the colon: a line
    is never cut) found by its value: one ``bytes.find`` for the value literal, then a look back over
    the whitespace, the colon and the key. Nearly twice the speed of the equivalent regex, which stops
    at every ``"`` of the file (Codex rollouts: 2.9 against 1.6 GB/s; docs/bench.md, "Run 15"). A value or
    key spelled with ``\\u`` escapes is not found (no client writes one)."""

    def __init__(self, key: bytes, value: bytes):
        self.key, self.value = b'"' + key + b'"', b'"' + value + b'"'

    def spans(self, buf: bytes, pos: int, endpos: int) -> Iterator[tuple[int, int]]:
        """``(start, end)`` of each marker in ``buf[pos:endpos]``, as ``re.finditer`` gives them."""
        find, value, key, size, lo = buf.find, self.value, self.key, len(self.value), pos
        while (i := find(value, pos, endpos)) >= 0:
            pos = i + size
            j = i - 1
            while j >= lo and buf[j] in _BLANKS:
                j -= 1
            if j < lo or buf[j] != 58:         # ":"
                continue
            j -= 1
            while j >= lo and buf[j] in _BLANKS:
                j -= 1
            k = j + 1 - len(key)
            if k >= lo and buf.startswith(key, k):
                yield k, pos


_BLANKS = frozenset(b" \t\r")


def parse_line(offset: int, raw: bytes | memoryview) -> tuple[Any, bool]:
    """``(value or None, opaque)`` of one line as ``jsonl.Line`` parses it (at offset 0, a BOM left out;
    the terminator is JSON whitespace, parsed with the line rather than copied off it)."""
    return _value(memoryview(raw)[3:] if offset == 0 and raw[:3] == BOM else raw)


def ends_line(raw: bytes | memoryview) -> bool:
    """The line has its newline (the last line of a file may not, yet)."""
    return raw[-1:] == b"\n"


def _value(body: bytes | memoryview) -> tuple[Any, bool]:
    """``(value, opaque)``, leniently: what ``orjson.loads`` gives, a line it cannot parse is opaque
    (a blank one is not). ``jsonl.parse_json`` also refuses duplicate keys and nesting over 256: such a
    line is listed with orjson's value (the last of duplicate keys) and left to doctor."""
    try:
        return orjson.loads(body), False
    except orjson.JSONDecodeError:
        return None, bool(bytes(body).strip())


def last_lines_with(data: bytes, marker: bytes, start: int = 0) -> Iterator[bytes]:
    """The lines of ``data[start:]`` (``start`` at a line start) holding ``marker``, last first
    (``start``: no copy of the bytes before it)."""
    pos = len(data)
    while True:
        i = data.rfind(marker, start, pos)
        if i < 0:
            return
        ls = data.rfind(b"\n", start, i) + 1 or start
        le = data.find(b"\n", i)
        yield data[ls:len(data) if le < 0 else le + 1]
        pos = ls


_CUT_ESCAPE = re.compile(rb'\\(?:u[0-9a-fA-F]{0,3})?\Z')
_STRING_BODY = re.compile(rb'(?:[^"\\]|\\.)*')


def prefix_string(head: bytes, keys: tuple[str, ...] = (), *, at_most: int = 4096) -> str | None:
    """The value of the first ``"key": "..."`` (one of ``keys``, at any depth) in ``head``, the first bytes
    of a value too long to parse (a listing's title of a record of tens of MB): decoded from at most
    ``at_most`` of its bytes, an escape or UTF-8 character cut at the end left out. Without ``keys``,
    ``head`` is the start of the string itself. None when no such string starts in ``head`` or its start
    does not decode."""
    if keys:
        names = b"|".join(re.escape(k.encode()) for k in keys)
        m = re.search(rb'"(?:' + names + rb')"\s*:\s*"', head)
        if m is None:
            return None
        start = m.end()
    elif head[:1] == b'"':
        start = 1
    else:
        return None
    body = _STRING_BODY.match(head, start, min(len(head), start + at_most)).group(0)
    for cut in range(4):
        try:
            return orjson.loads(b'"' + _CUT_ESCAPE.sub(b"", body[:len(body) - cut]) + b'"')
        except orjson.JSONDecodeError:
            continue
    return None
