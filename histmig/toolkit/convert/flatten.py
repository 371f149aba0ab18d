"""A session's conversation as a flat list of items, whatever format it came from.

Every writer starts here, so every direction goes through the common model the same way: user and
assistant text, reasoning, tool calls and results in source order, usage attached to the assistant
turn it belongs to. Everything the conversation does not carry is counted in the loss report
(injected context, developer messages, events, unparseable lines).
"""
from __future__ import annotations

from dataclasses import field
from datetime import datetime
from typing import Any, Callable, Iterator

from histmig.core.times import parse_ts
from histmig.toolkit.convert.loss import LossReport
from histmig.toolkit.message_model import message_model
from histmig.core.model import Attachment, Opaque, Reasoning, Record, Session, Text, ToolCall, ToolResult
from histmig.core.valueclass import FACTORY, value

CONVERSATION_KINDS = ("message", "tool_call", "tool_result", "reasoning")
KEEP_RECORDS = 10_000


@value
class Item:
    kind: str                      # user | assistant | reasoning | call | result | attachment | usage
    ts: str | None = None
    text: str = ""
    part: Any = None               # Reasoning / ToolCall / ToolResult / Attachment
    usage: dict | None = None      # canonical usage (see usage_from)
    model: str | None = None
    rec: int = 0                   # index of the source record (parts of one record stay together)

    def __init__(self, kind: str, ts: str | None = None, text: str = "", part: Any = None, usage: dict | None = None,
                 model: str | None = None, rec: int = 0) -> None:
        self.kind = kind
        self.ts = ts
        self.text = text
        self.part = part
        self.usage = usage
        self.model = model
        self.rec = rec


@value
class Conversation:
    """A session's conversation. ``items`` are produced again from the source's records on every
    iteration (never held: a 1 GB session stays on disk); :func:`flatten` does one pass first that
    counts the loss and keeps the few facts writers need before they start (small state only)."""

    source: Session
    loss: LossReport = field(default_factory=LossReport)
    first_prompt: str | None = None          # the title
    first_time: datetime | None = None       # the first item time that parses
    last_ts: str | None = None
    answered: set[str] = field(default_factory=set)            # call ids that have a result
    patches: dict[str, Any] = field(default_factory=dict)      # call id -> Claude's structuredPatch result
    usage_of: Callable[[Record], dict | None] | None = None    # the source adapter's usage from a bookkeeping record
    kept: list[Item] | None = None     # flatten's items, when the records are in memory anyway (a list)

    def __init__(self, source: Session, loss: LossReport = FACTORY, first_prompt: str | None = None,
                 first_time: datetime | None = None, last_ts: str | None = None, answered: set[str] = FACTORY,
                 patches: dict[str, Any] = FACTORY, usage_of: Callable[[Record], dict | None] | None = None,
                 kept: list[Item] | None = None) -> None:
        self.source = source
        self.loss = LossReport() if loss is FACTORY else loss
        self.first_prompt = first_prompt
        self.first_time = first_time
        self.last_ts = last_ts
        self.answered = set() if answered is FACTORY else answered
        self.patches = {} if patches is FACTORY else patches
        self.usage_of = usage_of
        self.kept = kept

    @property
    def items(self) -> Iterator[Item]:
        if self.kept is not None:
            return iter(self.kept)
        return _items(self.source, LossReport(), self.usage_of)     # loss was counted by flatten's pass

    def _note(self, item: Item) -> None:
        if item.kind == "user" and self.first_prompt is None and item.text.strip():
            self.first_prompt = item.text
        if item.ts:
            self.last_ts = item.ts
            if self.first_time is None:
                self.first_time = parse_ts(item.ts)
        if item.kind == "result":
            res: ToolResult = item.part
            self.answered.add(res.call_id)
            s = res.structured
            # only the diff is read later (tools.edit_to_patch); a Read's file content is not kept
            self.patches[res.call_id] = {"structuredPatch": s["structuredPatch"]} \
                if isinstance(s, dict) and "structuredPatch" in s else None


def flatten(session: Session, usage_of: Callable[[Record], dict | None] | None = None) -> Conversation:
    """One pass over the session; ``usage_of`` is the source adapter's ``usage_of`` (token counts a
    tool keeps in records of its own, such as Codex's ``token_count`` events), when it has one."""
    conv = Conversation(session, usage_of=usage_of)
    # a few records already held (a list, not a stream read again from the file): keep their items
    # too, so the writer's pass does not build them a second time
    kept = [] if isinstance(session.records, list) and len(session.records) <= KEEP_RECORDS else None
    for item in _items(session, conv.loss, usage_of):
        conv._note(item)
        if kept is not None:
            kept.append(item)
    conv.kept = kept
    if session.subagents:
        conv.loss.add("dropped", "sub-agent transcript", len(session.subagents))
    return conv


