"""What a listing reads of a Codex rollout, parsing only the lines it uses (docs/scan-show.md, "What a
listing reads"): line 1 (the ``session_meta``), the head's first real prompt (the title) and last
``turn_context`` (the cwd, unless the 64 KB tail has a later one), and every line holding the message
marker, found by a byte search over the whole file (the count). Nothing else is parsed, so a listing's
broken lines are the ones among those, plus a last line without its newline that does not parse;
``doctor`` parses every line (issue 15: "strict parsing of every line belongs to ``show --format
native``, ``doctor --deep`` and the writers, not to listings").

``make_ref`` (scan) and ``search`` read the same head through :func:`head_fields`, so their cwd and
title are always the same.
"""
from __future__ import annotations

import os
from typing import Any, BinaryIO, Iterator

import orjson

from histmig.core.fsread import read_full
from histmig.core.scanindex import head_hash
from histmig.jsonio.jsonl import is_zst, open_stream
from histmig.jsonio.marks import CHUNK, MarkedLines, ends_line, last_lines_with, parse_line
from histmig.tools.codex.lines import (MESSAGE_MARK, head_obj, is_conversation_message, line_type,
                                       meta_of, payload, prompt_title, tail_turn_cwd, user_prompt)

HEAD_LINES, HEAD_BYTES = 200, 128 * 1024      # the head: where the title and a cwd are looked for
TAIL_BYTES = 64 * 1024                        # where the latest turn_context is looked for first
HEAD_SLACK = 64 * 1024      # read past 128 KB for the end of the line that reaches it (most end in it)
HEAD_MAX = 8 << 20          # a head line still open here: the head is the complete lines before it


class Listed:
    """The listing fields read from one rollout (``read`` fills them)."""
    __slots__ = ("first", "meta", "meta_error", "cwd", "title", "messages", "broken", "resume", "head")

    def __init__(self) -> None:
        self.first: Any = None           # line 1's value (None: it did not parse)
        self.meta: dict | None = None
        self.meta_error: str | None = None
        self.cwd: str | None = None
        self.title: str | None = None
        self.messages: int | None = None
        self.broken = 0
        self.resume: dict | None = None  # where a count of the grown file goes on ({end, msgs, broken})
        self.head = b""                  # the first 4 KiB (the scan index's grow check)


def read(path: Any, size: int, *, count: bool = True, grown: tuple[dict, str] | None = None) -> Listed | None:
    """The listing of one rollout; None for an empty file. ``count=False`` (search): messages only when
    the head read held the whole file. ``grown``: the scan index's ``(resume, head hash)`` of a plain
    file that only grew: when its first 4 KiB still hash so, the stored count of its first
    ``resume["end"]`` bytes stands and only the bytes past it are searched."""
    with open_stream(path) as fh:
        data, eof, end = _head_bytes(fh, size)
        if not data:
            return None
        out = Listed()
        out.head = data[:4096]
        if end is None:                           # a head line past HEAD_MAX: the lines before it
            end = data.rfind(b"\n") + 1
        nl = data.find(b"\n")
        _line_one(out, path, data, nl, eof)
        tail_cwd = None
        if end < size and not is_zst(path):       # (a .zst's tail means decompressing it all)
            tail_cwd = tail_cwd_of(data, size, fh.fileno())
        meta_cwd = out.meta.get("cwd") if out.meta is not None else None
        out.cwd, out.title = head_fields(data, end, tail_cwd, meta_cwd if isinstance(meta_cwd, str) else None)
        if count or eof:
            _count(out, fh, data, eof, _resume_point(grown, out.head))
    return out


def _resume_point(grown: tuple[dict, str] | None, head: bytes) -> dict | None:
    """The stored count of a file that only grew, when ``head``, its first 4 KiB, is still the stored."""
    if grown is None or not isinstance(grown[0].get("end"), int):
        return None
    return grown[0] if grown[1] is not None and head_hash(head) == grown[1] else None


