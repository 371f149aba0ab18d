"""Finding lines by a fixed byte marker without splitting a file into lines (docs/scan-show.md, "Message
counts"): a listing counts messages in files of any size at read speed, and parses only the lines the
marker matches.

The marker is a bytes regex that every line the caller wants *must* contain (a JSON key and value as
the writer spells them, any JSON whitespace allowed): lines it matches are candidates the caller
verifies by parsing them, so a false match costs a parse and never a wrong count.
"""
from __future__ import annotations

import re
from typing import BinaryIO, Iterator

from histmig.jsonio.jsonl import BOM, DEFAULT_MAX_LINE_BYTES, parse_json

CHUNK = 1 << 20


class MarkedLines:
    """Iterate ``(offset, raw line)`` over the lines from ``start`` that ``pattern`` matches, in order.

    A line is its bytes with the ``\\n``; a final line without one is yielded too (a record, as
    ``jsonl.iter_lines`` reads it) but ``end`` stops before it: after the iteration, ``end`` is the
    offset just past the last newline, where a later read of the grown file resumes. Lines over
    ``max_line`` bytes are never held (``jsonl`` makes them opaque) and never yielded. Memory is one
    chunk plus the longest line."""

    def __init__(self, fh: BinaryIO, pattern: re.Pattern[bytes], *, start: int = 0, chunk: int | None = None,
                 max_line: int = DEFAULT_MAX_LINE_BYTES):
        self.fh, self.pattern, self.start, self.max_line = fh, pattern, start, max_line
        self.chunk = chunk or CHUNK          # read when made: a test shrinks CHUNK to cross boundaries
        self.end = start

    def __iter__(self) -> Iterator[tuple[int, bytes]]:
        buf = bytearray()
        base = self.start                     # file offset of buf[0]
        skipping = False                      # inside an over-long line: drop bytes up to its newline
        search = self.pattern.finditer
        while True:
            data = self.fh.read(self.chunk)
            if not data:
                break
            if skipping:
                nl = data.find(b"\n")
                if nl < 0:
                    base += len(data)
                    continue
                skipping, base, data = False, base + nl + 1, data[nl + 1:]
                self.end = base
            buf += data
            last = buf.rfind(b"\n")
            if last < 0:
                if len(buf) > self.max_line:
                    skipping, base = True, base + len(buf)
                    buf.clear()
                continue
            done = 0                          # buf offset past the last line yielded
            for m in search(buf, 0, last + 1):
                if m.start() < done:
                    continue                  # a second match on a line already yielded
                ls = buf.rfind(b"\n", 0, m.start()) + 1
                le = buf.find(b"\n", m.end()) + 1
                done = le
                if le - ls <= self.max_line:
                    yield base + ls, bytes(buf[ls:le])
            del buf[:last + 1]
            base += last + 1
            self.end = base
            if len(buf) > self.max_line:
                skipping, base = True, base + len(buf)
                buf.clear()
        if buf and not skipping and len(buf) <= self.max_line and self.pattern.search(buf):
            yield base, bytes(buf)


def parse_line(offset: int, raw: bytes):
    """The strict parse of one line as ``jsonl.Line.obj`` gives it (terminator and, on line 1, a BOM
    left out), or None when the line is opaque."""
    end = len(raw)
    if raw.endswith(b"\n"):
        end -= 2 if raw.endswith(b"\r\n") else 1
    start = 3 if offset == 0 and raw.startswith(BOM) else 0
    obj, err = parse_json(raw[start:end])
    return None if err else obj
