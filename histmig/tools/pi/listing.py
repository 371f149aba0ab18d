"""A listing row's facts straight from the parsed lines (docs/pi.md), without building a Record per
line: the header, the first prompt, the last assistant's provider, the message count and the broken
lines are what ``scan`` shows, and each reads one or two keys of a line's object. Every answer is the
one the Record readers give (histmig/tools/pi/entries.py: ``records_from_lines``, and ``header_of``,
``first_prompt``, ``last_assistant`` in adapter.py); a line is parsed as strictly as there."""
from __future__ import annotations

from typing import Any, Iterable

from histmig.jsonio.jsonl import Line


def _obj(line: Line) -> dict | None:
    """The line's object; None for a blank, broken or non-object line (an opaque Record)."""
    if line.blank:
        return None
    obj = line.obj
    return obj if isinstance(obj, dict) else None


def broken(lines: Iterable[Line]) -> int:
    """Lines kept as bytes: not blank, and not a JSON object."""
    return sum(1 for ln in lines if not ln.blank and _obj(ln) is None)


def header(lines: Iterable[Line]) -> dict | None:
    """The first non-blank line's object when it is the ``session`` header."""
    for ln in lines:
        if ln.blank:
            continue
        obj = _obj(ln)
        return obj if obj is not None and obj.get("type") == "session" else None
    return None


def message(line: Line) -> dict | None:
    """The ``message`` of a message entry."""
    obj = _obj(line)
    msg = obj.get("message") if obj is not None and obj.get("type") == "message" else None
    return msg if isinstance(msg, dict) else None


def first_prompt(lines: Iterable[Line]) -> str | None:
    for ln in lines:
        msg = message(ln)
        if msg is None or msg.get("role") != "user":
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


def last_provider(lines: Iterable[Line]) -> str | None:
    provider = None
    for ln in lines:
        msg = message(ln)
        if msg is not None and msg.get("role") == "assistant" and isinstance(msg.get("provider"), str):
            provider = msg["provider"]
    return provider


def messages(lines: Iterable[Line]) -> int:
    return sum(1 for ln in lines if (msg := message(ln)) is not None and msg.get("role") in ("user", "assistant"))
