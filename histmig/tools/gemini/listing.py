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

from histmig.jsonio.jsonl import parsed_lines
from histmig.jsonio.regular import open_regular_fd
from histmig.tools.gemini.records import CONTEXT_TAGS, counts


# a .jsonl up to this size is read whole and every line parsed once (one orjson call when the client
# wrote it canonically): its row is exact, message count and broken lines included. Past 128 KB the
# Line reader's two 64 KB ends gave no count and cost about three times as much (docs/gemini.md "scan");
# the buffer and its values stay a few MB
WHOLE_READ = 1 << 20


class Facts:
    """What the listing shows: merged metadata, the first prompt, the counted messages, broken lines."""

    __slots__ = ("meta", "prompt", "messages", "broken")

    def __init__(self) -> None:
        self.meta: dict[str, Any] = {}
        self.prompt: str | None = None
        self.messages = 0
        self.broken = 0


def small_facts(path: Any, size: int, fd: int | None = None) -> Facts | None:
    """The facts of a file of ``size`` bytes read whole (from ``fd`` when it is open; closed here);
    None when it holds more than that now."""
    fd = open_regular_fd(path) if fd is None else fd
    try:
        data = os.pread(fd, size + 1, 0)
    finally:
        os.close(fd)
    if len(data) > size:
        return None
    return facts_of_bytes(data)


def facts_of_bytes(data: bytes) -> Facts:
    """One pass over the lines of ``data``, split and judged the way ``jsonl.iter_lines`` and ``Line``
    (``blank``, ``body``, ``obj``) do it (``jsonl.parsed_lines``), each parsed once; what
    ``_head_facts`` and ``resolve`` read of the objects is taken as the line goes by (``resolve``'s
    list as ids only). A ``$set`` without ``messages`` (the client's ``lastUpdated`` line after each
    record) is one ``dict.update``; a ``gemini`` record counts without a look at its content."""
    facts = Facts()
    meta = facts.meta
    # resolve's list as ids only: id -> whether its last version counts, in first-position order (a
    # dict: a known id keeps its place); a $set list starts a new one, a rewind cuts its tail
    listed: dict[str, bool] = {}
    for parsed in parsed_lines(data):
        if parsed is None:
            continue                                          # blank: no record
        obj, error = parsed
        if error is not None:
            facts.broken += 1
            continue
        if not isinstance(obj, dict):
            continue
        if "$set" in obj:
            sets = obj["$set"]
            if not isinstance(sets, dict):
                continue
            if "messages" not in sets:
                meta.update(sets)                             # (the line after each record: lastUpdated)
                continue
            meta.update({k: v for k, v in sets.items() if k != "messages"})
            if isinstance(sets["messages"], list):           # a non-list (broken file) sets no messages
                for m in sets["messages"]:
                    if facts.prompt is None and isinstance(m, dict) and m.get("type") == "user":
                        facts.prompt = prompt_of(m.get("content"))
                listed = {}
                for m in sets["messages"]:
                    if isinstance(m, dict) and "id" in m:
                        listed[str(m["id"])] = counts(m)
        elif "$rewindTo" in obj:
            target = str(obj["$rewindTo"])
            if target in listed:
                keep = list(listed)
                listed = {mid: listed[mid] for mid in keep[:keep.index(target)]}
        elif "id" in obj:
            t = obj.get("type")
            if t == "gemini":
                counted = True
            elif t == "user":
                if facts.prompt is None:
                    facts.prompt = prompt_of(obj.get("content"))
                counted = counts(obj)
            else:
                counted = False
            mid = obj["id"]
            listed[mid if mid.__class__ is str else str(mid)] = counted
        else:
            meta.update(obj)
    facts.messages = sum(listed.values())
    return facts


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
