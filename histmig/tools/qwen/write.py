"""Write a conversation as a new Qwen Code session (docs/qwen.md).

``<QWEN home>/projects/<qwen_slug(cwd)>/chats/<uuid4>.jsonl``, records as Qwen 0.24.4 writes them: a
``uuid``/``parentUuid`` chain, ``sessionId``, ``timestamp`` (``toISOString``), ``type``, ``cwd`` (Qwen
lists a session only when the folder name *and* the sha256 of the first record's cwd match the project
root, so both come from the realpath of the cwd), ``message {role: user|model, parts}``; assistant
records carry ``model`` and ``usageMetadata``; each tool result is a ``tool_result`` record with a
``functionResponse`` part and ``toolCallResult {callId, status}``.

Rules of the history Qwen sends back as OpenAI Chat Completions: every ``functionCall`` is answered by
a ``functionResponse`` before the next prompt (unanswered calls and orphan results are dropped and
reported); call ids are unique; tool calls use Qwen's own tool names and argument shapes (source ->
neutral -> Qwen through each tool's ``calls`` hook; tools/qwen/calls.py). Reasoning is never replayed
to another provider: a thinking signature (Claude) or encrypted reasoning (Codex) is bound to its
issuer, so it is dropped, or carried as plain text with ``--keep-reasoning-text``. The first record also
carries ``histmigProvenance`` (Qwen ignores keys it does not know), so converting again finds the copy.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson

from histmig.core.model import Reasoning, ToolCall, ToolResult
from histmig.core.times import iso_z
from histmig import tools as registry
from histmig.toolkit.convert import provenance
from histmig.toolkit.convert.calls import map_call, safe_tool_id
from histmig.toolkit.convert.common import Target, Written
from histmig.toolkit.convert.flatten import Conversation, Item
from histmig.toolkit.convert.ids import Clock
from histmig.tools.qwen.adapter import qwen_slug
from histmig.tools.qwen.calls import CALLS

MARK = "histmigProvenance"


def usage_metadata(u: dict | None) -> dict[str, int]:
    """Gemini-style ``usageMetadata`` from canonical usage (toolkit/convert/flatten.py ``usage_from``)."""
    u = u or {}
    prompt = u.get("input", 0) + u.get("cached", 0) + u.get("cache_write", 0)
    thoughts = u.get("reasoning", 0)
    out = max(u.get("output", 0) - thoughts, 0)
    return {"promptTokenCount": prompt, "candidatesTokenCount": out, "thoughtsTokenCount": thoughts,
            "totalTokenCount": prompt + out + thoughts, "cachedContentTokenCount": u.get("cached", 0)}


def result_output(output: Any) -> str:
    if isinstance(output, str):
        return output
    if isinstance(output, list):
        return "\n".join(b.get("text", "") for b in output if isinstance(b, dict) and isinstance(b.get("text"), str))
    return "" if output is None else orjson.dumps(output).decode()


class _Writer:
    """Records are written in order; only the current assistant record is held (its usage comes last)."""

    def __init__(self, conv: Conversation, t: Target):
        self.conv, self.t, self.out = conv, t, t.sink()
        self.cwd = os.path.realpath(t.cwd)
        self.clock = Clock(conv.source.created, t.ids.time())
        self.parent: str | None = None
        self.pending: dict[str, Any] | None = None          # the assistant record being built
        self.issued: dict[str, list[tuple[str, str]]] = {}   # source call id -> [(qwen call id, qwen name)]
        self.taken: set[str] = set()
        self.first = True
        self.any = False
        self.source_calls = registry.hook(t.source_tool, "calls")    # the source's tool-call vocabulary

    def record(self, kind: str, ts: str | None, message: dict | None, **extra: Any) -> dict[str, Any]:
        uid = self.t.ids.uuid4()
        rec: dict[str, Any] = {"uuid": uid, "parentUuid": self.parent, "sessionId": self.t.sid,
                               "timestamp": iso_z(self.clock.at(ts)), "type": kind, "cwd": self.cwd}
        if message is not None:
            rec["message"] = message
        rec.update(extra)
        self.parent = uid
        return rec

    def emit(self, rec: dict[str, Any]) -> None:
        if self.first:
            rec[MARK] = provenance.line_marker(self.t.source_tool, self.t.source_id,
                                               iso_z(Clock(None, self.t.ids.time()).last))
            del rec[MARK]["type"]
            self.first = False
        self.out.write(orjson.dumps(rec) + b"\n")
        self.any = True

    def flush(self) -> None:
        if self.pending is not None:
            if self.pending["message"]["parts"]:
                self.emit(self.pending)
            self.pending = None

    def assistant(self, item: Item) -> dict[str, Any]:
        if self.pending is None:
            self.pending = self.record("assistant", item.ts, {"role": "model", "parts": []})
            model = item.model or self.conv.source.model or self.t.model
            if model:
                self.pending["model"] = model
        return self.pending

    def run(self) -> None:
        for item in self.conv.items:
            getattr(self, "on_" + item.kind)(item)
        self.flush()

    def on_user(self, item: Item) -> None:
        self.flush()
        self.emit(self.record("user", item.ts, {"role": "user", "parts": [{"text": item.text}]}))

    def on_assistant(self, item: Item) -> None:
        self.assistant(item)["message"]["parts"].append({"text": item.text})

    def on_reasoning(self, item: Item) -> None:
        p: Reasoning = item.part
        readable = (p.summary or p.text).strip()
        if self.t.keep_reasoning_text and readable:
            self.assistant(item)["message"]["parts"].append({"text": readable})
            self.conv.loss.add("approximated", "reasoning carried as plain text")
        else:
            self.conv.loss.add("dropped", f"reasoning ({self.t.source_tool}: bound to its provider)")

    def on_call(self, item: Item) -> None:
        call: ToolCall = item.part
        if call.call_id not in self.conv.answered:
            self.conv.loss.add("dropped", "tool call without a result")
            return
        rec = self.assistant(item)
        for k, mapped in enumerate(self._map(call)):
            for cat, kind in mapped.notes:
                self.conv.loss.add(cat, kind)
            cid = safe_tool_id(call.call_id + (f"_{k + 1}" if k else ""), self.taken, f"call_{len(self.taken)}")
            self.issued.setdefault(call.call_id, []).append((cid, mapped.name))
            args = mapped.arguments if isinstance(mapped.arguments, dict) else {"input": mapped.arguments}
            rec["message"]["parts"].append({"functionCall": {"id": cid, "name": mapped.name, "args": args}})

    def _map(self, call: ToolCall) -> list:
        """The call in Qwen's schema: through the neutral vocabulary (toolkit/convert/calls.py), or as it is
        when the source already speaks Qwen's."""
        return map_call(call, self.source_calls, CALLS, self.cwd, self.conv.patches.get(call.call_id))

    def on_result(self, item: Item) -> None:
        res: ToolResult = item.part
        issued = self.issued.pop(res.call_id, None)
        if not issued:
            self.conv.loss.add("dropped", "tool result without its call")
            return
        self.flush()
        status = "error" if res.is_error else "success"
        for cid, name in issued:
            part = {"functionResponse": {"id": cid, "name": name, "response": {"output": result_output(res.output)}}}
            self.emit(self.record("tool_result", item.ts, {"role": "user", "parts": [part]},
                                  toolCallResult={"callId": cid, "status": status}))

    def on_attachment(self, item: Item) -> None:
        self.conv.loss.add("dropped", "attachment")

    def on_usage(self, item: Item) -> None:
        if self.pending is not None:
            self.pending["usageMetadata"] = usage_metadata(item.usage)


def folder(root: Path, cwd: str) -> Path:
    return Path(root) / "projects" / qwen_slug(os.path.realpath(cwd)) / "chats"


def write(conv: Conversation, t: Target) -> Written:
    w = _Writer(conv, t)
    w.run()
    path = folder(t.root, t.cwd) / f"{t.sid}.jsonl"
    return Written([(path, w.out.result())], t.sid, iso_z(w.clock.last) if w.any else None, conv.first_prompt)
