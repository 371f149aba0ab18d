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

from histmig.core.model import ToolResult
from histmig.core.times import iso_z
from histmig import tools as registry
from histmig.toolkit.convert.calls import Mapped
from histmig.toolkit.convert.common import Target, Written
from histmig.toolkit.convert.flatten import Conversation, Item
from histmig.toolkit.convert.writer import TargetWriter, args_dict, result_text
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


class _Writer(TargetWriter):
    """Records are written in order; only the current assistant record is held (its usage comes last).
    ``issued``: source call id -> [(qwen call id, qwen name)]."""

    ANSWERED_ONLY = True

    def __init__(self, conv: Conversation, t: Target):
        super().__init__(conv, t, source_calls=registry.hook(t.source_tool, "calls"), target_calls=CALLS)
        self.out = t.sink()
        self.parent: str | None = None
        self.pending: dict[str, Any] | None = None          # the assistant record being built
        self.first = True
        self.any = False

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
            rec[MARK] = self.provenance()
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

    def on_user(self, item: Item) -> None:
        self.flush()
        self.emit(self.record("user", item.ts, {"role": "user", "parts": [{"text": item.text}]}))

    def on_assistant(self, item: Item) -> None:
        self.assistant(item)["message"]["parts"].append({"text": item.text})

    def reasoning_text(self, item: Item, text: str) -> None:
        self.assistant(item)["message"]["parts"].append({"text": text})

    def call_holder(self, item: Item) -> dict[str, Any]:
        return self.assistant(item)

    def add_call(self, rec: dict[str, Any], cid: str, mapped: Mapped, item: Item) -> tuple[str, str]:
        rec["message"]["parts"].append({"functionCall": {"id": cid, "name": mapped.name, "args": args_dict(mapped.arguments)}})
        return cid, mapped.name

    def on_result(self, item: Item) -> None:
        res: ToolResult = item.part
        issued = self.answers(res.call_id)
        if not issued:
            return
        self.flush()
        status = "error" if res.is_error else "success"
        for cid, name in issued:
            part = {"functionResponse": {"id": cid, "name": name, "response": {"output": result_text(res.output)}}}
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
