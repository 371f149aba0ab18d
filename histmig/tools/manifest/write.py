"""Write a conversation as a new manifest-layout session (docs/specs/manifest-layout.md §1, §2, §7).

``<root>/projects/<project>/sessions/<uuid4>/`` with ``transcript.jsonl`` (``{ts, role, payload}``
per line, compact, payload = ``{"message": <Anthropic message>, "source": {...}}``; tool results have
role ``tool``) and ``meta.json`` (``sessionId, projectPath, cwd, cliVersion, model, createdAt,
updatedAt``; ``updatedAt`` = the last transcript ``ts``, the design's ``-c`` ordering key). No
checkpoints. ``<project>`` is an existing folder whose sessions record this project, else the Claude
slug of the path.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson

from histmig import __version__
from histmig.tools.manifest import provenance
from histmig.tools.claude_family.messages import Options, anthropic_usage, build_messages
from histmig.toolkit.convert.common import Target, Written
from histmig.toolkit.convert.flatten import Conversation
from histmig.core.times import iso_z
from histmig.toolkit.convert.ids import Clock
from histmig.core.paths import claude_slug


def project_folder(root: Path, project: str) -> Path:
    """An existing ``projects/<x>/`` whose sessions' meta.json names ``project``, else the slug."""
    base = Path(root) / "projects"
    if base.is_dir():
        for meta in sorted(base.glob("*/sessions/*/meta.json")):
            try:
                obj = orjson.loads(meta.read_bytes())
            except (orjson.JSONDecodeError, OSError):
                continue
            if isinstance(obj, dict) and project in (obj.get("projectPath"), obj.get("cwd")):
                return meta.parent.parent.parent
    return base / claude_slug(project)


def write(conv: Conversation, t: Target, *, folder: Path | None = None) -> Written:
    cwd = os.path.realpath(t.cwd)
    msgs = build_messages(conv, "manifest", Options(t.keep_reasoning_text, cwd))
    clock = Clock(conv.source.created, t.ids.time())
    created = iso_z(clock.last)
    source = {"tool": t.source_tool, "sessionId": t.source_id}
    out, any_msg = t.sink(), False
    for msg in msgs:
        any_msg = True
        role = "tool" if msg.role == "user" and not msg.prompt else msg.role
        payload: dict[str, Any] = {"message": {"role": msg.role, "content": msg.content()}, "source": source}
        if msg.usage:
            payload["usage"] = anthropic_usage(msg.usage)
        out.write(orjson.dumps({"ts": iso_z(clock.at(msg.stamps[0])), "role": role, "payload": payload}) + b"\n")
    meta = {"sessionId": t.sid, "projectPath": cwd, "cwd": cwd, "cliVersion": f"histmig {__version__}",
            "model": conv.source.model or "", "createdAt": created, "updatedAt": iso_z(clock.last),
            provenance.KEY: provenance.marker(t.source_tool, t.source_id,
                                                                iso_z(Clock(None, t.ids.time()).last))}
    d = (folder or project_folder(t.root, cwd)) / "sessions" / t.sid
    files = [(d / "meta.json", orjson.dumps(meta, option=orjson.OPT_INDENT_2) + b"\n"),
             (d / "transcript.jsonl", out.result())]
    return Written(files, t.sid, iso_z(clock.last) if any_msg else None, conv.first_prompt)
