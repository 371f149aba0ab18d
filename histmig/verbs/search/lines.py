"""The lines of a JSONL file that may match: the file read in blocks as raw bytes, a line handed on
only when it holds the query's needle (histmig/verbs/search/query.py). Memory: one block plus the
line it ends inside, whatever the file's size (docs/search.md, "How it is fast")."""
from __future__ import annotations

import os
from typing import Iterator

from histmig.jsonio.jsonl import DEFAULT_MAX_LINE_BYTES, Line, open_stream, read_lines

BLOCK = 1 << 20


def candidate_lines(path: str | os.PathLike, needle: bytes | None, fold: bool) -> Iterator[Line]:
    """Lines of ``path`` (``.jsonl`` or ``.jsonl.zst``) containing ``needle`` (lower-cased bytes
    compared with each line lower-cased when ``fold``); every line when ``needle`` is None. A line
    over the line limit is handed on as ``Line(raw=None)``, which parses as broken."""
    if needle is None:
        yield from read_lines(path)
        return
    with open_stream(path) as fh:
        carry = b""
        offset = number = 0          # of the first byte / line of ``carry``
        while True:
            block = fh.read(BLOCK)
            if not block:
                break
            data = carry + block if carry else block
            end = data.rfind(b"\n") + 1
            if end == 0:             # no line ends in this block yet
                carry = data
                if len(carry) > DEFAULT_MAX_LINE_BYTES:
                    raise _oversize(path, number)
                continue
            yield from _matches(data, end, needle, fold, offset, number)
            number += data.count(b"\n", 0, end)
            offset += end
            carry = data[end:]
        if carry:
            yield from _matches(carry + b"\n", len(carry) + 1, needle, fold, offset, number, strip=True)


def _matches(data: bytes, end: int, needle: bytes, fold: bool, offset: int, number: int,
             strip: bool = False) -> Iterator[Line]:
    hay = data[:end].lower() if fold else data
    pos = hay.find(needle, 0, end)
    counted, n = 0, number
    while pos >= 0:
        start = data.rfind(b"\n", 0, pos) + 1
        stop = data.find(b"\n", pos, end) + 1
        n += data.count(b"\n", counted, start)
        counted = start
        raw = data[start:stop - 1] if strip else data[start:stop]   # the file's last line has no newline
        yield Line(n + 1, offset + start, raw)
        pos = hay.find(needle, stop, end)


def _oversize(path, number):
    from histmig.core.diagnostics import HistmigInputError
    return HistmigInputError(f"a line longer than {DEFAULT_MAX_LINE_BYTES >> 20} MiB", path=path, line=number + 1)
