"""``histmig search`` over Codex rollouts: one file per session, ``.jsonl`` or ``.jsonl.zst``
(histmig/toolkit/search.py, docs/search.md).

``locate`` lists the rollouts as ``discover`` does (same walk, same order, same ids) without counting
messages: a rollout's id is its first line's ``session_meta`` id, read from that line alone; its
``cwd`` and ``title`` are filled by ``complete`` only when the search needs them (a match, ``--cwd``),
from the same head and tail ``make_ref`` reads, parsing only the lines they come from. Anything
unusual (a ``.zst``, no ``session_meta`` first, a head line past the first read) is listed by
``make_ref`` itself, so the fields are always the listing's (docs/search.md, "How it is fast").
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Iterator

import orjson

from histmig.core.diagnostics import HistmigError
from histmig.core.model import SessionRef
from histmig.jsonio.jsonl import BOM, is_zst, open_regular_fd
from histmig.tools.codex import walk
from histmig.tools.codex.adapter import (NAME, _hit, _latest_turn_cwd, _title, line_type, make_ref, meta_of,
                                         parse_name, payload, records_from_lines, user_prompt)
from histmig.toolkit.search import JsonlSource

HEAD_LINES, HEAD_BYTES = 200, 128 * 1024      # make_ref's head
FIRST_READ = 64 * 1024                       # the first line (session_meta) fits in it, or make_ref lists the file


def locate(homes: Any, index: Any = None) -> Iterator[tuple[SessionRef, Any]]:
    for path, archived, shadowed in walk.rollouts(homes.codex):
        entry = (Path(path), archived, Path(shadowed) if shadowed is not None else None)
        ref = _hit(entry, index) if index is not None else None
        if ref is not None:
            yield ref, None
            continue
        ref = _first_line_ref(*entry)
        if ref is None:
            yield make_ref(entry[0], archived=archived, shadowed=entry[2]), None
        else:
            yield ref, complete


def _first_line_ref(path: Path, archived: bool, shadowed: Path | None) -> SessionRef | None:
    """The ref of a plain rollout whose first line is its ``session_meta``: id, size and ``updated``
    (the file's mtime, as the listing gives it); None for anything else."""
    if is_zst(path):
        return None
    try:
        fd = open_regular_fd(path)
        try:
            st = os.fstat(fd)
            data = os.pread(fd, FIRST_READ, 0)
        finally:
            os.close(fd)
    except (HistmigError, OSError):
        return None
    nl = data.find(b"\n")
    if nl < 0 or data.startswith(BOM):
        return None
    try:
        obj = orjson.loads(data[:nl])
    except orjson.JSONDecodeError:
        return None
    meta = meta_of(obj) if line_type(obj) == "session_meta" else None
    if meta is None:
        return None
    names = parse_name(path.name)
    sid = meta["id"] if isinstance(meta.get("id"), str) else names[1] if names else path.stem
    return SessionRef(format=NAME, id=sid, path=path, archived=archived, compressed=False,
                      size=st.st_size, updated=st.st_mtime)


def complete(ref: SessionRef) -> None:
    """``cwd`` and ``title`` as ``make_ref`` lists them (``_ref_from_objs`` over the head, then the
    tail's latest ``turn_context``), parsing only the head lines that hold them."""
    path = Path(ref.path)
    fd = open_regular_fd(path)
    try:
        size = os.fstat(fd).st_size
        data = os.pread(fd, 2 * HEAD_BYTES, 0)
    finally:
        os.close(fd)
    got = _head_fields(data, len(data) < 2 * HEAD_BYTES)
    if got is None:
        full = make_ref(path, archived=ref.archived)
        ref.cwd, ref.title = full.cwd, full.title
        return
    cwd, ref.title, covered = got
    ref.cwd = (_latest_turn_cwd(path) or cwd) if covered < size else cwd


def _head_fields(data: bytes, eof: bool) -> tuple[str | None, str | None, int] | None:
    """``(cwd, title, end of the head)`` from the first bytes of a rollout, over the lines
    ``head_values`` would give (200 or 128 KB); None when they do not fit in ``data`` or the first
    line is not a session_meta. Only lines holding a marker of a line type ``_ref_from_objs`` reads
    for them are parsed (the writer spells the type names as is)."""
    pos, size, n = 0, len(data), 0
    meta_cwd = turn_cwd = title = None
    while pos < size:
        nl = data.find(b"\n", pos)
        if nl < 0 and not eof:
            return None
        end = size if nl < 0 else nl + 1
        if n == 0:
            meta = meta_of(_parse(data, pos, end))
            if meta is None:
                return None
            meta_cwd = meta.get("cwd") if isinstance(meta.get("cwd"), str) else None
        elif data.find(b'"turn_context"', pos, end) >= 0 or (title is None and (
                data.find(b'"message"', pos, end) >= 0 or data.find(b"user_message", pos, end) >= 0)):
            obj = _parse(data, pos, end)
            t = line_type(obj)
            if t == "turn_context" and isinstance(payload(obj).get("cwd"), str):
                turn_cwd = payload(obj)["cwd"]
            elif title is None and t is not None and (t.startswith("legacy:") or t in ("response_item", "event_msg")):
                title = _title(user_prompt(obj))
        n += 1
        pos = end
        if n >= HEAD_LINES or end >= HEAD_BYTES:
            break
    return turn_cwd or meta_cwd, title, pos


def _parse(data: bytes, start: int, end: int) -> Any:
    try:
        return orjson.loads(memoryview(data)[start:end])
    except orjson.JSONDecodeError:
        return None


SEARCH = JsonlSource(files=lambda ref: (Path(ref.path),), records=records_from_lines, locate=locate)
