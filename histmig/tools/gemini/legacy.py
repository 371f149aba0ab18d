"""The older whole-file Gemini ``.json`` session (``{sessionId, startTime, lastUpdated, messages: [...]}``,
docs/specs/gemini.md §1-2), read one message at a time (histmig/jsonio/jsonpull.py).

Records: the document's head (every byte before the first message; its ``extra`` the metadata, from
members before and after ``messages``) as one ``legacy-json`` event, then each message's records
(records.message_records) with the message's bytes, up to the next message, on its first record; the
last message's run goes to the end of the file. So the bytes of all records are the file, and memory
holds one message. A document the pull reader or ``orjson`` refuses is read whole, as before (one
opaque record naming the error).
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Callable, Iterator

import orjson

from histmig.core.model import Opaque, Record, Text
from histmig.jsonio.jsonl import RECORD_MAX_BYTES, record_too_big
from histmig.jsonio.jsonpull import PullError, pieces
from histmig.jsonio.marks import prefix_string
from histmig.tools.gemini.records import CONTEXT_TAGS, RESOLVED, message_records

KEY = "messages"


class Unstreamable(Exception):
    """The document is not one the pull reader gives message by message (read it whole)."""


class TooBig(Exception):
    """A message (``number``, 1-based; None: a member beside ``messages``) over the record limit:
    named (``jsonl.record_too_big``), never loaded."""

    def __init__(self, number: int | None, size: int):
        super().__init__(number, size)
        self.number, self.size = number, size


def survey(path: Path) -> tuple[dict[str, Any], int | None]:
    """The metadata (every member but ``messages``) and the offset of the first message (None: none).
    Every message is parsed once to be sure the whole document is valid before records are given."""
    meta: dict[str, Any] = {}
    first, n = None, 0
    try:
        with open(path, "rb") as fh:
            for p in pieces(fh, KEY, limit=RECORD_MAX_BYTES):
                n += p.item
                if p.oversize and not (p.key == KEY and not p.item):
                    raise TooBig(n if p.item else None, p.size)
                if p.item:
                    first = p.start if first is None else first
                    orjson.loads(p.raw)
                elif p.key == KEY:
                    raise Unstreamable("messages is not a list")
                else:
                    meta[p.key] = orjson.loads(p.raw)
    except (PullError, orjson.JSONDecodeError) as e:
        raise Unstreamable(str(e)) from e
    return meta, first


def records(path: Path, meta: dict[str, Any], first: int | None) -> Iterator[Record]:
    """The records of a surveyed document, read again from the file (one message held at a time)."""
    with open(path, "rb") as src, open(path, "rb") as raw_fh:
        head = raw_fh.read(first) if first is not None else raw_fh.read()
        yield Record(kind="event", raw=head, line=1, extra=meta, source_type="legacy-json")
        answered: set[str] = set()
        held = None                     # (start, message): emitted once the next one's start is known
        n = 0
        for p in pieces(src, KEY, limit=RECORD_MAX_BYTES):
            if not p.item:
                continue
            n += 1
            if p.oversize:              # (the file grew one since the survey)
                raise record_too_big(path, n, p.size, RECORD_MAX_BYTES)
            if held is not None:
                yield from _message(held[1], raw_fh.read(p.start - held[0]), answered)
            start, raw, p = p.start, p.raw, None
            held = (start, orjson.loads(raw))
            del raw
        if held is not None:
            yield from _message(held[1], raw_fh.read(), answered)


def _message(msg: Any, raw: bytes, answered: set[str]) -> list[Record]:
    if not isinstance(msg, dict):
        return [Record(kind="event", raw=raw, extra={"value": msg}, source_type="legacy-json-value")]
    recs = message_records(msg, None, answered)
    recs[0].raw = raw
    return recs


# ---- the listing's one pass ---------------------------------------------------------------------

# A listing parses messages up to this size; a longer one is not read: it stands in as a message of its
# ``type`` (found among its first keys), a user message with the text its first bytes begin.
LIST_MAX = 1 << 20
PREFIX = 64 * 1024
_TYPE = re.compile(rb'\A\s*\{(?:[^"{}\[\]]|"(?:[^"\\]|\\.)*")*?"type"\s*:\s*"(user|gemini)"')


def listing(path: Path, take: Callable[[Record], None]) -> dict[str, Any]:
    """One pass for ``scan``: each message's records handed to ``take``, the metadata (every member but
    ``messages``) returned; memory holds one message up to :data:`LIST_MAX`. Raises :class:`Unstreamable`
    for a document the pull reader or ``orjson`` refuses, or a member beside the messages over the size."""
    meta: dict[str, Any] = {}
    answered: set[str] = set()
    try:
        with open(path, "rb") as fh:
            fd = fh.fileno()
            for p in pieces(fh, KEY, limit=LIST_MAX):
                if not p.item:
                    if p.key == KEY or p.oversize:
                        raise Unstreamable("messages is not a list" if p.key == KEY else f"{p.key} is too long")
                    meta[p.key] = orjson.loads(p.raw)
                elif p.oversize:
                    rec = _stand_in(os.pread(fd, PREFIX, p.start))
                    if rec is not None:
                        take(rec)
                else:
                    msg = orjson.loads(p.raw)
                    if isinstance(msg, dict):
                        for rec in message_records(msg, None, answered):
                            take(rec)
    except (PullError, orjson.JSONDecodeError) as e:
        raise Unstreamable(str(e)) from e
    return meta


def _stand_in(head: bytes) -> Record | None:
    m = _TYPE.match(head)
    if m is None:
        return None
    if m.group(1) == b"gemini":
        return Record(kind="message", role="assistant", parts=[Opaque(None, "over the listing's size")],
                      source_type=RESOLVED)
    text = prefix_string(head, ("text",))
    part = Text(text, injected=text.lstrip().startswith(CONTEXT_TAGS)) if text else Opaque(None, "over the listing's size")
    return Record(kind="message", role="user", parts=[part], source_type=RESOLVED)
