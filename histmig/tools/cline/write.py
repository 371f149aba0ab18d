"""Write a conversation as a new Cline CLI session (docs/cline.md).

Two files under ``<Cline home>/data/sessions/<sid>/``: ``<sid>.messages.json`` (``{version, updated_at,
agent, sessionId, messages}``) and the manifest ``<sid>.json`` (``cwd``, ``provider``, ``model``,
``status: completed``, ``metadata.title``, ``messages_path`` absolute). No index-database row: Cline
3.0.65 lists a session from its two files and adds the row itself when it is resumed (verified by the
lab, /work/shared/specs/agents.md section 5, and by tests/e2e/test_cline_e2e.py).

Rules of the history Cline replays as Chat Completions: every ``tool_use`` is answered by a
``tool_result`` in the next user message before the next prompt (unanswered calls and orphan results are
dropped and reported); each ``tool_result`` carries ``name`` (without it resume fails with "Invalid
input") and list content ``[{query, result, success}]`` as Cline's own tools write it; user text is
wrapped as ``<user_input mode="act">`` like Cline's. Tool calls use Cline's tool names and argument
shapes (tools/cline/calls.py). Reasoning is never replayed to another provider: dropped, or carried as
plain text with ``--keep-reasoning-text``. The manifest's ``metadata.histmigProvenance`` records the
source, so converting again finds the copy (tools/cline/provenance.py).

Both files are whole-file JSON (Cline's format), yet the messages file is never held: each message goes
to a sink as it is finished (``JSON.stringify(doc, null, 2)``'s bytes, indented as the array's element),
and its header, which names the last message's time (``updated_at``), is written in front of them
once the run is over (``Sink.extend``).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from histmig import tools as registry
from histmig.core.model import ToolResult
from histmig.core.times import iso_z
from histmig.toolkit.convert import writer
from histmig.toolkit.convert.calls import Mapped
from histmig.toolkit.convert.common import Target, Written
from histmig.toolkit.convert.flatten import Conversation, Item
from histmig.toolkit.convert.ids import Clock
from histmig.toolkit.convert.writer import args_dict
from histmig.tools.cline.adapter import dump
from histmig.tools.cline.calls import CALLS

MARK = "histmigProvenance"
_ALNUM = "abcdefghijklmnopqrstuvwxyz0123456789"


def new_id(ids: Any) -> str:
    """``<epoch ms>_<5 [a-z0-9]>``, the shape Cline mints."""
    return f"{int(ids.time() * 1000)}_" + "".join(_ALNUM[ids.bits(6) % 36] for _ in range(5))


def metrics(u: dict | None) -> dict[str, int]:
    u = u or {}
    return {"inputTokens": u.get("input", 0), "outputTokens": u.get("output", 0),
            "cacheReadTokens": u.get("cached", 0), "cacheWriteTokens": u.get("cache_write", 0)}


def result_text(output: Any) -> str:
    return writer.result_text(output, lambda o: json.dumps(o, ensure_ascii=False))


def ms(clock: Clock, ts: str | None) -> int:
    return int(clock.at(ts).timestamp() * 1000)


class _Writer(writer.TargetWriter):
    """``issued``: source call id -> [(cline call id, the mapped call)]."""

    ANSWERED_ONLY = True

    def __init__(self, conv: Conversation, t: Target):
        super().__init__(conv, t, source_calls=registry.hook(t.source_tool, "calls"), target_calls=CALLS)
        self.out = t.sink()                                  # the messages array's elements, in order
        self.count = 0
        self.pending: dict[str, Any] | None = None           # the assistant message being built
        self.results: dict[str, Any] | None = None           # the user message of tool results being built
        self.model = t.model or conv.source.model

    def emit(self, msg: dict[str, Any]) -> None:
        """One finished message as an element of ``messages`` (level 2 of the document: 4 spaces)."""
        self.out.write((b",\n    " if self.count else b"    ") + dump(msg).replace(b"\n", b"\n    "))
        self.count += 1

    def flush(self) -> None:
        for msg in (self.pending, self.results):
            if msg is not None and msg["content"]:
                self.emit(msg)
        self.pending = self.results = None

    def message(self, role: str, ts: str | None) -> dict[str, Any]:
        return {"id": self.t.ids.uuid4(), "role": role, "content": [], "ts": ms(self.clock, ts)}

    def assistant(self, item: Item) -> dict[str, Any]:
        if self.results is not None:
            self.flush()
        if self.pending is None:
            self.pending = self.message("assistant", item.ts)
            model = item.model or self.model
            if model:
                self.pending["modelInfo"] = {"id": model, "provider": self.conv.source.provider or self.t.source_tool}
        return self.pending

    def on_user(self, item: Item) -> None:
        self.flush()
        msg = self.message("user", item.ts)
        msg["content"].append({"type": "text", "text": f'<user_input mode="act">{item.text}</user_input>'})
        self.emit(msg)

    def on_assistant(self, item: Item) -> None:
        self.assistant(item)["content"].append({"type": "text", "text": item.text})

    def reasoning_text(self, item: Item, text: str) -> None:
        self.assistant(item)["content"].append({"type": "text", "text": text})

    def call_holder(self, item: Item) -> dict[str, Any]:
        return self.assistant(item)

    def add_call(self, msg: dict[str, Any], cid: str, mapped: Mapped, item: Item) -> tuple[str, Mapped]:
        msg["content"].append({"type": "tool_use", "id": cid, "name": mapped.name, "input": args_dict(mapped.arguments)})
        return cid, mapped

    def on_result(self, item: Item) -> None:
        res: ToolResult = item.part
        issued = self.answers(res.call_id)
        if not issued:
            return
        if self.pending is not None:
            if self.pending["content"]:
                self.emit(self.pending)
            self.pending = None
        if self.results is None:
            self.results = self.message("user", item.ts)
        text = result_text(res.output)
        for cid, mapped in issued:
            args = mapped.arguments if isinstance(mapped.arguments, dict) else {}
            query = (args.get("commands") or [""])[0] if mapped.name == "run_commands" else args.get("path", "")
            self.results["content"].append({"type": "tool_result", "tool_use_id": cid, "name": mapped.name,
                                            "content": [{"query": query if isinstance(query, str) else "",
                                                         "result": text, "success": not res.is_error}]})

    def on_attachment(self, item: Item) -> None:
        self.conv.loss.add("dropped", "attachment")

    def on_usage(self, item: Item) -> None:
        if self.pending is not None:
            self.pending["metrics"] = metrics(item.usage)


def _dump(obj: Any) -> bytes:
    return json.dumps(obj, ensure_ascii=False, indent=2).encode() + b"\n"


def write(conv: Conversation, t: Target) -> Written:
    w = _Writer(conv, t)
    w.run()
    folder = Path(t.root) / "data" / "sessions" / t.sid
    mpath = folder / f"{t.sid}.messages.json"
    first = iso_z(w.clock.at(conv.source.created)) if w.count else iso_z(Clock(None, t.ids.time()).last)
    last = iso_z(w.clock.last) if w.count else first
    doc = _dump({"version": 1, "updated_at": last, "agent": "lead", "sessionId": t.sid, "messages": []})
    out = t.sink()
    if w.count:          # json.dumps(doc, indent=2) of the whole document: ``"messages": [\n`` elements ``\n  ]\n}``
        out.write(doc[:-len(b"]\n}\n")] + b"\n")
        out.extend(w.out)
        out.write(b"\n  ]\n}\n")
    else:
        out.write(doc)
        w.out.discard()
    title = conv.first_prompt
    mark = w.provenance()
    manifest = {"version": 1, "session_id": t.sid, "source": "cli", "pid": 0, "started_at": first, "ended_at": last,
                "exit_code": 0, "status": "completed", "interactive": False,
                "provider": "openai-compatible", "model": w.model or "", "cwd": w.cwd, "workspace_root": w.cwd,
                "enable_tools": True, "enable_spawn": True, "enable_teams": True,
                "prompt": f'<user_input mode="act">{title or ""}</user_input>',
                "metadata": {"title": (title or "").strip()[:200], "source": "cli", MARK: mark},
                "messages_path": str(mpath)}
    files = [(folder / f"{t.sid}.json", _dump(manifest)), (mpath, out.result())]
    return Written(files, t.sid, last if w.count else None, title)
