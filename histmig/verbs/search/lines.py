"""The lines of a JSONL file that may match: the file read in blocks as raw bytes, a line handed on
only when it holds the query's needle (histmig/verbs/search/query.py). Memory: one block plus the
line it ends inside, whatever the file's size (docs/search.md, "How it is fast").

Counting every newline would cost as much as the search itself, so a line handed on carries its byte
``offset`` and the number 0; :func:`line_number` counts for the few lines that need naming (a line
that does not parse)."""
from __future__ import annotations

import os
from typing import Iterator

from histmig.core.diagnostics import HistmigInputError
from histmig.jsonio.jsonl import DEFAULT_MAX_LINE_BYTES, Line, is_zst, open_stream, read_lines
from histmig.jsonio.regular import open_regular_stat
from histmig.verbs.search.finder import Finder

BLOCK = 1 << 20


def candidate_lines(path: str | os.PathLike, find: Finder | None, first: list | None = None) -> Iterator[Line]:
    """Lines of ``path`` (``.jsonl`` or ``.jsonl.zst``) holding the needle of ``find`` (one finder
    for the whole search: it learns which byte is rare once); every line, numbered, without one.
    ``first`` gets the file's first block (its first bytes: a session's completion reads no more)."""
    if find is None:
        yield from read_lines(path)
        return
    parts: list[bytes] = []          # the unfinished line's pieces: joined once, when it ends (a line of
    held = 0                         # tens of MB is not copied again for every block it spans)
    offset = 0                       # of the first byte of ``parts`` in the file
    for block in _blocks(path):
        if first is not None and offset == 0 and not parts:
            first.append(block)
        end = block.rfind(b"\n") + 1
        if end == 0:                 # no line ends in this block yet
            parts.append(block)
            held += len(block)
            if held > DEFAULT_MAX_LINE_BYTES:
                raise HistmigInputError(f"a line longer than {DEFAULT_MAX_LINE_BYTES >> 20} MiB", path=path)
            continue
        data, end = (b"".join([*parts, block]), end + held) if parts else (block, end)
        parts = []
        yield from _matches(data, end, find, offset)
        offset += end
        held = len(data) - end
        parts = [data[end:]] if held else []
    if parts:                        # the last line, without its newline
        carry = b"".join(parts)
        yield from _matches(carry, len(carry), find, offset, last=True)


def _blocks(path: str | os.PathLike) -> Iterator[bytes]:
    """The file's bytes in blocks of :data:`BLOCK` (a ``.zst`` decompressed); a plain file read by
    its descriptor (no file object: thousands of files, most of them one block)."""
    if is_zst(path):
        with open_stream(path) as fh:
            while block := fh.read(BLOCK):
                yield block
        return
    fd, st = open_regular_stat(path)
    try:
        # a file that fits in a block is read with one read of its size and one byte more: a short
        # read is the end of a regular file (no second read to see it)
        want = st.st_size + 1 if st.st_size < BLOCK else BLOCK
        while block := os.read(fd, want):
            yield block
            if len(block) < want and want < BLOCK:
                return
            want = BLOCK
    finally:
        os.close(fd)


def _matches(data: bytes, end: int, find: Finder, offset: int, last: bool = False) -> Iterator[Line]:
    find.start_block(data)
    pos = find.first(data, 0, end)
    while pos >= 0:
        start = data.rfind(b"\n", 0, pos) + 1
        stop = end if last else data.find(b"\n", pos, end) + 1
        yield Line(0, offset + start, data[start:stop])
        pos = find.first(data, stop, end) if stop < end else -1


def line_number(path: str | os.PathLike, offset: int) -> int:
    """The 1-based number of the line starting at byte ``offset`` of ``path``."""
    n, at = 1, 0
    with open_stream(path) as fh:
        while at < offset:
            block = fh.read(min(BLOCK, offset - at))
            if not block:
                break
            n += block.count(b"\n")
            at += len(block)
    return n
