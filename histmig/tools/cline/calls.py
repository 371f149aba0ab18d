"""Cline CLI's tool calls and the neutral vocabulary (histmig/toolkit/convert/calls.py; docs/cline.md).

Cline 3.0.65 offers batch tools: ``run_commands {commands: [str]}``, ``read_files {files: [{path,
start_line, end_line}]}``, ``editor {path, old_text, new_text, insert_line}``, ``search_codebase {queries}``,
``fetch_web_content {requests: [{url, prompt}]}``, plus ``ask_question``, ``spawn_agent`` and ``team_*``.

From Cline: ``run_commands`` with one command -> Shell, ``read_files`` with one file -> Read, ``editor``
with ``old_text`` -> Edit, without -> Write; anything else -> Other. To Cline: Shell -> ``run_commands``
(a workdir other than the session's folded into the command), Read -> ``read_files``, Edit -> one
``editor`` per change, Write -> ``editor {path, new_text}``; Patch and Other keep their (sanitised) name
and arguments (Cline replays any call it stored; the model sees the name as it was).
"""
from __future__ import annotations

import os
from typing import Any

from histmig.core.model import ToolCall
from histmig.toolkit.convert.callmap import fold_workdir
from histmig.toolkit.convert.callmap import keep as keep_as_is
from histmig.toolkit.convert.calls import (Call, Change, Edit, Mapped, Note, Other, Patch, Read, Shell, Vocabulary,
                                           Write, as_dict, safe_tool_name)


def to_neutral(call: ToolCall, result: Any = None) -> Call:
    args = as_dict(call.arguments) or {}
    cmds, files = args.get("commands"), args.get("files")
    if call.name == "run_commands" and isinstance(cmds, list) and len(cmds) == 1 and isinstance(cmds[0], str):
        return Shell(name=call.name, arguments=call.arguments, command=cmds[0])
    if call.name == "read_files" and isinstance(files, list) and len(files) == 1 and isinstance(files[0], dict) \
            and isinstance(files[0].get("path"), str):
        f = files[0]
        start, end = f.get("start_line"), f.get("end_line")
        offset = start if isinstance(start, int) else None
        limit = end - (start or 1) + 1 if isinstance(end, int) else None
        return Read(name=call.name, arguments=call.arguments, path=f["path"], offset=offset, limit=limit)
    path = args.get("path")
    if call.name == "editor" and isinstance(path, str) and isinstance(args.get("new_text"), str) \
            and args.get("insert_line") is None:
        if isinstance(args.get("old_text"), str):
            return Edit(name=call.name, arguments=call.arguments, path=path,
                        changes=[Change(args["old_text"], args["new_text"])])
        return Write(name=call.name, arguments=call.arguments, path=path, content=args["new_text"])
    return Other(name=call.name, arguments=call.arguments)


def from_neutral(call: Call, cwd: str | None) -> list[Mapped]:
    if isinstance(call, Shell):
        return [_shell(call, cwd)]
    if isinstance(call, Read):
        f: dict[str, Any] = {"path": _abs(call.path, cwd)}
        if call.offset:
            f["start_line"] = call.offset
        if call.limit and call.offset:
            f["end_line"] = call.offset + call.limit - 1
        return [Mapped("read_files", {"files": [f]}, [("mapped", f"{call.name} -> read_files")])]
    if isinstance(call, Edit) and call.changes:
        out = [Mapped("editor", {"path": _abs(call.path, cwd), "old_text": c.old, "new_text": c.new},
                      [("mapped", f"{call.name} -> editor")]) for c in call.changes]
        if any(c.replace_all for c in call.changes):
            out[0].notes.append(("approximated", "replace_all (editor replaces one match)"))
        return out
    if isinstance(call, Write):
        return [Mapped("editor", {"path": _abs(call.path, cwd), "new_text": call.content},
                       [("mapped", f"{call.name} -> editor")])]
    return [keep(call)]


def keep(call: Call) -> Mapped:
    """A patch Cline's editor cannot take is kept as its text under its own name; anything else as the
    shared rule keeps it (toolkit/convert/callmap.py)."""
    if isinstance(call, Patch):
        return Mapped(safe_tool_name(call.name), {"input": call.body or ""},
                      [("approximated", f"{call.name} kept under its own name")])
    return keep_as_is(call)


def _shell(call: Shell, cwd: str | None) -> Mapped:
    notes: list[Note] = [("mapped", f"{call.name} -> run_commands")]
    command = fold_workdir(call, cwd, notes, "the command")
    return Mapped("run_commands", {"commands": [command]}, notes)


def _abs(path: str, cwd: str | None) -> str:
    return path if os.path.isabs(path) or not cwd else os.path.join(cwd, path)


CALLS = Vocabulary(to_neutral, from_neutral)
