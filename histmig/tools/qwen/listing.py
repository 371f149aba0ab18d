"""A Qwen listing row straight from the file's bytes (issue 15's cold-read rule, docs/scan-show.md): one
read of the head (of the whole file, up to ``WHOLE_READ``), each line there parsed once with
``orjson.loads`` into a plain value (no ``Line``, no ``Record``), the tail's lines only checked for
breakage, and past the head the messages counted by the byte search. Every answer is the one
``_summarize`` in adapter.py gives from the Record readers over ``scan_ends`` and the count
``list_ends`` makes (histmig/tools/claude_family/listing.py); a head with a line over ``MAX_HEAD``
is left to them (``list_file`` returns None).
"""
from __future__ import annotations

import os
from typing import Any

import orjson

from histmig.jsonio.jsonl import BOM, open_regular_fd
from histmig.tools.claude_family.listing import HEAD_TAIL, MESSAGE_MARK

MAX_HEAD = 8 << 20          # a head line longer than this: the Record reader (it streams such a line)
WHOLE_READ = 1 << 20        # a file up to this size is read in one call (head, tail and count from it)
COUNTED = ("user", "assistant")


class Facts:
    """What a listing shows of the lines seen, in file order (``add`` each line once)."""

    __slots__ = ("cwd", "created", "title", "messages", "marked", "broken", "last")

    def __init__(self) -> None:
        self.cwd = self.created = self.title = None
        self.messages = 0          # user and assistant records (a whole file's count)
        self.marked = 0            # those whose line holds MESSAGE_MARK (the byte search's count)
        self.broken = 0
        self.last = (0, False)     # the last head line's offset and whether the byte search counts it

    def add(self, data: bytes, ls: int, le: int, *, head: bool = True) -> None:
        """The line ``data[ls:le]`` (with its terminator; a BOM at offset 0 left out, as ``jsonl`` does)."""
        start = ls + 3 if ls == 0 and data.startswith(BOM) else ls
        hit = False
        try:
            obj = orjson.loads(memoryview(data)[start:le])   # (the terminator is JSON whitespace)
        except orjson.JSONDecodeError:
            obj = None
            self.broken += bool(data[start:le].strip())      # a blank line is no record, not broken
        else:
            if not isinstance(obj, dict):
                self.broken += 1                             # kept as bytes: "not a JSON object"
                obj = None
        if head:
            if obj is not None:
                hit = self._note(obj, data, ls, le)
            self.last = (ls, hit)

    def _note(self, obj: dict, data: bytes, ls: int, le: int) -> bool:
        t = obj.get("type")
        if self.cwd is None and isinstance(obj.get("cwd"), str):
            self.cwd = obj["cwd"]
        if self.created is None and isinstance(obj.get("timestamp"), str) and obj["timestamp"]:
            self.created = obj["timestamp"]
        if self.title is None and t == "user":
            self.title = _prompt(obj.get("message"))
        if t not in COUNTED:
            return False
        self.messages += 1
        hit = MESSAGE_MARK.search(data, ls, le) is not None
        self.marked += hit
        return hit


def _prompt(message: Any) -> str | None:
    """The first non-blank text part of a user message (adapter.first_prompt over ``part_of``)."""
    parts = message.get("parts") if isinstance(message, dict) else None
    if not isinstance(parts, list):
        return None
    for p in parts:
        if isinstance(p, dict) and isinstance(p.get("text"), str) and p.get("thought") is not True \
                and p["text"].strip():
            return p["text"].strip()
    return None


