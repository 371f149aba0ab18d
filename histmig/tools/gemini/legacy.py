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

from pathlib import Path
from typing import Any, Iterator

import orjson

from histmig.core.model import Record
from histmig.jsonio.jsonpull import PullError, pieces
from histmig.tools.gemini.records import message_records

KEY = "messages"


class Unstreamable(Exception):
    """The document is not one the pull reader gives message by message (read it whole)."""


def survey(path: Path) -> tuple[dict[str, Any], int | None]:
    """The metadata (every member but ``messages``) and the offset of the first message (None: none).
    Every message is parsed once to be sure the whole document is valid before records are given."""
    meta: dict[str, Any] = {}
    first = None
    try:
        with open(path, "rb") as fh:
            for p in pieces(fh, KEY):
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
        for p in pieces(src, KEY):
            if not p.item:
                continue
            if held is not None:
                yield from _message(held[1], raw_fh.read(p.start - held[0]), answered)
            held = (p.start, orjson.loads(p.raw))
        if held is not None:
            yield from _message(held[1], raw_fh.read(), answered)


def _message(msg: Any, raw: bytes, answered: set[str]) -> list[Record]:
    if not isinstance(msg, dict):
        return [Record(kind="event", raw=raw, extra={"value": msg}, source_type="legacy-json-value")]
    recs = message_records(msg, None, answered)
    recs[0].raw = raw
    return recs
