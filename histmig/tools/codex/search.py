"""``histmig search`` over Codex rollouts: one file per session, ``.jsonl`` or ``.jsonl.zst``
(histmig/toolkit/search.py, docs/search.md).

``locate`` lists the rollouts as ``discover`` does (same walk, same order, same ids) without counting
messages: a rollout's id is its first line's ``session_meta`` id, read from that line alone; its
``cwd`` and ``title`` are filled by ``complete`` only when the search needs them (a match, ``--cwd``),
from the same head and tail ``make_ref`` reads, parsing only the lines they come from. Anything
unusual (a ``.zst``, no ``session_meta`` first, a head line past the first read) is listed by
``make_ref`` itself (``count=False``: no count past the head), so the fields are always the
listing's (docs/search.md, "How it is fast").
"""
from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any, Iterator

import orjson

from histmig.core.model import SessionRef, given_path
from histmig.core.diagnostics import HistmigError
from histmig.jsonio.jsonl import BOM, is_zst, open_regular_fd
from histmig.jsonio.regular import open_regular_stat
from histmig.tools.codex import walk
from histmig.tools.codex.adapter import NAME, index_hit_shown, make_ref, parse_name, records_from_lines
from histmig.tools.codex.lines import line_type, payload
from histmig.tools.codex.listread import HEAD_BYTES, HEAD_SLACK, head_end, head_fields, tail_cwd_of
from histmig.toolkit.search import JsonlSource

FIRST_READ = 64 * 1024                       # the first line (session_meta) fits in it, or make_ref lists the file
FIRST_TRY = 32 * 1024       # read first: a session_meta line is ~20 KB (Codex's base instructions); the
                            # rest of FIRST_READ only when no line ends in it (half the bytes copied)


def locate(homes: Any, index: Any = None) -> Iterator[tuple[SessionRef, Any]]:
    batch: list[tuple] = []
    for entry in walk.rollouts(homes.codex):      # paths as text: a ref makes its Path when asked
        batch.append(entry)
        if len(batch) >= LOCATE_BATCH:
            yield from _locate_batch(batch, index)
            batch = []
    yield from _locate_batch(batch, index)


LOCATE_BATCH = 8192         # files per fork_map: one fork for most homes (search holds every ref anyway)
LOCATE_MIN_FORK = 32 << 20  # bytes of first reads under which a batch is read here (fork_map's default)


def _locate_batch(batch: list[tuple], index: Any) -> Iterator[tuple[SessionRef, Any]]:
    """The batch's refs in order: the index's hits here, the first lines of the rest read on every
    CPU (``fork_map``, weighed by the bytes each read takes: a small batch is read here). A worker
    hands back the few fields it read (a ref and its ``Path`` pickle slowly); the refs are made here."""
    hits = [index_hit_shown(entry, index) if index is not None else None for entry in batch]
    todo = [entry for entry, hit in zip(batch, hits) if hit is None]
    read: Iterator = iter(())
    if todo:
        from histmig.core.forkmap import fork_map
        read = iter(fork_map(_locate_one, todo, [FIRST_READ] * len(todo), min_weight=LOCATE_MIN_FORK))
    for entry, hit in zip(batch, hits):
        if hit is not None:
            yield hit, None
            continue
        got = next(read)
        if isinstance(got, SessionRef):
            yield got, None
            continue
        sid, size, mtime, meta_cwd = got
        ref = SessionRef(format=NAME, id=sid, path=entry[0], archived=entry[1], compressed=False,
                         size=size, updated=mtime)
        yield ref, functools.partial(complete, meta_cwd=meta_cwd)


def _locate_one(entry: tuple) -> SessionRef | tuple[str, int, float, str | None]:
    """The listing's ref (``make_ref``, messages not counted: a search shows no counts) of an unusual
    file, or ``(id, size, mtime, cwd)`` read from the first line of a plain one (``_first_line_ref``)."""
    got = _first_line_ref(*entry)
    if got is not None:
        return got
    path, archived, shadowed = entry
    return make_ref(Path(path), archived=archived, shadowed=None if shadowed is None else Path(shadowed), count=False)