def list_file(path: Any, size: int, whole: bool, grown: tuple[dict, str] | None = None
              ) -> tuple[Facts, int | None, dict | None, bytes | None] | None:
    """``(facts, messages, resume, first bytes)`` of one file of ``size`` bytes (``whole``: the listing
    reads it all, else its two ends); ``grown``: the scan index's resume point and head hash for a file
    that may only have grown. None: a head line over ``MAX_HEAD`` (or a small file that grew meanwhile)."""
    fd = open_regular_fd(path)
    try:
        got = _read_head(fd, size)
        if got is None or (whole and not got[1]):
            return None
        data, eof = got
        facts = Facts()
        if whole:
            for ls, le in _lines(data, 0, len(data)):
                facts.add(data, ls, le)
            return facts, facts.messages, None, None
        nl = data.find(b"\n", HEAD_TAIL - 1)
        end = len(data) if nl < 0 else nl + 1
        for ls, le in _lines(data, 0, end):
            facts.add(data, ls, le)
        _tail(fd, data if eof else None, size, end, facts)
    finally:
        os.close(fd)
    first = data[:4096]
    if grown is not None:
        from histmig.core.scanindex import head_hash
        if grown[1] == head_hash(first):
            return (facts, *_count_file(path, **grown[0]), first)
    if not eof:
        return (facts, *_count_file(path, end=end, msgs=facts.marked), first)
    if end < len(data):
        return (facts, *count_rest(data, end, facts.marked), first)
    ls, hit = facts.last
    if data.endswith(b"\n"):
        resume = {"end": len(data), "msgs": facts.marked, "mid": None}
    else:                         # an unfinished last line: a later count reads it again
        resume = {"end": ls, "msgs": facts.marked - hit, "mid": None}
    return facts, facts.marked, resume, first


def _count_file(path: Any, **start: Any) -> tuple[int | None, dict | None]:
    from histmig.core.diagnostics import HistmigError
    from histmig.tools.claude_family.listing import count_messages_from
    try:
        return count_messages_from(path, **start, grouped=False)
    except (HistmigError, OSError):
        return None, None        # (read a moment ago: the file went away meanwhile)


def _read_head(fd: int, size: int) -> tuple[bytes, bool] | None:
    """The file's first bytes, through the end of the head (``head_lines(max_bytes=HEAD_TAIL)``'s
    lines), and whether they reach the end of the file; None past ``MAX_HEAD``."""
    want = size + 1 if size < WHOLE_READ else 4 * HEAD_TAIL
    while True:
        data = os.pread(fd, want, 0)
        eof = len(data) < want
        if eof or data.find(b"\n", HEAD_TAIL - 1) >= 0:
            return data, eof
        if want >= MAX_HEAD:
            return None
        want = min(want * 4, MAX_HEAD)


def _lines(data: bytes, start: int, stop: int):
    """``(start, end)`` of each line in ``data[start:stop]`` (a final line without ``\\n`` too)."""
    find = data.find
    while start < stop:
        nl = find(b"\n", start, stop)
        end = stop if nl < 0 else nl + 1
        yield start, end
        start = end


def _tail(fd: int, data: bytes | None, size: int, end: int, facts: Facts) -> None:
    """The broken lines among the complete lines of the last ``HEAD_TAIL`` bytes that start at or past
    ``end`` (``tail_lines``, as ``scan_ends`` filters them)."""
    start = max(0, size - HEAD_TAIL)
    if data is None or len(data) < size:
        buf, base = os.pread(fd, size - start, start), start
    else:
        buf, base = data, 0
    lo = start - base
    if start > 0:
        nl = buf.find(b"\n", lo, size - base)
        if nl < 0:
            return
        lo = nl + 1
    stop = min(len(buf), size - base)
    for ls, le in _lines(buf, max(lo, end - base), stop):
        facts.add(buf, ls, le, head=False)


def count_rest(data: bytes, start: int, msgs: int) -> tuple[int, dict]:
    """``count_messages_from`` over bytes already read: ``msgs`` counted before ``start`` (a line
    boundary), the marked lines from there parsed and counted."""
    total, done, resume = msgs, start, None
    for m in MESSAGE_MARK.finditer(data, start):
        if m.start() < done:
            continue                          # a second match on a line already counted
        ls = data.rfind(b"\n", 0, m.start()) + 1
        nl = data.find(b"\n", m.end())
        done = len(data) if nl < 0 else nl + 1
        if nl < 0:
            resume = {"end": ls, "msgs": total, "mid": None}
        body = memoryview(data)[ls + 3 if ls == 0 and data.startswith(BOM) else ls:done]
        try:
            obj = orjson.loads(body)
        except orjson.JSONDecodeError:
            continue
        total += isinstance(obj, dict) and obj.get("type") in COUNTED
    return total, resume or {"end": max(start, data.rfind(b"\n") + 1), "msgs": total, "mid": None}
