"""``histmig search`` over Claude Code transcripts: the session's file, then its sub-agents' files
(histmig/toolkit/search.py, docs/search.md).

``locate`` lists the sessions as ``discover`` does (same folders, order and ids: the file names)
with one ``stat`` each; ``complete`` fills ``cwd`` and ``title`` only for a session the search shows,
as ``summarize`` computes them from the same two ends, parsing only the lines they come from: the
first records up to a ``cwd`` and a prompt, and the lines naming a title record.
"""
from __future__ import annotations

import functools
import os
import re
from io import BytesIO
from pathlib import Path
from typing import Any, Iterator

from histmig.core.model import SessionRef
from histmig.jsonio.jsonl import head_lines, iter_lines, lenient, open_regular_fd, read_lines, tail_lines
from histmig.tools.claude_code.listing import (FIELDS, NAME, is_agent_file, legacy_agents, projects_root, raw_cwd,
                                               subagent_files)
from histmig.tools.claude_code.records import last_prompt, named_title, records_from_lines
from histmig.tools.claude_family.blocks import first_prompt, first_value
from histmig.tools.claude_family.listing import HEAD_TAIL, mark_unreadable, session_files, subdirs
from histmig.toolkit.search import JsonlSource


@functools.lru_cache(maxsize=16)
def _legacy(folder: Path) -> dict:
    # the 2.0-era agent files of a project folder, listed once per folder, not once per session
    return legacy_agents(folder)


def files(ref: Any) -> Iterator[Path]:
    path = ref.path if isinstance(ref.path, Path) else Path(ref.path)
    yield path
    if not is_agent_file(path):
        legacy = _legacy(path.parent)
        if legacy or os.path.isdir(path.parent / path.stem):      # one stat, not a walk, for most sessions
            yield from subagent_files(path, legacy)


def locate(homes: Any, index: Any = None) -> Iterator[tuple[SessionRef, Any]]:
    from histmig.core.scanindex import fill
    for folder in subdirs(projects_root(homes)):
        for path in session_files(folder):
            ref = SessionRef(format=NAME, id=path.stem, path=path)
            try:
                st = path.stat()
            except OSError as e:
                yield mark_unreadable(ref, e), None
                continue
            ref.size, ref.updated = st.st_size, st.st_mtime
            hit = index.hit(str(path), st, None, FIELDS) if index is not None else None
            yield (fill(ref, hit), None) if hit is not None else (ref, complete)


def complete(ref: SessionRef, first: bytes | None = None) -> None:
    """``cwd`` and ``title`` as ``listing.summarize`` gives them from ``scan_ends``' head and tail, read
    with one open: the head's records are parsed one by one up to a ``cwd`` and the first prompt, and
    of the rest only the lines naming a title record's type (``custom-title``, ``ai-title``). A
    session without a prompt in its head (its title: the ``last-prompt`` record) is read as the
    listing reads it. ``first``: the file's first bytes when the caller has just read them (the whole
    file when it is that small: no read here)."""
    path = Path(ref.path)
    if first is not None and len(first) >= (ref.size or 0):       # the whole file, just read by the caller
        size = len(first)
        small = size <= 2 * HEAD_TAIL
        head, tail = (first, b"") if small else (first[:HEAD_TAIL + SLACK], first[size - HEAD_TAIL:])
    else:
        fd = open_regular_fd(path)
        try:
            size = os.fstat(fd).st_size
            small = size <= 2 * HEAD_TAIL
            head = os.pread(fd, size if small else HEAD_TAIL + SLACK, 0)
            tail = b"" if small else os.pread(fd, HEAD_TAIL, size - HEAD_TAIL)
        finally:
            os.close(fd)
    end = len(head) if small else head.find(b"\n", HEAD_TAIL - 1) + 1      # head_lines' last line ends here
    if end <= 0:
        return _complete_ends(ref, path)
    nl = tail.find(b"\n")                # tail_lines: the complete lines of the last 64 KB past the head
    tail_from = len(tail) if nl < 0 else max(nl + 1, end - (size - HEAD_TAIL))
    titles = _lines_with(head, 0, end, TITLE_MARK) + _lines_with(tail, tail_from, len(tail), TITLE_MARK)

    def records(data: bytes, stop: int | None) -> Iterator[Any]:
        return records_from_lines(lenient(iter_lines(BytesIO(memoryview(data)[:stop]), chunk_size=8192)))
    read, parsed = records(head, end), []

    def head_records() -> Iterator[Any]:
        # the head's records, parsed once and only as far as a reader goes
        yield from parsed
        for rec in read:
            parsed.append(rec)
            yield rec
    # named titles win; then the head's first prompt; else the last-prompt record, from every line
    # of both ends as the listing reads them
    title = named_title(records(b"".join(titles), None)) or first_prompt(head_records())
    if title is None:
        return _complete_ends(ref, path)
    ref.cwd = first_value(head_records(), "cwd") or raw_cwd(list(head_records()))
    ref.title = title


def _lines_with(data: bytes, lo: int, hi: int, marker: re.Pattern[bytes]) -> list[bytes]:
    """The lines of ``data[lo:hi]`` (``lo`` a line start) that hold ``marker``, each once, in order."""
    out = []
    m = marker.search(data, lo, hi)
    while m is not None:
        ls = max(lo, data.rfind(b"\n", lo, m.start()) + 1)
        le = data.find(b"\n", m.start(), hi)
        done = hi if le < 0 else le + 1
        line = data[ls:done]
        out.append(line if line.endswith(b"\n") else line + b"\n")
        m = marker.search(data, done, hi)
    return out


# a named title's record type (``custom-title``, ``ai-title``); ``re`` finds a literal faster than bytes.find
TITLE_MARK = re.compile(rb"-title")


SLACK = 64 * 1024                  # read past the head's 64 KB for the end of the line that crosses it


def _complete_ends(ref: SessionRef, path: Path) -> None:
    """The same from the two ends' lines, a title record's lines parsed (named titles win)."""
    if os.stat(path).st_size <= 2 * HEAD_TAIL:
        head, tail = list(read_lines(path)), []
    else:
        head = head_lines(path, max_lines=10**6, max_bytes=HEAD_TAIL)
        end = max((ln.offset + (ln.length or 0) for ln in head), default=0)
        tail = [ln for ln in tail_lines(path, max_bytes=HEAD_TAIL) if ln.offset >= end]

    def records(lines: list, marker: bytes | None = None) -> Iterator[Any]:
        # lazily, so a first value stops the parse; a marker keeps the lines a title record is on
        chosen = lines if marker is None else [ln for ln in lines if marker in (ln.raw or b"")]
        return records_from_lines(lenient(chosen))
    ends = head + tail
    ref.cwd = first_value(records(head), "cwd") or raw_cwd(list(records(head)))
    ref.title = named_title(records(ends, b"-title")) or first_prompt(records(head)) \
        or last_prompt(records(ends, b"last-prompt"))


SEARCH = JsonlSource(files=files, records=records_from_lines, locate=locate)
