"""Write a conversation as a new Claude Code transcript (docs/specs/claude-code.md §0, §3.2, §12).

File: ``<config>/projects/<slug(realpath(cwd))>/<uuid4>.jsonl``. One record per content block,
the blocks of one assistant message sharing ``message.id``; the envelope in Claude 2.1.x key order
(``parentUuid`` first, ``uuid`` then ``timestamp`` adjacent, 36-character uuids) with
``userType:"external"``, ``entrypoint:"cli"`` (``sdk-cli`` sessions are hidden from the picker),
``cwd``, ``sessionId`` = the file name, ``version``, ``gitBranch``.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson

from histmig.toolkit.convert import provenance
from histmig.tools.claude_family.messages import Msg, Options, anthropic_usage, build_messages
from histmig.toolkit.convert.common import Target, Written
from histmig.toolkit.convert.flatten import Conversation
from histmig.core.times import iso_z
from histmig.toolkit.convert.ids import Clock, Ids
from histmig.toolkit.convert.sink import Sink
from histmig.core.paths import claude_slug

CLAUDE_VERSION = "2.1.197"


def folder(homes: Any, cwd: str) -> Path:
    """The project folder Claude lists for ``cwd`` (the slug of its realpath, §2.1)."""
    return Path(homes.claude) / "projects" / claude_slug(os.path.realpath(cwd))


class _Writer:
    def __init__(self, conv: Conversation, sid: str, cwd: str, ids: Ids, branch: str, out: Sink):
        self.conv, self.sid, self.cwd, self.ids, self.branch = conv, sid, cwd, ids, branch
        self.parent: str | None = None
        self.out = out
        self.clock = Clock(conv.source.created, ids.time())
        self._tail = self.tail()                  # the same last keys on every record
        self._ts: str | None = None               # the last source time stamped, and its text
        self._text: str | None = None

    def tail(self) -> dict[str, Any]:
        return {"userType": "external", "entrypoint": "cli", "cwd": self.cwd, "sessionId": self.sid,
                "version": CLAUDE_VERSION, "gitBranch": self.branch}

    def stamp(self, ts: str | None) -> str:
        """``iso_z(self.clock.at(ts))``; a time the clock cannot move (none, or the last one again)
        reuses the last text."""
        if self._text is None or (ts is not None and ts != self._ts):
            self._ts, last = ts, self.clock.last
            dt = self.clock.at(ts)
            if self._text is None or dt is not last:
                self._text = iso_z(dt)
        return self._text

    def emit(self, type_: str, message: dict, ts: str | None, after_ts: dict | None = None) -> str:
        uid = self.ids.uuid4()
        rec = {"parentUuid": self.parent, "isSidechain": False, "type": type_, "message": message,
               "uuid": uid, "timestamp": self.stamp(ts)}
        if after_ts:
            rec.update(after_ts)
        rec.update(self._tail)
        self.out.write(orjson.dumps(rec, option=orjson.OPT_APPEND_NEWLINE))
        self.parent = uid
        return uid

    def user(self, msg: Msg, last_assistant: str | None) -> None:
        after: dict[str, Any] = {}
        results = [b for b in msg.blocks if b["type"] == "tool_result"]
        if len(results) == 1 and results[0]["tool_use_id"] in msg.structured:
            after["toolUseResult"] = msg.structured[results[0]["tool_use_id"]]
        if results and last_assistant:
            after["sourceToolAssistantUUID"] = last_assistant
        self.emit("user", {"role": "user", "content": msg.content()}, msg.stamps[0], after)

    def assistant(self, msg: Msg, model: str) -> str:
        mid, last = self.ids.msg_id(), ""
        usage = anthropic_usage(msg.usage)
        for k, (block, ts) in enumerate(zip(msg.blocks, msg.stamps)):
            final = k == len(msg.blocks) - 1
            stop = ("tool_use" if any(b["type"] == "tool_use" for b in msg.blocks) else "end_turn") if final else None
            message = {"model": msg.model or model, "id": mid, "type": "message", "role": "assistant",
                       "content": [block], "stop_reason": stop, "stop_sequence": None, "usage": usage}
            last = self.emit("assistant", message, ts)
        return last


def write(conv: Conversation, t: Target) -> Written:
    """The new transcript. ``t.cwd`` must already be validated (absolute, sane)."""
    real = os.path.realpath(t.cwd)
    msgs = build_messages(conv, "claude-code", Options(t.keep_reasoning_text, real))
    w = _Writer(conv, t.sid, real, t.ids, git_branch(conv.source), t.sink())
    mark = provenance.line_marker(t.source_tool, t.source_id, iso_z(Clock(None, t.ids.time()).last))
    w.out.write(orjson.dumps(mark) + b"\n")
    model = conv.source.model or "unknown"
    last_assistant, any_msg = None, False
    for msg in msgs:
        any_msg = True
        if msg.role == "assistant":
            last_assistant = w.assistant(msg, model)
        else:
            w.user(msg, last_assistant)
    path = Path(os.path.join(t.root, "projects", claude_slug(real), f"{t.sid}.jsonl"))
    return Written([(path, w.out.result())], t.sid, iso_z(w.clock.last) if any_msg else None, conv.first_prompt)


def git_branch(session: Any) -> str:
    """The source's git branch when it recorded one (Codex ``session_meta.git``, Claude ``gitBranch``)."""
    meta = session.meta or {}
    git = (meta.get("session_meta") or {}).get("git") if isinstance(meta.get("session_meta"), dict) else None
    branch = git.get("branch") if isinstance(git, dict) else meta.get("gitBranch")
    return branch if isinstance(branch, str) else ""
