"""A pull reader over one JSON document that is an object holding one long array (a Gemini CLI
``.json`` session's ``messages``, a Cline ``<sid>.messages.json``): it yields each top-level member's
value bytes and each element of the named array as its own bytes, with their offsets, reading the
file a chunk at a time. Memory holds one element (plus a chunk), never the document.

It only finds where values start and end (strings skipped with their escapes, brackets counted);
whether a value is valid JSON is for the caller's ``orjson.loads`` of its bytes. A document whose
skeleton is not ``{"key": value, ...}`` raises :class:`PullError` with the byte offset.

With a ``limit``, a value longer than that is never held: its end is found a chunk at a time and it
is yielded without its bytes (``raw`` None, ``oversize``), as ``jsonl.iter_lines`` yields a line over
its limit. The caller names it (``jsonl.record_too_big``) rather than loading it.
"""
from __future__ import annotations

import re
from typing import BinaryIO, Callable, Iterable, Iterator

import orjson

from histmig.core.valueclass import value

CHUNK = 1 << 20
WS = b" \t\r\n"
# what lies between brackets: runs of other bytes and whole strings (a string's escapes skipped by the
# unrolled ``[^"\\]*(?:\\.[^"\\]*)*``, so a backslash-quote never ends it), matched in C: a message's many
# small strings (its keys) cost no Python step each, only its brackets do
_SKIP = re.compile(rb'(?:[^"{}\[\]]+|"[^"\\]*(?:\\.[^"\\]*)*")*')
_SCALAR_END = re.compile(rb'[,}\]\s]')
_STRUCT = re.compile(rb'["{}\[\]]')
_STR_STOP = re.compile(rb'["\\]')


class PullError(ValueError):
    def __init__(self, message: str, offset: int):
        super().__init__(f"{message} at byte {offset}")
        self.offset = offset


@value
class Piece:
    """A member's value (``item`` False) or an element of the streamed array (``item`` True)."""

    key: str
    start: int          # absolute byte offsets of the value: raw == file[start:end]
    end: int
    raw: bytes | None   # None: over the reader's limit, never held (``oversize``)
    item: bool = False

    def __init__(self, key: str, start: int, end: int, raw: bytes | None, item: bool = False) -> None:
        self.key, self.start, self.end, self.raw, self.item = key, start, end, raw, item

    @property
    def oversize(self) -> bool:
        return self.raw is None

    @property
    def size(self) -> int:
        return self.end - self.start


class _Overflow(Exception):
    """The value being read grew past the reader's limit (caught by ``_Reader.piece``)."""


