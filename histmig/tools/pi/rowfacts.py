"""A listing row's facts straight from the parsed lines (docs/pi.md), without building a Record per
line: the header, the first prompt, the last assistant's provider, the message count and the broken
lines are what ``scan`` shows, and each reads one or two keys of a line's object. Every answer is the
one the Record readers give (histmig/tools/pi/entries.py: ``records_from_lines``, and ``header_of``,
``first_prompt``, ``last_assistant`` in adapter.py); a line is parsed as strictly as there."""
from __future__ import annotations

from typing import Any, Iterable, Iterator

from histmig.jsonio.jsonl import Line


BLANK = "blank"      # a blank line's place in :func:`objects` (not a record, not broken)


def objects(lines: Iterable[Line]) -> list[Any]:
    """Each line's object, parsed once: :data:`BLANK`, the object, or None for a broken or
    non-object line (an opaque Record)."""
    out: list[Any] = []
    for ln in lines:
        obj = BLANK if ln.blank else ln.obj
        out.append(obj if obj is BLANK or isinstance(obj, dict) else None)
    return out


def broken(objs: list[Any]) -> int:
    """Lines kept as bytes: not blank, and not a JSON object."""
    return objs.count(None)


def header(objs: list[Any]) -> dict | None:
    """The first non-blank line's object when it is the ``session`` header."""
    for obj in objs:
        if obj is BLANK:
            continue
        return obj if obj is not None and obj.get("type") == "session" else None
    return None


def _messages(objs: list[Any]) -> Iterator[dict]:
    """The ``message`` of every message entry."""
    for obj in objs:
        if obj is not None and obj is not BLANK and obj.get("type") == "message":
            msg = obj.get("message")
            if isinstance(msg, dict):
                yield msg


def first_prompt(objs: list[Any]) -> str | None:
    for msg in _messages(objs):
        if msg.get("role") != "user":
            continue
        for text in _texts(msg.get("content")):
            if text.strip():
                return text.strip()
    return None


def _texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):
        return [b["text"] for b in content
                if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)]
    return []


def last_provider(objs: list[Any]) -> str | None:
    provider = None
    for msg in _messages(objs):
        if msg.get("role") == "assistant" and isinstance(msg.get("provider"), str):
            provider = msg["provider"]
    return provider


def messages(objs: list[Any]) -> int:
    return sum(1 for msg in _messages(objs) if msg.get("role") in ("user", "assistant"))


def objects_of_bytes(data: bytes) -> list[Any]:
    """:func:`objects` of the lines of a file read whole into ``data``, without a ``Line`` per line
    (``jsonl.bodies`` splits and judges them as ``Line`` does; parsed as strictly, ``parse_json``)."""
    from histmig.jsonio.jsonl import bodies, parse_json
    out: list[Any] = []
    for body in bodies(data):
        obj = BLANK if body is None else parse_json(body)[0]
        out.append(obj if obj is BLANK or isinstance(obj, dict) else None)
    return out
