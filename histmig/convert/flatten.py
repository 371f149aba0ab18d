"""A session's conversation as a flat list of items, whatever format it came from.

Every writer starts here, so every direction goes through the common model the same way: user and
assistant text, reasoning, tool calls and results in source order, usage attached to the assistant
turn it belongs to. Everything the conversation does not carry is counted in the loss report
(injected context, developer messages, events, unparseable lines).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from histmig.convert.loss import LossReport
from histmig.formats.anthropic import message_model
from histmig.model import Attachment, Opaque, Reasoning, Record, Session, Text, ToolCall, ToolResult

CONVERSATION_KINDS = ("message", "tool_call", "tool_result", "reasoning")
ANTHROPIC = ("claude-code", "mini-cc", "manifest")   # formats whose history is Anthropic Messages


@dataclass
class Item:
    kind: str                      # user | assistant | reasoning | call | result | attachment | usage
    ts: str | None = None
    text: str = ""
    part: Any = None               # Reasoning / ToolCall / ToolResult / Attachment
    usage: dict | None = None      # canonical usage (see usage_from)
    model: str | None = None
    rec: int = 0                   # index of the source record (parts of one record stay together)


@dataclass
class Conversation:
    source: Session
    items: list[Item] = field(default_factory=list)
    loss: LossReport = field(default_factory=LossReport)

    def prompts(self) -> list[str]:
        return [i.text for i in self.items if i.kind == "user" and i.text.strip()]

    def last_ts(self) -> str | None:
        return next((i.ts for i in reversed(self.items) if i.ts), None)


def flatten(session: Session) -> Conversation:
    conv = Conversation(session)
    for n, rec in enumerate(session.records):
        if rec.opaque:
            conv.loss.add("dropped", "unparseable line")
        elif rec.kind in CONVERSATION_KINDS:
            _content(conv, rec, n)
        else:
            _bookkeeping(conv, rec, n)
    if session.subagents:
        conv.loss.add("dropped", "sub-agent transcript", len(session.subagents))
    return conv


def _content(conv: Conversation, rec: Record, n: int) -> None:
    model = message_model(rec)
    for p in rec.parts:
        if isinstance(p, Text):
            _text(conv, rec, p, n)
        elif isinstance(p, Reasoning):
            conv.items.append(Item("reasoning", rec.timestamp, part=p, rec=n, model=model))
        elif isinstance(p, ToolCall):
            conv.items.append(Item("call", rec.timestamp, part=p, rec=n, model=model))
        elif isinstance(p, ToolResult):
            conv.items.append(Item("result", rec.timestamp, part=p, rec=n))
        elif isinstance(p, Attachment):
            conv.items.append(Item("attachment", rec.timestamp, part=p, rec=n,
                                   text="user" if rec.role != "assistant" else "assistant"))
        elif isinstance(p, Opaque):
            conv.loss.add("dropped", f"unknown content ({p.note or 'opaque'})")
    if rec.usage and rec.role == "assistant":
        conv.items.append(Item("usage", rec.timestamp, usage=usage_from(rec.usage), rec=n))


def _text(conv: Conversation, rec: Record, p: Text, n: int) -> None:
    if not p.text.strip():
        return
    if rec.role in ("developer", "system"):
        conv.loss.add("left-out", f"{rec.role} message")
    elif p.injected:
        conv.loss.add("left-out", "injected context")
    elif rec.role in ("user", "assistant"):
        conv.items.append(Item(rec.role, rec.timestamp, text=p.text, rec=n, model=message_model(rec)))
    else:
        conv.loss.add("dropped", f"text with role {rec.role}")


def _bookkeeping(conv: Conversation, rec: Record, n: int) -> None:
    usage = rec.usage or _codex_token_count(rec)
    if usage:
        conv.items.append(Item("usage", rec.timestamp, usage=usage_from(usage), rec=n))
        return
    if rec.kind == "summary" and any(isinstance(p, Text) and p.text.strip() for p in rec.parts):
        conv.loss.add("not-carried", "summary / compaction record")
        return
    if rec.source_type not in ("blank", "histmig-provenance"):
        conv.loss.add("not-carried", f"{rec.source_type or rec.kind}")


def _codex_token_count(rec: Record) -> dict | None:
    env = rec.extra.get("envelope") if isinstance(rec.extra, dict) else None
    payload = env.get("payload") if isinstance(env, dict) else None
    if isinstance(payload, dict) and payload.get("type") == "token_count":
        info = payload.get("info")
        if isinstance(info, dict) and isinstance(info.get("last_token_usage"), dict):
            return info["last_token_usage"]
    return None


def usage_from(u: dict) -> dict[str, int]:
    """Canonical usage: ``input`` (uncached), ``cached`` (cache reads), ``cache_write``, ``output``,
    ``reasoning`` (part of output). Accepts Codex token_count usage and Anthropic usage."""
    def i(key: str) -> int:
        v = u.get(key)
        return v if isinstance(v, int) and v >= 0 else 0
    if "cached_input_tokens" in u or "total_tokens" in u or "reasoning_output_tokens" in u:
        cached = i("cached_input_tokens")
        return {"input": max(i("input_tokens") - cached, 0), "cached": cached, "cache_write": 0,
                "output": i("output_tokens"), "reasoning": i("reasoning_output_tokens")}
    return {"input": i("input_tokens"), "cached": i("cache_read_input_tokens"),
            "cache_write": i("cache_creation_input_tokens"), "output": i("output_tokens"), "reasoning": 0}
