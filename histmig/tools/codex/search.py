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

from histmig.core.model import SessionRef
from histmig.core.diagnostics import HistmigError
from histmig.jsonio.jsonl import BOM, is_zst, open_regular_fd
from histmig.jsonio.regular import open_regular_stat
from histmig.jsonio.marks import last_lines_with
from histmig.tools.codex import walk
from histmig.tools.codex.adapter import (NAME, index_hit_shown, prompt_title, line_type, make_ref,
                                         parse_name, payload, records_from_lines, tail_turn_cwd,
                                         user_prompt)
from histmig.toolkit.search import JsonlSource

HEAD_LINES, HEAD_BYTES = 200, 128 * 1024      # make_ref's head
FIRST_READ = 64 * 1024                       # the first line (session_meta) fits in it, or make_ref lists the file
FIRST_TRY = 32 * 1024       # read first: a session_meta line is ~20 KB (Codex's base instructions); the
                            # rest of FIRST_READ only when no line ends in it (half the bytes copied)


def locate(homes: Any, index: Any = None) -> Iterator[tuple[SessionRef, Any]]:
    batch: list[tuple] = []
    for path, archived, shadowed in walk.rollouts(homes.codex):
        batch.append((Path(path), archived, Path(shadowed) if shadowed is not None else None))
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
    return make_ref(entry[0], archived=entry[1], shadowed=entry[2], count=False) if got is None else got


def _first_line_ref(path: Path, archived: bool, shadowed: Path | None) -> tuple[str, int, float, str | None] | None:
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
        names = parse_name(path.name)
        sid = names[1] if names else path.stem
    cwd = meta.get("cwd")
    return sid, st.st_size, st.st_mtime, cwd if isinstance(cwd, str) else None




def complete(ref: SessionRef, first: bytes | None = None, *, meta_cwd: str | None = None) -> None:
    """``cwd`` and ``title`` as ``make_ref`` lists them (``_ref_from_objs`` over the head, then the
    tail's latest ``turn_context``), parsing only the head lines that hold them. ``first``: the file's
    first bytes when the caller has just read them (the whole file when it is that small: no read
    here); ``meta_cwd``: the first line's (``locate`` parsed it)."""
    got = _from_bytes(first) if first is not None and len(first) >= (ref.size or 0) else None
    got = got or _from_file(ref.path)
    if got is None:
        full = make_ref(Path(ref.path), archived=ref.archived, count=False)
        ref.cwd, ref.title = full.cwd, full.title
        return
    data, end, tail = got
    ref.cwd, ref.title = _head_fields(data, end, tail, meta_cwd)


def _from_bytes(data: bytes) -> tuple[bytes, int | None, str | None] | None:
    """``(head bytes, end of the head, the tail's cwd)`` of a file read whole into ``data``. The end
    is None (found by ``_head_fields`` only if it needs it) when the file's last line starts past
    128 KB: the head ends before the file does, so the tail is read."""
    size = len(data)
    if not size:
        return None
    start = max(0, size - TAIL_BYTES)
    if data.rfind(b"\n", 0, size - 1) + 1 >= HEAD_BYTES:   # the last line's start (one memrchr)
        return data, None, tail_turn_cwd(data, start, start)
    end = _head_end(data, True)
    return data, end, tail_turn_cwd(data, start, start) if end < size else None


def _from_file(path: Any) -> tuple[bytes, int, str | None] | None:
    """The same from the file: its head read (192 KB, or 256 KB for a line past it) and its tail."""
    fd = open_regular_fd(path)
    try:
        size = os.fstat(fd).st_size
        for want in (HEAD_BYTES + HEAD_SLACK, 2 * HEAD_BYTES):    # a head line past the first read: more
            data = os.pread(fd, want, 0)
            end = _head_end(data, len(data) < want)
            if end is not None:
                break
        if not end:
            return None
        tail = None
        if end < size:
            start = max(0, size - TAIL_BYTES)
            last = data[start:size] if len(data) >= size else os.pread(fd, size - start, start)
            tail = tail_turn_cwd(last, start)
        return data, end, tail
    finally:
        os.close(fd)


