"""A Pi listing row from a file's bytes without parsing its message lines (issue 15's cold-read rule,
docs/pi.md "scan and show"): the lines the row shows are parsed (the header, the user lines up to the
first prompt, the assistant lines back to the last one naming a provider, the last line), and the
messages are counted with byte searches.

The byte rule. Pi writes an entry's keys in the order ``type, id, parentId, timestamp, message`` and a
message's ``role`` first, and a raw ``"`` never occurs inside a JSON string (it is escaped there), so a
raw ``"message":{"role":"`` is always a ``message`` key whose object starts with its role. Between the
header and the last line, when

- ``"parentId":`` occurs once per line (a write cut short with the next entry appended to it -- a crash,
  then a resume -- holds two when the cut one got past its own; a blank or garbage line holds none),
- ``{"type":"message",`` occurs only at line starts (the appended entry of a line cut earlier), and
- ``"message":{"role":"`` occurs as often as lines start so (no message key nested elsewhere),

each message entry's top-level message is counted once by role: the counts of ``"message":{"role":"user"``
and ``…"assistant"`` are the user and assistant messages the Record readers count, as long as those lines
parse. A BOM, CR, NUL, invalid UTF-8 or a surrogate escape (orjson refuses a lone one) also leaves the
file to the exact path that parses every line (``None`` here). The one line counted as a message without
being one is a line broken in place that keeps a message entry's start and its one ``parentId`` (a hand
edit; Pi's writer never makes one): ``doctor`` (every line parsed) names it (``pi.broken-lines``).

Broken lines are counted among the lines parsed (the header, the lines the row reads, the last line, where
a crash leaves its cut line); a line read for the prompt or provider that does not parse is broken and
taken out of the count, as the Record readers leave it out.
"""
from __future__ import annotations

import re
from typing import Any

from histmig.jsonio.jsonl import parse_json
from histmig.tools.pi.rowfacts import content_texts

MSG_START = b'\n{"type":"message",'       # a line that starts as a message entry
MARK = b'"message":{"role":"'                  # a message key whose object starts with its role
USER, ASSISTANT = MARK + b'user"', MARK + b'assistant"'
PARENT = b'"parentId":'
SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]")   # a surrogate escape: orjson refuses a lone one


class FastRow:
    __slots__ = ("header", "prompt", "provider", "messages", "broken")

    def __init__(self) -> None:
        self.header: dict | None = None
        self.prompt = self.provider = None
        self.messages = self.broken = 0


def _line(data: bytes, start: int) -> bytes:
    nl = data.find(b"\n", start)
    return data[start:] if nl < 0 else data[start:nl]


def _obj(body: bytes) -> Any:
    """The line's object, or None for a broken or non-object line (an opaque Record)."""
    obj = parse_json(body)[0]
    return obj if isinstance(obj, dict) else None


def _message(obj: Any) -> dict | None:
    if obj is None or obj.get("type") != "message":
        return None
    msg = obj.get("message")
    return msg if isinstance(msg, dict) else None


def row_of_bytes(data: bytes) -> FastRow | None:
    """The row of a file read whole into ``data``; None when the byte rule cannot decide (the caller
    parses every line), or when line 1 does not parse (the exact path says what it is)."""
    if data[:1] != b"{" or b"\r" in data or b"\x00" in data:
        return None
    if not data.isascii():
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            return None
    if SURROGATE.search(data):
        return None
    h_end = data.find(b"\n") + 1
    if h_end == 0:
        return None
    row = FastRow()
    header = _obj(data[:h_end - 1])
    if header is None or header.get("type") != "session":
        return None
    row.header = header
    size = len(data)
    last = data.rfind(b"\n", 0, size - 1) + 1 if data.endswith(b"\n") else data.rfind(b"\n") + 1
    if last < h_end:            # the header is the last line
        last = size
    # the body: the complete lines between the header and the last line, each with one parentId and
    # every message key with a role in a line that starts as a message entry (module docstring)
    lines = data.count(b"\n", h_end, last)
    if data.count(PARENT, h_end, last) != lines:
        return None             # a line without its parentId (blank, garbage), or a cut line joined to the next
    starts = data.count(MSG_START, h_end - 1, last)
    if data.count(MARK, h_end, last) != starts or data.count(MSG_START[1:], h_end, last) != starts:
        return None             # a message key elsewhere than a message entry's, or an entry joined mid-line
    row.messages = data.count(USER, h_end, last) + data.count(ASSISTANT, h_end, last)
    tail = None
    if last < size:
        body = data[last:]
        body = body[:-1] if body.endswith(b"\n") else body
        if body.strip():
            tail = _obj(body)
            row.broken += tail is None
            msg = _message(tail)
            if msg is not None and msg.get("role") in ("user", "assistant"):
                row.messages += 1
    # the first prompt: user lines in order, the last line after them
    at = h_end
    while row.prompt is None and (at := data.find(USER, at, last)) >= 0:
        start = data.rfind(b"\n", 0, at) + 1
        msg = _checked(row, data, start)
        if msg is not None:
            row.prompt = _prompt(msg)
        at = data.find(b"\n", at) + 1
    if row.prompt is None:
        msg = _message(tail)
        if msg is not None and msg.get("role") == "user":
            row.prompt = _prompt(msg)
    # the provider: the last assistant message that names one (the last line first)
    msg = _message(tail)
    if msg is not None and msg.get("role") == "assistant" and isinstance(msg.get("provider"), str):
        row.provider = msg["provider"]
    else:
        end = last
        while (at := data.rfind(ASSISTANT, h_end, end)) >= 0:
            start = data.rfind(b"\n", 0, at) + 1
            msg = _checked(row, data, start)
            if msg is not None and isinstance(msg.get("provider"), str):
                row.provider = msg["provider"]
                break
            end = start
    return row


def _checked(row: FastRow, data: bytes, start: int) -> dict | None:
    """The message of a counted line the row reads; one that does not parse after all is broken and
    not a message (the count and the broken lines corrected)."""
    obj = _obj(_line(data, start))
    if obj is None:
        row.broken += 1
        row.messages -= 1
        return None
    return _message(obj)


def _prompt(msg: dict) -> str | None:
    return next((t.strip() for t in content_texts(msg.get("content")) if t.strip()), None)
