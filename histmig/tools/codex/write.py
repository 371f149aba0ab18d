"""Write a conversation as a new Codex rollout (docs/specs/codex.md §0.2c, §3-§7, §15.5).

The legacy (non-paginated) layout the real 0.171.0 resumes: a ``session_meta`` first line (fresh
UUIDv7 id, ``source:"cli"``, the configured ``model_provider``, never null), a ``turn_context`` per
user turn, ``response_item`` messages / calls / outputs, and ``event_msg`` ``user_message`` /
``agent_message`` / ``token_count`` so the listing finds a preview and usage survives. The file goes
to ``sessions/YYYY/MM/DD/rollout-<local ts>-<id>.jsonl``; the ``threads`` row is the planner's job.
"""
from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

from histmig import tools as registry
from histmig.tools.codex import provenance
from histmig.tools.codex.calls import CALLS
from histmig.toolkit.convert.calls import Mapped, translate
from histmig.toolkit.convert.common import Target, Written
from histmig.toolkit.convert.flatten import Conversation, Item
from histmig.tools.claude_family import ANTHROPIC
from histmig.core.times import iso_z, parse_ts
from histmig.toolkit.convert.ids import Clock
from histmig.core.model import Reasoning, ToolCall, ToolResult

CODEX_VERSION = "0.171.0"
ZERO = {"input_tokens": 0, "cached_input_tokens": 0, "output_tokens": 0, "reasoning_output_tokens": 0,
        "total_tokens": 0}


def codex_usage(u: dict) -> dict[str, int]:
    inp = u["input"] + u["cached"] + u["cache_write"]
    return {"input_tokens": inp, "cached_input_tokens": u["cached"], "output_tokens": u["output"],
            "reasoning_output_tokens": u["reasoning"], "total_tokens": inp + u["output"]}


def rollout_path(root: Path, sid: str, created: datetime) -> Path:
    """Codex names and files rollouts by *local* time (recorder.rs), 19-character stamp."""
    local = created.astimezone()
    return (Path(root) / "sessions" / local.strftime("%Y/%m/%d")
            / f"rollout-{local.strftime('%Y-%m-%dT%H-%M-%S')}-{sid}.jsonl")


class _Writer:
    def __init__(self, conv: Conversation, t: Target, cwd: str):
        self.conv, self.t, self.cwd = conv, t, cwd
        self.clock = Clock(conv.source.created, t.ids.time())
        self.out = t.sink()
        self.kinds: dict[str, str] = {}           # call id -> "function" | "custom"
        self.total = dict(ZERO)
        self.tokens = 0
        self.turns = 0
        self.model = t.model or "gpt-5.5"
        self.structured = conv.patches
        self.calls = registry.hook(conv.source.format, "calls")     # the source's tool-call vocabulary
        self.answered = conv.answered

    def emit(self, type_: str, payload: dict, ts: str | None) -> None:
        line = {"timestamp": iso_z(self.clock.at(ts)), "type": type_, "payload": payload}
        self.out.write(orjson.dumps(line) + b"\n")

    def turn(self, ts: str | None) -> None:
        self.turns += 1
        self.emit("turn_context", {"cwd": self.cwd, "approval_policy": "on-request",
                                   "sandbox_policy": {"type": "read-only"}, "model": self.model,
                                   "summary": "auto"}, ts)

    def on_user(self, item: Item) -> None:
        self.turn(item.ts)
        self.emit("response_item", {"type": "message", "role": "user",
                                    "content": [{"type": "input_text", "text": item.text}]}, item.ts)
        self.emit("event_msg", {"type": "user_message", "message": item.text, "images": [],
                                "local_images": [], "text_elements": []}, item.ts)

    def on_assistant(self, item: Item, text: str | None = None) -> None:
        if not self.turns:
            self.turn(item.ts)
        text = item.text if text is None else text
        self.emit("event_msg", {"type": "agent_message", "message": text, "phase": None,
                                "memory_citation": None}, item.ts)
        self.emit("response_item", {"type": "message", "role": "assistant",
                                    "content": [{"type": "output_text", "text": text}]}, item.ts)

    def on_reasoning(self, item: Item) -> None:
        p: Reasoning = item.part
        readable = (p.summary or p.text).strip()
        if self.t.keep_reasoning_text and readable:
            self.conv.loss.add("approximated", "reasoning summary carried as plain text")
            self.on_assistant(item, readable)
        elif self.conv.source.format in ANTHROPIC:
            self.conv.loss.add("dropped", "thinking (signature bound to Anthropic)")
        else:
            self.conv.loss.add("dropped", f"reasoning ({self.conv.source.format})")

    def on_call(self, item: Item) -> None:
        call: ToolCall = item.part
        if call.call_id not in self.answered:
            self.conv.loss.add("dropped", "tool call without a result")
            return
        if not self.turns:
            self.turn(item.ts)
        if self.calls is CALLS:
            mapped = Mapped(call.name, call.arguments)
        else:     # through the neutral vocabulary: Codex's from_neutral gives exactly one call
            [mapped] = translate(call, self.calls, CALLS, self.cwd, self.structured.get(call.call_id))
        for cat, kind in mapped.notes:
            self.conv.loss.add(cat, kind)
        if isinstance(mapped.arguments, str):
            self.kinds[call.call_id] = "custom"
            self.emit("response_item", {"type": "custom_tool_call", "status": "completed", "call_id": call.call_id,
                                        "name": mapped.name, "input": mapped.arguments}, item.ts)
        else:
            self.kinds[call.call_id] = "function"
            self.emit("response_item", {"type": "function_call", "name": mapped.name,
                                        "arguments": orjson.dumps(mapped.arguments).decode(),
                                        "call_id": call.call_id}, item.ts)

    def on_result(self, item: Item) -> None:
        res: ToolResult = item.part
        kind = self.kinds.get(res.call_id)
        if kind is None:
            self.conv.loss.add("dropped", "tool result without its call")
            return
        if res.is_error:
            self.conv.loss.add("approximated", "tool error flag (Codex outputs have none)")
        self.emit("response_item", {"type": "custom_tool_call_output" if kind == "custom" else "function_call_output",
                                    "call_id": res.call_id, "output": codex_output(res.output)}, item.ts)

    def on_attachment(self, item: Item) -> None:
        self.conv.loss.add("dropped", "attachment")

    def on_usage(self, item: Item) -> None:
        last = codex_usage(item.usage)
        self.total = {k: self.total[k] + last[k] for k in ZERO}
        self.tokens = self.total["total_tokens"]
        self.emit("event_msg", {"type": "token_count", "info": {"total_token_usage": self.total,
                                                                "last_token_usage": last,
                                                                "model_context_window": None},
                                "rate_limits": None}, item.ts)