TAIL_BYTES = 64 * 1024      # _latest_turn_cwd's
HEAD_SLACK = 64 * 1024      # read past 128 KB for the end of the line that reaches it (most end in it)


def _head_fields(data: bytes, end: int | None, tail_cwd: str | None,
                 meta_cwd: str | None) -> tuple[str | None, str | None]:
    """``(cwd, title)`` from a rollout's head (``data[:end]``: the lines ``head_values`` gives; its
    first line the session_meta whose cwd is ``meta_cwd``; ``tail_cwd``, the tail's, wins). Only
    lines holding a marker of a line type ``_ref_from_objs`` reads are parsed (the writer spells type
    names as is): the last ``turn_context`` and the message lines up to the first prompt. ``end``
    None: ``data`` is the whole file and its head ends before it; the lines before a prompt are
    counted only up to it (``_head_end`` counts them all: 20 us a session)."""
    first = data.find(b"\n")
    if end is None and not tail_cwd:
        end = _head_end(data, True)
    turn = None
    for raw in () if tail_cwd else last_lines_with(data[first + 1:end], b'"turn_context"'):
        obj = _parse(raw, 0, len(raw))
        if line_type(obj) == "turn_context" and isinstance(payload(obj).get("cwd"), str):
            turn = payload(obj)["cwd"]
            break
    title, done = None, first + 1
    stop = len(data) if end is None else end
    lines, at = 0, 0                              # (end None) line ends counted before ``at``
    for at_mark, mark_end in _prompt_marks(data, done, stop):
        if at_mark < done:
            continue                              # a second marker on a line already read
        ls = data.rfind(b"\n", 0, at_mark) + 1
        if end is None:                           # the line is in the head: it starts before 128 KB,
            if ls >= HEAD_BYTES:                  # within the first 200 lines
                break
            while lines < HEAD_LINES and (nl := data.find(b"\n", at, ls)) >= 0:
                lines, at = lines + 1, nl + 1
            if lines >= HEAD_LINES:
                break
        done = min(stop, data.find(b"\n", mark_end) + 1 or stop)
        obj = _parse(data, ls, done)
        t = line_type(obj)
        if t is not None and (t.startswith("legacy:") or t in ("response_item", "event_msg")):
            title = prompt_title(user_prompt(obj))
            if title is not None:
                break
    return tail_cwd or turn or meta_cwd, title


PROMPT_MARKS = (b'"message"', b"user_message")


def _prompt_marks(data: bytes, pos: int, stop: int) -> Iterator[tuple[int, int]]:
    """``(start, end)`` of each of :data:`PROMPT_MARKS` in ``data[pos:stop]``, in order: one ``find``
    each (``re`` walks an alternation a byte at a time, 7 us to the usual first prompt). The two never
    overlap (neither holds the other's first byte), so the first of them ends before the other starts."""
    message, user = PROMPT_MARKS
    while True:
        a = data.find(message, pos, stop)
        b = data.find(user, pos, stop if a < 0 else a)
        if b >= 0:
            pos = b + len(user)
            yield b, pos
        elif a >= 0:
            pos = a + len(message)
            yield a, pos
        else:
            return


def _head_end(data: bytes, eof: bool) -> int | None:
    """Where ``head_values``' lines end (200 lines, or the line that reaches 128 KB), or None when
    ``data`` ends inside them (0: an empty file). One ``memchr`` per line, no parse."""
    pos, size = 0, len(data)
    for _ in range(HEAD_LINES):
        nl = data.find(b"\n", pos)
        if nl < 0:
            return size if eof else None
        pos = nl + 1
        if pos >= HEAD_BYTES or pos >= size:
            break
    return pos


def _parse(data: bytes, start: int, end: int) -> Any:
    try:
        return orjson.loads(memoryview(data)[start:end])
    except orjson.JSONDecodeError:
        return None


# the ref's own Path (locate made it): a Path made again per session is a parse of its text
SEARCH = JsonlSource(files=lambda ref: (ref.path if isinstance(ref.path, Path) else Path(ref.path),),
                     records=records_from_lines, locate=locate)
