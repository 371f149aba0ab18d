"""A Gemini listing row of a small ``.jsonl`` straight from its bytes (issue 15's cold-read rule,
docs/scan-show.md): the file read once, each line parsed once (``jsonl.parse_json``, as strictly as
``Line.obj``) into a plain value, and the metadata, first prompt, message count and broken lines taken
from those values -- no ``Line``, no ``Record``. Every answer is the one adapter.py's ``_head_facts`` and
``records.resolve`` give from the Line reader (docs/specs/gemini.md §2, §3); tests/test_gemini_listing.py
compares both on every shape. A file that grew past what its stat said is left to them (None).
"""
from __future__ import annotations

import os
from typing import Any

from histmig.jsonio.jsonl import BOM, parse_json
from histmig.jsonio.regular import open_regular_fd
from histmig.tools.gemini.records import CONTEXT_TAGS, counts, line_kind

BLANK = object()        # a blank line: no record, not broken
BROKEN = object()       # a line that does not parse: an opaque record (a broken line)


class Facts:
    """What the listing shows: merged metadata, the first prompt, the counted messages, broken lines."""

    __slots__ = ("meta", "prompt", "messages", "broken")

    def __init__(self) -> None:
        self.meta: dict[str, Any] = {}
        self.prompt: str | None = None
        self.messages = 0
        self.broken = 0


def small_facts(path: Any, size: int) -> Facts | None:
    """The facts of a file of ``size`` bytes read whole; None when it holds more than that now."""
    fd = open_regular_fd(path)
    try:
        data = os.pread(fd, size + 1, 0)
    finally:
        os.close(fd)
    if len(data) > size:
        return None
    return facts_of_bytes(data)


def facts_of_bytes(data: bytes) -> Facts:
    facts = Facts()
    values = values_of_bytes(data)
    facts.broken = values.count(BROKEN)
    _head(facts, values)
    facts.messages = _count(values)
    return facts


def values_of_bytes(data: bytes) -> list[Any]:
    """Each line's value: :data:`BLANK`, :data:`BROKEN`, or what it parsed to (any JSON value), split and
    judged the way ``jsonl.iter_lines`` and ``Line`` (``blank``, ``body``, ``error``) do it."""
    out: list[Any] = []
    pos, size, find = 0, len(data), data.find
    while pos < size:
        nl = find(b"\n", pos)
        end = size if nl < 0 else nl + 1
        start = pos + 3 if pos == 0 and data.startswith(BOM) else pos
        stop = end - (2 if data[end - 2:end] == b"\r\n" else 1) if nl >= 0 else end
        body = data[start:stop]
        if data[pos:pos + 1] != b"{" and not body.strip():
            out.append(BLANK)
        else:
            value, error = parse_json(body)
            out.append(BROKEN if error is not None else value)
        pos = end
    return out


def _head(facts: Facts, values: list[Any]) -> None:
    """``_head_facts``: metadata merged in line order, the first prompt among the user messages."""
    meta = facts.meta
    for obj in values:
        if not isinstance(obj, dict):
            continue
        kind = line_kind(obj)
        if kind == "meta":
            meta.update(obj)
        elif kind == "$set" and isinstance(obj["$set"], dict):
            meta.update({k: v for k, v in obj["$set"].items() if k != "messages"})
            for m in obj["$set"].get("messages") or []:
                if isinstance(m, dict) and m.get("type") == "user" and facts.prompt is None:
                    facts.prompt = prompt_of(m.get("content"))
        elif kind == "message" and obj.get("type") == "user" and facts.prompt is None:
            facts.prompt = prompt_of(obj.get("content"))


def prompt_of(content: Any) -> str | None:
    """adapter._prompt over records.content_parts: the first text part not injected, not blank and not
    starting with ``/`` or ``?`` (a part with a call, a response or inline data is no text)."""
    if isinstance(content, str):
        texts = [(content, False)] if content else []
    elif isinstance(content, list):
        texts = [_text(p) for p in content]
    else:
        return None
    for text, injected in texts:
        if text is not None and text.strip() and not injected and text.lstrip()[:1] not in ("/", "?"):
            return text.strip()
    return None


def _text(p: Any) -> tuple[str | None, bool]:
    """``records.part_of``'s Text (text, injected), or (None, False) for any other part."""
    if not isinstance(p, dict):
        return (p, False) if isinstance(p, str) else (None, False)
    for key in ("functionCall", "functionResponse", "inlineData"):
        if key in p and isinstance(p[key], dict):
            return None, False
    if isinstance(p.get("text"), str) and not p.get("thought"):
        return p["text"], p["text"].lstrip().startswith(CONTEXT_TAGS)
    return None, False


def _count(values: list[Any]) -> int:
    """``records.resolve``'s final list, counted as scan counts (``counts``): ids only."""
    order: list[str] = []
    live: set[str] = set()                    # the ids in ``order`` (resolve's ``where``)
    counted: dict[str, bool] = {}
    for obj in values:
        if not isinstance(obj, dict):
            continue
        kind = line_kind(obj)
        if kind == "message":
            mid = str(obj["id"])
            if mid not in live:
                live.add(mid)
                order.append(mid)
            counted[mid] = counts(obj)
        elif kind == "$set" and isinstance(obj["$set"], dict):
            msgs = obj["$set"].get("messages")
            if isinstance(msgs, list):
                order, live = [], set()
                for m in msgs:
                    if isinstance(m, dict) and "id" in m:
                        mid = str(m["id"])
                        if mid not in live:
                            live.add(mid)
                            order.append(mid)
                        counted[mid] = counts(m)
        elif kind == "$rewindTo":
            target = str(obj["$rewindTo"])
            if target in live:
                cut = order.index(target)
                live.difference_update(order[cut:])
                del order[cut:]
    return sum(1 for mid in order if counted[mid])