def _items(session: Session, loss: LossReport, usage_of: Callable | None = None) -> Iterator[Item]:
    for n, rec in enumerate(session.records):
        if rec.opaque:
            loss.add("dropped", "unparseable line")
        elif rec.kind in CONVERSATION_KINDS:
            yield from _content(loss, rec, n)
        else:
            yield from _bookkeeping(loss, rec, n, usage_of)


def _content(loss: LossReport, rec: Record, n: int) -> Iterator[Item]:
    model = message_model(rec)
    for p in rec.parts:
        if isinstance(p, Text):
            yield from _text(loss, rec, p, n)
        elif isinstance(p, Reasoning):
            yield Item("reasoning", rec.timestamp, part=p, rec=n, model=model)
        elif isinstance(p, ToolCall):
            yield Item("call", rec.timestamp, part=p, rec=n, model=model)
        elif isinstance(p, ToolResult):
            yield Item("result", rec.timestamp, part=p, rec=n)
        elif isinstance(p, Attachment):
            yield Item("attachment", rec.timestamp, part=p, rec=n,
                       text="user" if rec.role != "assistant" else "assistant")
        elif isinstance(p, Opaque):
            loss.add("dropped", f"unknown content ({p.note or 'opaque'})")
    if rec.usage and rec.role == "assistant":
        yield Item("usage", rec.timestamp, usage=usage_from(rec.usage), rec=n)


def _text(loss: LossReport, rec: Record, p: Text, n: int) -> Iterator[Item]:
    if not p.text.strip():
        return
    if rec.role in ("developer", "system"):
        loss.add("left-out", f"{rec.role} message")
    elif p.injected:
        loss.add("left-out", "injected context")
    elif rec.role in ("user", "assistant"):
        yield Item(rec.role, rec.timestamp, text=p.text, rec=n, model=message_model(rec))
    else:
        loss.add("dropped", f"text with role {rec.role}")


def _bookkeeping(loss: LossReport, rec: Record, n: int, usage_of: Callable | None) -> Iterator[Item]:
    usage = rec.usage or (usage_of(rec) if usage_of is not None else None)
    if usage:
        yield Item("usage", rec.timestamp, usage=usage_from(usage), rec=n)
        return
    if rec.kind == "summary" and any(isinstance(p, Text) and p.text.strip() for p in rec.parts):
        loss.add("not-carried", "summary / compaction record")
        return
    if rec.source_type not in ("blank", "histmig-provenance"):
        loss.add("not-carried", f"{rec.source_type or rec.kind}")


def usage_from(u: dict) -> dict[str, int]:
    """Canonical usage: ``input`` (uncached), ``cached`` (cache reads), ``cache_write``, ``output``,
    ``reasoning`` (part of output). Accepts Codex token_count usage, Anthropic usage, Pi's and Gemini
    ``usageMetadata`` (whose candidates count leaves the thoughts out)."""
    def i(key: str) -> int:
        v = u.get(key)
        return v if isinstance(v, int) and v >= 0 else 0
    if "promptTokenCount" in u or "candidatesTokenCount" in u:    # generateContent usageMetadata
        cached, thoughts = i("cachedContentTokenCount"), i("thoughtsTokenCount")
        return {"input": max(i("promptTokenCount") - cached, 0), "cached": cached, "cache_write": 0,
                "output": i("candidatesTokenCount") + thoughts, "reasoning": thoughts}
    if "totalTokens" in u or "cacheRead" in u:      # Pi's assistant usage (docs/pi.md)
        return {"input": i("input"), "cached": i("cacheRead"), "cache_write": i("cacheWrite"),
                "output": i("output"), "reasoning": 0}
    if "cached_input_tokens" in u or "total_tokens" in u or "reasoning_output_tokens" in u:
        cached = i("cached_input_tokens")
        return {"input": max(i("input_tokens") - cached, 0), "cached": cached, "cache_write": 0,
                "output": i("output_tokens"), "reasoning": i("reasoning_output_tokens")}
    return {"input": i("input_tokens"), "cached": i("cache_read_input_tokens"),
            "cache_write": i("cache_creation_input_tokens"), "output": i("output_tokens"), "reasoning": 0}
