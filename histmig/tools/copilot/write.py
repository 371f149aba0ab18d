"""Write a conversation as a new Copilot CLI session (docs/copilot.md, "convert").

Native files, not the client's ``copilot sessions import``: the client resumes a hand-written
``session-state/<uuid>/events.jsonl`` + ``workspace.yaml`` by id with no index row (measured with 1.0.102,
tests/e2e/test_copilot_e2e.py), and the native form keeps what the import format re-mints (tool-call ids,
turn ids, every event's time) and goes through histmig's journaled apply path like every other write.

Events as the client writes them: ``{type, data, id, timestamp, parentId}`` chained by ``parentId``;
``session.start`` (cwd), then per prompt ``user.message``, ``assistant.turn_start``, ``assistant.message``
(text and ``toolRequests``), ``tool.execution_start`` / ``tool.execution_complete`` per call,
``assistant.turn_end``. Every call is answered before the next prompt (unanswered calls and orphan
results are dropped and reported); calls use Copilot's tool names (tools/copilot/calls.py). Reasoning is
never replayed to another provider: a signature or encrypted reasoning is bound to its issuer, so it is
dropped, or carried as plain text with ``--keep-reasoning-text``. The first event carries
``histmigProvenance`` so converting again finds the copy.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from histmig import tools as registry
from histmig.core.model import ToolResult
from histmig.core.times import iso_z
from histmig.toolkit.convert.calls import Mapped
from histmig.toolkit.convert.common import Target, Written
from histmig.toolkit.convert.flatten import Conversation, Item
from histmig.toolkit.convert.writer import TargetWriter, args_dict, result_text
from histmig.tools.copilot import workspace
from histmig.tools.copilot.calls import CALLS

MARK = "histmigProvenance"
VERSION = "1.0.102"      # the client version the events imitate (tests/e2e/versions.py)


class _Writer(TargetWriter):
    """Events are written in order; only the current assistant message is held (its calls come with it).
    ``issued``: source call id -> [(copilot call id, copilot name)]."""

    ANSWERED_ONLY = True

    def __init__(self, conv: Conversation, t: Target):
        super().__init__(conv, t, source_calls=registry.hook(t.source_tool, "calls"), target_calls=CALLS)
        self.out = t.sink()
        self.parent: str | None = None
        self.pending: dict[str, Any] | None = None           # the assistant.message being built
        self.turn = -1
        self.in_turn = False
        self.model = conv.source.model or t.model
        self.start = iso_z(self.clock.at(conv.source.created))

    def event(self, kind: str, ts: str | None, data: dict[str, Any]) -> dict[str, Any]:
        eid = self.t.ids.uuid4()
        ev = {"type": kind, "data": data, "id": eid, "timestamp": iso_z(self.clock.at(ts)), "parentId": self.parent}
        self.parent = eid
        return ev

    def emit(self, ev: dict[str, Any]) -> None:
        self.out.write(orjson.dumps(ev) + b"\n")

    def flush(self) -> None:
        if self.pending is not None:
            msg, self.pending = self.pending, None
            self.emit(msg)
            for req in msg["data"]["toolRequests"]:
                self.emit(self.event("tool.execution_start", msg["timestamp"], {
                    "toolCallId": req["toolCallId"], "toolName": req["name"], "arguments": req["arguments"],
                    "turnId": str(self.turn)}))

    def end_turn(self) -> None:
        self.flush()
        if self.in_turn:
            self.emit(self.event("assistant.turn_end", None, {"turnId": str(self.turn)}))
            self.in_turn = False

    def assistant(self, item: Item) -> dict[str, Any]:
        if self.pending is None:
            if not self.in_turn:
                self.turn += 1
                self.in_turn = True
                self.emit(self.event("assistant.turn_start", item.ts, {"turnId": str(self.turn)}))
            data: dict[str, Any] = {"messageId": self.t.ids.uuid4(), "content": "", "toolRequests": []}
            if item.model or self.model:
                data["model"] = item.model or self.model
            self.pending = self.event("assistant.message", item.ts, data)
        return self.pending

    def run(self) -> None:
        start = self.event("session.start", self.conv.source.created, {
            "sessionId": self.t.sid, "version": 1, "producer": "copilot-agent", "copilotVersion": VERSION,
            "startTime": self.start, "context": {"cwd": self.cwd}})
        start[MARK] = self.provenance()
        self.emit(start)
        self.items()
        self.end_turn()

    def on_user(self, item: Item) -> None:
        self.end_turn()
        self.turn = -1
        self.emit(self.event("user.message", item.ts, {"content": item.text, "messageId": self.t.ids.uuid4()}))

    def on_assistant(self, item: Item) -> None:
        data = self.assistant(item)["data"]
        if data["toolRequests"]:          # text after a call starts the next message, as the client writes it
            self.flush()
            data = self.assistant(item)["data"]
        data["content"] = data["content"] + ("\n\n" if data["content"] else "") + item.text

    def reasoning_text(self, item: Item, text: str) -> None:
        self.on_assistant(Item("assistant", item.ts, text=text, model=item.model))

    def call_holder(self, item: Item) -> dict[str, Any]:
        return self.assistant(item)["data"]

    def add_call(self, data: dict[str, Any], cid: str, mapped: Mapped, item: Item) -> tuple[str, str]:
        data["toolRequests"].append({"toolCallId": cid, "name": mapped.name, "arguments": args_dict(mapped.arguments),
                                     "type": "function"})
        return cid, mapped.name

    def on_result(self, item: Item) -> None:
        res: ToolResult = item.part
        issued = self.answers(res.call_id)
        if not issued:
            return
        self.flush()
        for cid, _name in issued:
            data: dict[str, Any] = {"toolCallId": cid, "turnId": str(self.turn), "success": not res.is_error,
                                    "result": {"content": result_text(res.output)}}
            if res.is_error:
                data["error"] = {"message": result_text(res.output)}
            self.emit(self.event("tool.execution_complete", item.ts, data))
        if self.in_turn:                  # the model's next request is a new turn of the same prompt
            self.emit(self.event("assistant.turn_end", None, {"turnId": str(self.turn)}))
            self.in_turn = False

    def on_attachment(self, item: Item) -> None:
        self.conv.loss.add("dropped", "attachment")

    def on_usage(self, item: Item) -> None:
        pass                              # the client's usage records are per API call: none to claim


def folder(root: Path, sid: str) -> Path:
    return Path(root) / "session-state" / sid


def write(conv: Conversation, t: Target) -> Written:
    w = _Writer(conv, t)
    w.run()
    last = iso_z(w.clock.last)
    title = (conv.first_prompt or "").strip().splitlines()[0][:80] if conv.first_prompt else None
    ws = {"id": t.sid, "cwd": w.cwd, "client_name": "histmig", "name": title or "converted session",
          "user_named": False, "summary_count": 0, "fork_count": 0, "created_at": w.start, "updated_at": last}
    d = folder(t.root, t.sid)
    return Written([(d / "events.jsonl", w.out.result()), (d / "workspace.yaml", workspace.dump(ws))],
                   t.sid, last, conv.first_prompt)
