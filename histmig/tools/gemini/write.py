"""Write a conversation as a new Gemini CLI session (docs/specs/gemini.md §8, §4, §6, §10).

``<gemini>/tmp/<slug>/chats/session-<minute>-<id8>.jsonl``: a metadata line, then one record per
message, as 0.61.0 writes them. What the import recipe and the measurements require:

- ``lastUpdated`` is the conversion time (now), never the source's: the client deletes sessions
  whose ``lastUpdated`` is past its retention (30 days by default) at its next start (§4);
- the file name carries the conversion minute and the new id's first 8 characters, which no other
  file of the folder shares (a shared short id gets both deleted, §6: the ids are UUIDv4 and the
  planner checks the folder);
- a tool result is stored once, in its call's ``toolCalls[].result`` (the client's own second copy as
  a ``user`` ``functionResponse`` record makes a resume send it twice, §10);
- tool calls use Gemini's own tools and parameters (calls.py); reasoning is left out unless
  ``--keep-reasoning-text`` (the client replays ``thoughts`` to the model as thought parts).

The project is found by the registry or a ``.project_root`` marker naming the cwd; a project Gemini has
never seen gets a new slug folder with its ``tmp`` marker (the client adopts it and registers it, §1).
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import orjson

from histmig import tools as registry
from histmig.core.diagnostics import HistmigError
from histmig.core.model import Attachment, Reasoning, ToolResult
from histmig.core.plan import CreateFile
from histmig.core.times import iso_z
from histmig.toolkit.convert import provenance
from histmig.toolkit.convert.common import Target, Written
from histmig.toolkit.convert.flatten import Conversation, Item
from histmig.toolkit.convert.ids import Clock
from histmig.tools.gemini import files
from histmig.toolkit.convert.calls import Mapped
from histmig.toolkit.convert.writer import ItemWriter, result_text
from histmig.tools.gemini.calls import CALLS


project_slug = files.project_slug      # moved to files.py: unpack uses it without loading the writer


class _Writer(ItemWriter):
    """``issued``: source call id -> its ``toolCalls`` entries (in the model record being built)."""

    REASONING_KEPT = "reasoning summary carried as thought text"

    def __init__(self, conv: Conversation, t: Target, out: Any):
        # Gemini to Gemini: copied; else through the neutral vocabulary (toolkit/convert/calls.py)
        super().__init__(conv, source=conv.source.format, source_calls=registry.hook(conv.source.format, "calls"),
                         target_calls=CALLS, cwd=conv.source.cwd, keep_reasoning_text=t.keep_reasoning_text)
        self.t, self.out = t, out
        self.clock = Clock(conv.source.created, t.ids.time())
        self.user: dict | None = None
        self.model: dict | None = None        # the gemini record being built
        self.any = False

    # records are written once complete: a model record waits for its tool results
    def flush(self) -> None:
        for rec in (self.user, self.model):
            if rec is not None:
                if rec is self.model:
                    self._close_calls(rec)
                self.out.write(orjson.dumps(rec) + b"\n")
                self.any = True
        self.user, self.model, self.issued = None, None, {}

    def _close_calls(self, rec: dict) -> None:
        for call in rec.get("toolCalls", []):
            if "result" not in call:       # the API refuses a call without its response
                self.conv.loss.add("approximated", "tool call without a result (an error result is recorded)")
                call["status"] = "error"
                call["result"] = [{"functionResponse": {"id": call["id"], "name": call["name"],
                                                        "response": {"error": "no result was recorded"}}}]

    def ts(self, item: Item) -> str:
        return iso_z(self.clock.at(item.ts))

    def on_user(self, item: Item) -> None:
        if self.model is not None:
            self.flush()
        if self.user is None:
            self.user = {"id": self.t.ids.uuid4(), "timestamp": self.ts(item), "type": "user", "content": []}
        self.user["content"].append({"text": item.text})

    def _model(self, item: Item, *, after_results: bool = False) -> dict:
        if self.user is not None or (self.model is not None and after_results):
            self.flush()
        if self.model is None:
            self.model = {"id": self.t.ids.uuid4(), "timestamp": self.ts(item), "type": "gemini", "content": ""}
            model = item.model or self.conv.source.model
            if model:
                self.model["model"] = model
        return self.model

    def _has_results(self) -> bool:
        return self.model is not None and any("result" in c for c in self.model.get("toolCalls", []))

    def on_assistant(self, item: Item) -> None:
        rec = self._model(item, after_results=self._has_results())
        if rec.get("toolCalls"):              # text after a call is the next model turn
            self.flush()
            rec = self._model(item)
        rec["content"] = (rec["content"] + "\n\n" + item.text) if rec["content"] else item.text

    def reasoning_text(self, item: Item, text: str) -> None:
        rec = self._model(item, after_results=self._has_results())
        rec.setdefault("thoughts", []).append({"subject": "", "description": text, "timestamp": self.ts(item)})

    def reasoning_dropped(self, p: Reasoning) -> str:
        return f"reasoning ({self.source})"

    def tool_id(self, wanted: str) -> str:
        return wanted

    def call_holder(self, item: Item) -> dict:
        return self._model(item, after_results=self._has_results())

    def add_call(self, rec: dict, cid: str, mapped: Mapped, item: Item) -> dict:
        entry = {"id": cid, "name": mapped.name, "args": mapped.arguments, "status": "success",
                 "timestamp": self.ts(item)}
        rec.setdefault("toolCalls", []).append(entry)
        return entry

    def on_result(self, item: Item) -> None:
        res: ToolResult = item.part
        entries = self.answers(res.call_id, once=False)
        if not entries:
            return
        key = "error" if res.is_error else "output"
        for entry in entries:        # a call split in several answers each with the same result
            entry["result"] = [{"functionResponse": {"id": entry["id"], "name": entry["name"],
                                                     "response": {key: result_text(res.output)}}}]
            entry["status"] = "error" if res.is_error else "success"

    def on_usage(self, item: Item) -> None:
        if self.model is None or not item.usage:
            return
        u = item.usage
        cached, out_, reasoning = u.get("cached", 0), u.get("output", 0), u.get("reasoning", 0)
        inp = u.get("input", 0) + cached + u.get("cache_write", 0)
        self.model["tokens"] = {"input": inp, "output": out_ - reasoning, "cached": cached, "thoughts": reasoning,
                                "tool": 0, "total": inp + out_}

    def on_attachment(self, item: Item) -> None:
        p: Attachment = item.part
        data = p.data if isinstance(p.data, dict) else {}
        if item.text == "user" and data.get("type") == "base64" and isinstance(data.get("data"), str):
            if self.model is not None:
                self.flush()
            if self.user is None:
                self.user = {"id": self.t.ids.uuid4(), "timestamp": self.ts(item), "type": "user", "content": []}
            self.user["content"].append({"inlineData": {"mimeType": data.get("media_type") or p.media_type,
                                                        "data": data["data"]}})
        else:
            self.conv.loss.add("dropped", "attachment")


def write(conv: Conversation, t: Target) -> Written:
    cwd = os.path.realpath(t.cwd)
    gdir = Path(t.root)
    slug, known = project_slug(gdir, cwd)
    now = iso_z(Clock(None, t.ids.time()).last)
    out = t.sink()
    meta = {"sessionId": t.sid, "projectHash": hashlib.sha256(cwd.encode()).hexdigest(),
            "startTime": iso_z(Clock(conv.source.created, t.ids.time()).last), "lastUpdated": now, "kind": "main",
            "histmig": provenance.line_marker(t.source_tool, t.source_id, now)}
    out.write(orjson.dumps(meta) + b"\n")
    w = _Writer(conv, t, out)
    w.run()
    minute = now[:16].replace(":", "-")
    chats = gdir / "tmp" / slug / "chats"
    short = t.sid[:8]
    if any(files.SESSION_RE.match(p.name) and files.SESSION_RE.match(p.name).group("short") == short
           for p in files.chat_files(chats.parent)):
        raise HistmigError(f"the new id {t.sid} shares its short id with a session in {chats}; "
                           "run the conversion again", path=str(chats))
    path = chats / files.session_file_name(minute, t.sid)
    return Written([(path, out.result())], t.sid, iso_z(w.clock.last) if w.any else None, conv.first_prompt,
                   info={"slug": slug, "new_project": None if known else cwd})


class Markers:
    """Convert's ``tables`` hook (toolkit/convert/common.py): the ``tmp/<slug>/.project_root`` marker of a
    project Gemini has not seen, created once per run whatever the number of sessions converted into it."""

    def __init__(self, homes: Any):
        self.gdir = files.gemini_dir(homes)
        self.made: set[str] = set()
        self.warnings: list = []

    @property
    def dirs(self) -> list[Path]:
        return []

    def inserts(self, w: Written, t: Target, *, updated: float, tag: dict) -> list[Any]:
        cwd, slug = w.info.get("new_project"), w.info.get("slug")
        if not cwd or slug in self.made:
            return []
        self.made.add(slug)
        # the project's, not the session's that happened to come first: tagged with its folder only,
        # so an undo that keeps another session of the slug keeps the marker with it (verbs/undo)
        folder = self.gdir / "tmp" / slug
        return [CreateFile(str(folder / files.MARKER), cwd.encode(), 0o644, None,
                           {"tool": tag.get("tool", "gemini"), "folder": str(folder)},
                           "project marker: gemini adopts this slug for the folder")]