def codex_output(output: Any) -> Any:
    """A tool output in Codex form: a string, or input_text / input_image items."""
    if isinstance(output, str):
        return output
    if not isinstance(output, list):
        return "" if output is None else orjson.dumps(output).decode()
    items = []
    for b in output:
        if not isinstance(b, dict):
            continue
        if isinstance(b.get("text"), str):
            items.append({"type": "input_text", "text": b["text"]})
        elif b.get("type") == "image" and isinstance(b.get("source"), dict) and b["source"].get("type") == "base64":
            src = b["source"]
            items.append({"type": "input_image", "image_url": f"data:{src.get('media_type')};base64,{src.get('data')}"})
        elif b.get("type") == "tool_reference":
            items.append({"type": "input_text", "text": f"[tool {b.get('tool_name')}]"})
    return items


def session_meta(conv: Conversation, t: Target, cwd: str, created: datetime) -> dict:
    meta: dict[str, Any] = {"id": t.sid, "timestamp": iso_z(created), "cwd": cwd, "originator": "codex_cli_rs",
                            "cli_version": CODEX_VERSION, "source": "cli", "model_provider": t.provider,
                            "base_instructions": None}
    branch = _git(conv.source)
    if branch:
        meta["git"] = branch
    meta[provenance.KEY] = provenance.marker(t.source_tool, t.source_id, iso_z(Clock(None, t.ids.time()).last))
    return meta


def _git(session: Any) -> dict | None:
    meta = session.meta or {}
    sm = meta.get("session_meta") if isinstance(meta.get("session_meta"), dict) else {}
    if isinstance(sm.get("git"), dict) and sm["git"]:
        return sm["git"]
    return {"branch": meta["gitBranch"]} if isinstance(meta.get("gitBranch"), str) and meta["gitBranch"] else None


def write(conv: Conversation, t: Target) -> Written:
    cwd = os.path.realpath(t.cwd)
    created = parse_ts(conv.source.created) or conv.first_time or Clock(None, t.ids.time()).last
    w = _Writer(conv, t, cwd)
    w.emit("session_meta", session_meta(conv, t, cwd, created), iso_z(created))
    for item in conv.items:
        getattr(w, "on_" + item.kind)(item)
    path = rollout_path(t.root, t.sid, created)
    info = {"created": created.timestamp(), "cwd": cwd, "model": t.model, "tokens_used": w.tokens,
            "git": _git(conv.source) or {}}
    return Written([(path, w.out.result())], t.sid, iso_z(w.clock.last), conv.first_prompt, info)