def _first_line_ref(path: str, archived: bool, shadowed: str | None) -> tuple[str, int, float, str | None] | None:
    """``(id, size, updated, cwd)`` of a plain rollout whose first line is its ``session_meta`` (the
    id and cwd of that line, size and mtime as the listing gives them); None for anything else. One
    open, fstat and read per file (two reads for a first line past 32 KB)."""
    if is_zst(path):
        return None
    try:
        fd, st = open_regular_stat(path)
    except (HistmigError, OSError):
        return None                               # make_ref names why
    try:
        data = os.pread(fd, FIRST_TRY, 0)
        nl = data.find(b"\n")
        if nl < 0 and len(data) == FIRST_TRY:
            data += os.pread(fd, FIRST_READ - FIRST_TRY, FIRST_TRY)
            nl = data.find(b"\n")
    except OSError:
        return None
    finally:
        os.close(fd)
    if nl < 0 or data.startswith(BOM):
        return None
    try:
        obj = orjson.loads(memoryview(data)[:nl])
    except orjson.JSONDecodeError:
        return None
    if line_type(obj) != "session_meta":
        return None
    meta = payload(obj)
    sid = meta.get("id")
    if not isinstance(sid, str):
        names = parse_name(os.path.basename(path))
        sid = names[1] if names else Path(path).stem
    cwd = meta.get("cwd")
    return sid, st.st_size, st.st_mtime, cwd if isinstance(cwd, str) else None




def complete(ref: SessionRef, first: bytes | None = None, *, meta_cwd: str | None = None) -> None:
    """``cwd`` and ``title`` as ``make_ref`` lists them (``listread.head_fields`` over the head, then
    the tail's latest ``turn_context``), parsing only the head lines that hold them. ``first``: the file's
    first bytes when the caller has just read them (the whole file when it is that small: no read
    here); ``meta_cwd``: the first line's (``locate`` parsed it)."""
    got = _from_bytes(first) if first is not None and len(first) >= (ref.size or 0) else None
    got = got or _from_file(ref.path)
    if got is None:
        full = make_ref(Path(ref.path), archived=ref.archived, count=False)
        ref.cwd, ref.title = full.cwd, full.title
        return
    data, end, tail = got
    ref.cwd, ref.title = head_fields(data, end, tail, meta_cwd)


def _from_bytes(data: bytes) -> tuple[bytes, int | None, str | None] | None:
    """``(head bytes, end of the head, the tail's cwd)`` of a file read whole into ``data``. The end
    is None (found by ``head_fields`` only if it needs it) when the file's last line starts past
    128 KB: the head ends before the file does, so the tail is read."""
    size = len(data)
    if not size:
        return None
    if data.rfind(b"\n", 0, size - 1) + 1 >= HEAD_BYTES:   # the last line's start (one memrchr)
        return data, None, tail_cwd_of(data, size)
    end = head_end(data, True)
    return data, end, tail_cwd_of(data, size) if end < size else None


def _from_file(path: Any) -> tuple[bytes, int, str | None] | None:
    """The same from the file: its head read (192 KB, or 256 KB for a line past it) and its tail."""
    fd = open_regular_fd(path)
    try:
        size = os.fstat(fd).st_size
        for want in (HEAD_BYTES + HEAD_SLACK, 2 * HEAD_BYTES):    # a head line past the first read: more
            data = os.pread(fd, want, 0)
            end = head_end(data, len(data) < want)
            if end is not None:
                break
        if not end:
            return None
        return data, end, tail_cwd_of(data, size, fd) if end < size else None
    finally:
        os.close(fd)


# the ref's path as locate gave it (the walk's text): no Path made per session searched
SEARCH = JsonlSource(files=lambda ref: (given_path(ref),),
                     records=records_from_lines, locate=locate)