def _head_bytes(fh: BinaryIO, size: int) -> tuple[bytes, bool, int | None]:
    """The file's first bytes, enough for its head unless a head line is longer than HEAD_MAX:
    ``(data, eof, where the head ends or None)``. A file up to a search chunk is read whole at once:
    its count then needs no second read, and no copy of a line cut by the first read's end."""
    want = max(HEAD_BYTES + HEAD_SLACK, min(size + 1, CHUNK))
    data = read_full(fh, want)
    while (end := head_end(data, len(data) < want)) is None and want < HEAD_MAX:
        more = read_full(fh, want)
        data, want = data + more, 2 * want
    return data, len(data) < want, end


def _line_one(out: Listed, path: Any, data: bytes, nl: int, eof: bool) -> None:
    """``first``, ``meta`` and a broken line 1 (a line 1 past the head read: ``head_obj`` reads it)."""
    if nl < 0 and not eof:
        obj, meta, err = head_obj(path)
        out.first, out.meta = obj, meta
        out.broken += err is not None and err.startswith("line 1 unreadable")
    else:
        obj, opaque = parse_line(0, memoryview(data)[:len(data) if nl < 0 else nl + 1])
        out.first, out.broken = obj, out.broken + opaque
        out.meta = meta_of(obj)
    if out.meta is None:
        out.meta_error = "no session_meta at the start of the file"


def tail_cwd_of(data: bytes, size: int, fd: int | None = None) -> str | None:
    """The latest ``turn_context`` cwd of the last TAIL_BYTES of a file of ``size`` bytes
    (``tail_turn_cwd``): from ``data``, its first bytes, when they reach its end, else read from ``fd``."""
    start = max(0, size - TAIL_BYTES)
    if len(data) >= size:
        return tail_turn_cwd(data, start, start)
    return tail_turn_cwd(os.pread(fd, size - start, start), start)


def _count(out: Listed, fh: BinaryIO, data: bytes, eof: bool, resume: dict | None) -> None:
    """Messages and broken marker lines of the whole file past line 1 (past ``resume["end"]`` when
    given, adding to its counts), and a last line without its newline that does not parse."""
    msgs = broken = partial_msgs = partial_broken = 0
    if resume is not None:
        start, msgs, broken = resume["end"], resume["msgs"], resume.get("broken", 0)
        fh.seek(start)
        lines = MarkedLines(fh, MESSAGE_MARK, start=start)
    else:                  # from the first byte, without a copy of the bytes read: line 1 is skipped
        lines = MarkedLines(fh, MESSAGE_MARK, first=data, eof=eof)
    matched_last = False
    for offset, raw in lines:
        if offset == 0:
            continue                              # line 1: judged by _line_one
        obj, opaque = parse_line(offset, raw)
        hit = is_conversation_message(obj)
        msgs, broken = msgs + hit, broken + opaque
        if not ends_line(raw):                    # counted, not resumed past: it may still be written
            partial_msgs, partial_broken, matched_last = hit, opaque, True
    if lines.unterminated and not matched_last and lines.end > 0:     # (at 0: line 1)
        partial_broken = parse_line(lines.end, lines.unterminated)[1]
        broken += partial_broken
    out.messages = msgs
    out.broken += broken
    out.resume = {"end": lines.end, "msgs": msgs - partial_msgs, "broken": broken - partial_broken}


def head_fields(data: bytes, end: int | None, tail_cwd: str | None,
                meta_cwd: str | None) -> tuple[str | None, str | None]:
    """``(cwd, title)`` from a rollout's head (``data[:end]``: 200 lines, or the line that reaches
    128 KB; its first line the session_meta whose cwd is ``meta_cwd``; ``tail_cwd``, the tail's, wins).
    Only lines holding a marker of a line type that can hold them are parsed (the writer spells type
    names as is): the last ``turn_context`` and the message lines up to the first prompt. ``end``
    None: ``data`` is the whole file and its head ends before it; the lines before a prompt are
    counted only up to it (``head_end`` counts them all: 20 us a session)."""
    first = data.find(b"\n")
    if end is None and not tail_cwd:
        end = head_end(data, True)
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


def head_end(data: bytes, eof: bool) -> int | None:
    """Where the head's lines end (200 lines, or the line that reaches 128 KB), or None when ``data``
    ends inside them (0: an empty file). One ``memchr`` per line, no parse."""
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
