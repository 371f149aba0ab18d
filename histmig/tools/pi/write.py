"""Write a conversation as a new Pi session (docs/pi.md, "convert").

``<agent dir>/sessions/--<slug of cwd>--/<ISO time>_<uuidv7>.jsonl``: the ``session`` header, a ``custom``
provenance entry, then one ``message`` entry per user prompt, assistant message and tool result, each the
child of the one before (``parentId``), so the last line is the leaf Pi continues from. Rules Pi needs:

- every assistant message carries ``usage`` (Pi crashes on resume without it), the source's tokens when
  it had them, zeros otherwise;
- ``provider``/``api``/``model`` on assistant messages say where the turn really came from, so Pi never
  replays a signed thinking block to another provider (it sends a thinking block as a thinking block only
  to the provider, api and model that made it; docs/pi.md); a signature is kept only from Anthropic
  sources, reasoning of other providers is dropped (or kept as plain text with ``--keep-reasoning-text``);
- tool calls are Pi's own tools (``bash``, ``read``, ``write``, ``edit``: histmig/tools/pi/calls.py), mapped
  through the neutral vocabulary from the source tool's ``calls`` hook.
"""
from __future__ import annotations

import os
from datetime import datetime
from typing import Any

import orjson

from histmig import __version__
from histmig.core.model import Reasoning, ToolResult
from histmig.core.times import iso_z
from histmig.toolkit.convert.calls import Mapped
from histmig.toolkit.convert.common import Target, Written
from histmig.toolkit.convert.flatten import Conversation, Item
from histmig.toolkit.convert.ids import Clock
from histmig.toolkit.convert.provenance import LINE_TYPE
from histmig.toolkit.convert.writer import ItemWriter
from histmig.tools import hook
from histmig.tools.pi.calls import CALLS
from histmig.tools.pi.layout import pi_slug

SIGNED_SOURCES = ("claude-code", "mini-cc", "manifest")     # thinking signed by Anthropic
ORIGIN = {"codex": ("openai-responses", "openai")}          # source tool -> (api, provider) of its turns
ANTHROPIC_ORIGIN = ("anthropic-messages", "anthropic")


def pi_usage(u: dict | None) -> dict[str, Any]:
    """Canonical usage (histmig/toolkit/convert/flatten.py) in Pi's shape; zeros when there was none."""
    u = u or {}
    inp, out, cr, cw = (int(u.get(k, 0)) for k in ("input", "output", "cached", "cache_write"))
    zero = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}
    return {"input": inp, "output": out, "cacheRead": cr, "cacheWrite": cw, "totalTokens": inp + out + cr + cw,
            "cost": zero}


def result_blocks(output: Any) -> list[dict]:
    """A tool result's output as Pi content: text blocks (and base64 images)."""
    if isinstance(output, str):
        return [{"type": "text", "text": output}]
    if isinstance(output, list):
        out = []
        for b in output:
            if isinstance(b, dict) and isinstance(b.get("text"), str):
                out.append({"type": "text", "text": b["text"]})
            elif isinstance(b, dict) and b.get("type") == "image" and isinstance(b.get("source"), dict) \
                    and b["source"].get("type") == "base64":
                out.append({"type": "image", "data": b["source"].get("data"), "mimeType": b["source"].get("media_type")})
            elif isinstance(b, str):
                out.append({"type": "text", "text": b})
        return out or [{"type": "text", "text": ""}]
    return [{"type": "text", "text": "" if output is None else (output if isinstance(output, str)
                                                              else orjson.dumps(output).decode())}]


def ms(dt: datetime) -> int:
    return int(dt.timestamp() * 1000)