class _Reader:
    def __init__(self, fh: BinaryIO, chunk: int, limit: int | None = None):
        self.fh, self.chunk, self.limit = fh, chunk, limit
        self.buf = bytearray()
        self.base = 0        # absolute offset of buf[0]
        self.pos = 0         # index into buf
        self.value_at: int | None = None     # index of the value being measured against ``limit``

    def more(self) -> bool:
        if self.value_at is not None and self.limit is not None and len(self.buf) - self.value_at > self.limit:
            raise _Overflow
        data = self.fh.read(self.chunk)
        if data:
            self.buf += data
        return bool(data)

    def drop(self) -> None:
        """Forget what was read before ``pos`` (called between values, so one value is held at most)."""
        if self.pos > self.chunk:
            del self.buf[:self.pos]
            self.base += self.pos
            self.pos = 0

    def peek(self) -> int | None:
        """The next byte that is not white space (``pos`` moved to it), None at the end."""
        while True:
            while self.pos < len(self.buf) and self.buf[self.pos] in WS:
                self.pos += 1
            if self.pos < len(self.buf):
                return self.buf[self.pos]
            if not self.more():
                return None

    def expect(self, ch: bytes) -> None:
        if self.peek() != ch[0]:
            raise PullError(f"expected {ch.decode()!r}", self.base + self.pos)
        self.pos += 1

    def string_end(self, start: int) -> int:
        """Index just past the string whose opening quote is at ``start``."""
        i = start + 1
        while True:
            q = self.buf.find(b'"', i)
            if q < 0:
                i = len(self.buf)
                if not self.more():
                    raise PullError("unterminated string", self.base + start)
                continue
            k = q
            while self.buf[k - 1] == 0x5C:      # an odd run of backslashes escapes the quote
                k -= 1
            if (q - k) % 2 == 0:
                return q + 1
            i = q + 1

    def value_end(self) -> int:
        """Index just past the value starting at ``pos`` (string, container or scalar)."""
        start = self.pos
        c = self.buf[start]
        if c == 0x22:
            return self.string_end(start)
        if c not in b"{[":
            while True:
                m = _SCALAR_END.search(self.buf, start)
                if m or not self.more():
                    return m.start() if m else len(self.buf)
        depth, i = 0, start
        while True:
            i = _SKIP.match(self.buf, i).end()
            if i >= len(self.buf):
                if not self.more():
                    raise PullError("unterminated value", self.base + start)
                continue
            c = self.buf[i]
            if c == 0x22:                 # a string the buffer ends inside: read on to its end
                i = self.string_end(i)
                continue
            depth += 1 if c in b"{[" else -1
            i += 1
            if depth == 0:
                return i

    def piece(self, key: str, item: bool) -> Piece:
        if self.peek() is None:
            raise PullError("expected a value", self.base + self.pos)
        start = self.base + self.pos
        self.value_at = self.pos
        try:
            end = self.value_end()
        except _Overflow:
            self.value_at = None
            return Piece(key, start, self.skip_value(), None, item)
        finally:
            self.value_at = None
        if self.limit is not None and end - self.pos > self.limit:     # (read within the last chunk)
            raw = None
        else:
            with memoryview(self.buf) as view:  # one copy of the value, not a bytearray slice and then bytes
                raw = view[self.pos:end].tobytes()
        self.pos = end
        self.drop()                             # the value is not held twice while the caller reads it
        return Piece(key, start, self.base + self.pos, raw, item)

    def skip_value(self) -> int:
        """The absolute end of the container or string starting at ``pos``, found without holding it:
        what was scanned is dropped a chunk at a time (an over-limit value; a long scalar is read whole)."""
        start, i = self.base + self.pos, self.pos
        if self.buf[i] not in b'{["':
            self.pos = self.value_end()
            return self.base + self.pos
        depth, in_str, esc = 0, False, False
        while True:
            buf, n = self.buf, len(self.buf)
            while i < n:
                if esc:
                    esc, i = False, i + 1
                    continue
                m = (_STR_STOP if in_str else _STRUCT).search(buf, i)
                if m is None:
                    i = n
                    break
                c, i = buf[m.start()], m.start() + 1
                if in_str:
                    if c == 0x5C:
                        esc = True
                        continue
                    in_str = False
                    if depth == 0:
                        self.pos = i
                        return self.base + i
                elif c == 0x22:
                    in_str = True
                else:
                    depth += 1 if c in b"{[" else -1
                    if depth == 0:
                        self.pos = i
                        return self.base + i
            del self.buf[:i]
            self.base += i
            i = self.pos = 0
            if not self.more():
                raise PullError("unterminated value", start)


def pieces(fh: BinaryIO, array_key: str, *, chunk: int | None = None, limit: int | None = None) -> Iterator[Piece]:
    """The members of the top-level object in order; the array under ``array_key`` one element at a
    time (``item=True``). Raises :class:`PullError` on a broken skeleton or trailing bytes. ``limit``:
    a value of more bytes is yielded ``oversize`` (without them), never held."""
    r = _Reader(fh, chunk or CHUNK, limit)
    r.expect(b"{")
    yield from _sequence(r, b"}", lambda: _member(r, array_key))
    if r.peek() is not None:
        raise PullError("bytes after the document", r.base + r.pos)


def _member(r: _Reader, array_key: str) -> Iterator[Piece]:
    if r.peek() != 0x22:
        raise PullError("expected a key", r.base + r.pos)
    end = r.string_end(r.pos)
    key = orjson.loads(bytes(r.buf[r.pos:end]))
    r.pos = end
    r.expect(b":")
    if key == array_key and r.peek() == ord("["):
        r.pos += 1
        yield from _sequence(r, b"]", lambda: _one(r, key))
    else:
        yield r.piece(key, False)


def _one(r: _Reader, key: str) -> Iterator[Piece]:
    yield r.piece(key, True)      # (a generator keeps no hold of what it yielded; a tuple would)


def _sequence(r: _Reader, close: bytes, entry: Callable[[], Iterable[Piece]]) -> Iterator[Piece]:
    """Comma-separated entries up to ``close`` (its opening bracket already read), what was read of
    each dropped before the next."""
    if r.peek() == close[0]:
        r.pos += 1
        return
    while True:
        yield from entry()
        r.drop()
        c = r.peek()
        r.pos += 1
        if c == close[0]:
            return
        if c != ord(","):
            raise PullError(f"expected ',' or {close.decode()!r}", r.base + r.pos - 1)
