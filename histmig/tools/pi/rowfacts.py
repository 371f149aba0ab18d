"""A listing row's facts straight from the parsed lines (docs/pi.md), without building a Record per
line: the header, the first prompt, the last assistant's provider, the message count and the broken
lines are what ``scan`` shows, and each reads one or two keys of a line's object (:class:`Row`: all of
them in one pass). Every answer is the
one the Record readers give (histmig/tools/pi/entries.py: ``records_from_lines``, and ``header_of``,
``first_prompt``, ``last_assistant`` in adapter.py); a line is parsed as strictly as there."""
from __future__ import annotations

from typing import Any, Iterable

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


def header(objs: list[Any]) -> dict | None:
    """The first non-blank line's object when it is the ``session`` header."""
    for obj in objs:
        if obj is BLANK:
            continue
        return obj if obj is not None and obj.get("type") == "session" else None
    return None


class Row:
    """The rest of a row, from one pass over the objects (a small file: thousands of rows per scan):
    the first prompt and the message count of ``head``, the last assistant's provider and the broken
    lines of ``head`` and ``tail`` together."""

    __slots__ = ("prompt", "provider", "messages", "broken")

    def __init__(self, head: list[Any], tail: list[Any]):
        prompt = provider = None
        messages = broken = 0
        for objs, in_head in ((head, True), (tail, False)):
            for obj in objs:            # (one frame for every line: a call per message cost a fifth)
                if obj is None:
                    broken += 1         # kept as bytes: not blank, and not a JSON object
                    continue
                if obj is BLANK or obj.get("type") != "message":
                    continue
                msg = obj.get("message")
                if not isinstance(msg, dict):
                    continue
                role = msg.get("role")
                if role == "assistant":
                    messages += in_head
                    if isinstance(msg.get("provider"), str):
                        provider = msg["provider"]
                elif role == "user":
                    messages += in_head
                    if in_head and prompt is None:
                        prompt = next((t.strip() for t in content_texts(msg.get("content")) if t.strip()), None)
        self.prompt, self.provider, self.messages, self.broken = prompt, provider, messages, broken


def content_texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):
        return [b["text"] for b in content
                if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)]
    return []


def objects_of_bytes(data: bytes) -> list[Any]:
    """:func:`objects` of the lines of a file read whole into ``data``, without a ``Line`` per line
    (``jsonl.parsed_lines`` splits, judges and parses them as ``Line`` does)."""
    from histmig.jsonio.jsonl import bodies, canonical_values, parse_json
    values = canonical_values(data)
    if values is not None:      # (parsed_lines' first step, without a generator and a tuple per line)
        return [v if isinstance(v, dict) else None for v in values]     # no canonical line is blank
    out: list[Any] = []
    for body in bodies(data):   # (parsed_lines' other path: canonical_values not tried twice)
        obj = BLANK if body is None else parse_json(body)[0]
        out.append(obj if obj is BLANK or isinstance(obj, dict) else None)
    return out
