"""Write a conversation as a new mini-cc session (docs/specs/mini-cc.md §4, §11, §12).

``<MINI_CC_HOME>/projects/<folder>/<uuid4>.jsonl``: one record per message, keys in mini-cc's order
``type, uuid, parentUuid, sessionId, timestamp (+00:00), cwd, message[, usage]``, compact JSON as the
Node build writes it, ``usage`` at the top level of assistant records (so ``/status`` totals survive).
The folder is an existing one that records this cwd, else the Claude-rule slug (mini-cc's own
``project_slug`` is not published).
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson

from histmig.toolkit.convert import provenance
from histmig.tools.claude_family.messages import Options, anthropic_usage, build_messages
from histmig.toolkit.convert.common import Target, Written
from histmig.toolkit.convert.flatten import Conversation
from histmig.core.times import iso_z
from histmig.toolkit.convert.ids import Clock, iso_offset


def folder(root: Path, cwd: str) -> Path:
    from histmig.tools.mini_cc.adapter import folder_for
    found, _ = folder_for(Path(root) / "projects", os.path.realpath(cwd))
    return found


def write(conv: Conversation, t: Target, *, project_folder: Path | None = None) -> Written:
    cwd = os.path.realpath(t.cwd)
    msgs = build_messages(conv, "mini-cc", Options(t.keep_reasoning_text, cwd))
    clock = Clock(conv.source.created, t.ids.time())
    out = t.sink()
    out.write(orjson.dumps(provenance.line_marker(t.source_tool, t.source_id, iso_z(Clock(None, t.ids.time()).last))) + b"\n")
    parent, any_msg = None, False
    for msg in msgs:
        any_msg = True
        uid = t.ids.uuid4()
        rec: dict[str, Any] = {"type": msg.role, "uuid": uid, "parentUuid": parent, "sessionId": t.sid,
                               "timestamp": iso_offset(clock.at(msg.stamps[0])), "cwd": cwd,
                               "message": {"role": msg.role, "content": msg.content()}}
        if msg.role == "assistant" and msg.usage:
            rec["usage"] = anthropic_usage(msg.usage)
        out.write(orjson.dumps(rec) + b"\n")
        parent = uid
    path = (project_folder or folder(t.root, cwd)) / f"{t.sid}.jsonl"
    return Written([(path, out.result())], t.sid, iso_z(clock.last) if any_msg else None, conv.first_prompt)