class _Writer(ItemWriter):
    """``issued``: source call id -> [(pi call id, pi tool name)]."""

    REASONING_KEPT = "reasoning carried as unsigned thinking (Pi sends it as text)"

    def __init__(self, conv: Conversation, t: Target, cwd: str):
        super().__init__(conv, source=conv.source.format, source_calls=hook(conv.source.format, "calls"),
                         target_calls=CALLS, cwd=cwd, keep_reasoning_text=t.keep_reasoning_text)
        self.t, self.cwd = t, cwd
        self.api, self.provider = ORIGIN.get(self.source, ANTHROPIC_ORIGIN if self.source in SIGNED_SOURCES
                                             else (self.source, self.source))
        self.clock = Clock(conv.source.created, t.ids.time())
        self.out = t.sink()
        self.taken_ids: set[str] = set()
        self.parent: str | None = None
        self.pending: list[dict] = []      # entries of the current turn (usage may still arrive)
        self.assistant: dict | None = None     # the assistant message being built (in pending)
        self.any = False

    def entry_id(self) -> str:
        while True:
            eid = f"{self.t.ids.bits(32):08x}"
            if eid not in self.taken_ids:
                self.taken_ids.add(eid)
                return eid

    def line(self, obj: dict) -> None:
        self.out.write(orjson.dumps(obj) + b"\n")

    def entry(self, ts: str | None, message: dict | None = None, **fields: Any) -> dict:
        e = {"type": "message" if message is not None else fields.pop("type"), "id": self.entry_id(),
             "parentId": self.parent, "timestamp": iso_z(self.clock.at(ts)), **fields}
        if message is not None:
            e["message"] = message
        self.parent = e["id"]
        return e

    def flush(self) -> None:
        for e in self.pending:
            msg = e.get("message") or {}
            if msg.get("role") == "assistant":
                if any(b["type"] == "toolCall" for b in msg["content"]):
                    msg["stopReason"] = "toolUse"
                msg.setdefault("usage", pi_usage(None))
                msg["usage"] = msg.pop("usage")
                msg["stopReason"] = msg.pop("stopReason")
                msg["timestamp"] = msg.pop("timestamp")
            self.line(e)
        self.pending, self.assistant = [], None

    # -- items --------------------------------------------------------------------------------------
    def current_assistant(self, item: Item) -> dict:
        if self.assistant is None:
            stamp = self.clock.at(item.ts)
            msg = {"role": "assistant", "content": [], "api": self.api, "provider": self.provider,
                   "model": item.model or self.conv.source.model or "unknown", "stopReason": "stop",
                   "timestamp": ms(stamp)}
            self.pending.append(self.entry(item.ts, msg))
            self.assistant = msg
        return self.assistant

    def on_user(self, item: Item) -> None:
        self.flush()
        stamp = self.clock.at(item.ts)
        self.pending.append(self.entry(item.ts, {"role": "user", "content": [{"type": "text", "text": item.text}],
                                                 "timestamp": ms(stamp)}))
        self.any = True

    def on_assistant(self, item: Item) -> None:
        self.current_assistant(item)["content"].append({"type": "text", "text": item.text})
        self.any = True

    def signed(self, item: Item, p: Reasoning) -> bool:
        if self.source in SIGNED_SOURCES and p.signature and not p.redacted:
            self.current_assistant(item)["content"].append({"type": "thinking", "thinking": p.text,
                                                            "thinkingSignature": p.signature})
            return True
        return False

    def reasoning_text(self, item: Item, text: str) -> None:
        self.current_assistant(item)["content"].append({"type": "thinking", "thinking": text})

    def reasoning_dropped(self, p: Reasoning) -> str:
        return super().reasoning_dropped(p) if self.source not in SIGNED_SOURCES else "thinking without a signature"

    def call_holder(self, item: Item) -> dict:
        return self.current_assistant(item)

    def add_call(self, msg: dict, tid: str, mapped: Mapped, item: Item) -> tuple[str, str]:
        msg["content"].append({"type": "toolCall", "id": tid, "name": mapped.name, "arguments": mapped.arguments})
        return tid, mapped.name

    def on_result(self, item: Item) -> None:
        res: ToolResult = item.part
        ids = self.answers(res.call_id, once=False)
        if not ids:
            return
        self.assistant = None       # the next assistant text starts a new message
        stamp = self.clock.at(item.ts)
        for tid, name in ids:
            self.pending.append(self.entry(item.ts, {"role": "toolResult", "toolCallId": tid, "toolName": name,
                                                     "content": result_blocks(res.output),
                                                     "isError": bool(res.is_error), "timestamp": ms(stamp)}))

    def on_usage(self, item: Item) -> None:
        for e in reversed(self.pending):
            msg = e.get("message") or {}
            if msg.get("role") == "assistant":
                msg["usage"] = pi_usage(item.usage)
                return

    def on_attachment(self, item: Item) -> None:
        block = item.part.data
        src = block.get("source") if isinstance(block, dict) else None
        if item.text == "user" and isinstance(src, dict) and src.get("type") == "base64" and self.pending:
            msg = self.pending[-1].get("message") or {}
            if msg.get("role") == "user":
                msg["content"].append({"type": "image", "data": src.get("data"), "mimeType": src.get("media_type")})
                return
        self.conv.loss.add("dropped", "attachment")


def write(conv: Conversation, t: Target) -> Written:
    cwd = os.path.realpath(t.cwd)
    w = _Writer(conv, t, cwd)
    created = w.clock.last
    w.line({"type": "session", "version": 3, "id": t.sid, "timestamp": iso_z(created), "cwd": cwd})
    now = iso_z(Clock(None, t.ids.time()).last)
    w.line(w.entry(None, type="custom", customType=LINE_TYPE,
                   data={"sourceTool": t.source_tool, "sourceSession": t.source_id, "convertedAt": now,
                         "histmig": __version__}))
    w.run()
    name = iso_z(created).replace(":", "-").replace(".", "-") + f"_{t.sid}.jsonl"
    path = t.root / "sessions" / pi_slug(cwd) / name
    return Written([(path, w.out.result())], t.sid, iso_z(w.clock.last) if w.any else None, conv.first_prompt)
