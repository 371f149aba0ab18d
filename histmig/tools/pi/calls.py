"""Pi's tool calls and the neutral vocabulary (histmig/toolkit/convert/calls.py; docs/pi.md, "convert").

Pi's own tools: ``bash {command, timeout (seconds)}``, ``read {path, offset, limit}``, ``write {path,
content}``, ``edit {path, edits: [{oldText, newText}]}`` (also ``grep``, ``find``, ``ls``, kept as they are).
From Pi: bash -> Shell, read -> Read, write -> Write, edit -> Edit; anything else -> Other.
To Pi: Shell -> ``bash`` (a workdir other than the session's folded into the command; milliseconds to
seconds); Read / Write -> ``read`` / ``write``; Edit -> one ``edit`` with every change (Claude's own whole-line
hunks when that is all the source recorded); Patch -> one ``write`` per added file and one ``edit`` per
updated file when the patch allows, else kept as ``apply_patch {"input"}``; anything else (a todo list
too: Pi has no such tool) keeps its name and arguments.
"""
from __future__ import annotations

import os
import shlex
from typing import Any

from histmig.core.model import ToolCall
from histmig.toolkit.convert.calls import (Call, Change, Edit, Mapped, Note, Other, Patch, Read, Shell, Vocabulary,
                                           Write, as_dict, safe_tool_name)
from histmig.toolkit.convert.patch import FileOp, to_abs


# ---- Pi -> neutral ---------------------------------------------------------------------------------

def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def to_neutral(call: ToolCall, result: Any = None) -> Call:
    name, arguments = call.name, call.arguments
    args = as_dict(arguments) or {}
    path = args.get("path") if isinstance(args.get("path"), str) and args.get("path") else None
    if name == "bash" and isinstance(args.get("command"), str):
        timeout = args.get("timeout")
        ms = int(timeout * 1000) if isinstance(timeout, (int, float)) and not isinstance(timeout, bool) else None
        return Shell(name=name, arguments=arguments, command=args["command"], timeout_ms=ms,
                     options={k: v for k, v in args.items() if k not in ("command", "timeout")})
    if name == "read" and path:
        return Read(name=name, arguments=arguments, path=path, offset=_int(args.get("offset")),
                    limit=_int(args.get("limit")))
    if name == "write" and path and isinstance(args.get("content"), str):
        return Write(name=name, arguments=arguments, path=path, content=args["content"])
    if name == "edit" and path and isinstance(args.get("edits"), list) and args["edits"]:
        changes = [Change(e["oldText"], e["newText"]) for e in args["edits"]
                   if isinstance(e, dict) and isinstance(e.get("oldText"), str) and isinstance(e.get("newText"), str)]
        if len(changes) == len(args["edits"]):
            return Edit(name=name, arguments=arguments, path=path, changes=changes)
    return Other(name=name, arguments=arguments)


# ---- neutral -> Pi ---------------------------------------------------------------------------------

def from_neutral(call: Call, cwd: str | None) -> list[Mapped]:
    if isinstance(call, Shell):
        return [_bash(call, cwd)]
    if isinstance(call, Patch):
        return _patch(call, cwd)
    made = None
    if isinstance(call, Edit):
        made = _edit(call, cwd)
    elif isinstance(call, Write):
        made = Mapped("write", {"path": to_abs(call.path, cwd), "content": call.content},
                      [("mapped", f"{call.name} -> write")])
    elif isinstance(call, Read):
        args: dict[str, Any] = {"path": to_abs(call.path, cwd)}
        args |= {k: v for k, v in (("offset", call.offset), ("limit", call.limit)) if v is not None}
        made = Mapped("read", args, [("mapped", f"{call.name} -> read")])
    return [made or keep(call)]


def keep(call: Call) -> Mapped:
    """A call Pi has no form for: its name made valid, its JSON arguments (free-form text as ``input``)."""
    args = as_dict(call.arguments)
    other = call.notes if isinstance(call, Other) else []
    if args is None:
        text = call.arguments if isinstance(call.arguments, str) else ""
        return Mapped(safe_tool_name(call.name), {"input": text},
                      other or [("mapped", f"{call.name} (free-form input kept as 'input')")])
    return Mapped(safe_tool_name(call.name), args, other or [("mapped", f"{call.name} kept as is")])


def _bash(call: Shell, cwd: str | None) -> Mapped:
    notes: list[Note] = [("mapped", f"{call.name} -> bash")]
    command = call.command
    if call.workdir and os.path.normpath(call.workdir) != os.path.normpath(cwd or ""):
        command = f"cd {shlex.quote(call.workdir)} && {command}"
        notes.append(("approximated", "shell workdir folded into the bash command"))
    out: dict[str, Any] = {"command": command}
    if isinstance(call.timeout_ms, int) and call.timeout_ms > 0:
        out["timeout"] = max(1, call.timeout_ms // 1000)       # Pi: seconds
    if call.options:
        notes.append(("approximated", f"{call.name} options ({', '.join(sorted(call.options))}) dropped"))
    return Mapped("bash", out, notes)


def _edit(call: Edit, cwd: str | None) -> Mapped | None:
    pairs = [(c.old, c.new) for c in call.changes]
    if not pairs and call.lines:
        pairs = [(h.old(), h.new()) for h in call.lines]
    if not pairs or any(not old for old, _ in pairs):
        return None
    notes: list[Note] = [("mapped", f"{call.name} -> edit")]
    if any(c.replace_all for c in call.changes):
        notes.append(("approximated", "replace_all (Pi's edit changes one place)"))
    return Mapped("edit", {"path": to_abs(call.path, cwd),
                           "edits": [{"oldText": old, "newText": new} for old, new in pairs]}, notes)


def _patch(call: Patch, cwd: str | None) -> list[Mapped]:
    calls = _ops(call.ops, cwd) if call.ops else None
    if not calls:
        return [Mapped(safe_tool_name(call.name), {"input": call.body if call.body is not None else ""},
                       [("approximated", f"{call.name} kept under its own name (not expressible as write/edit)")])]
    for c in calls:
        c.notes = [("mapped", f"{call.name} -> {c.name}")]
    if len(calls) > 1:
        calls[0].notes.append(("approximated", f"{call.name} split into several write/edit calls (output repeated)"))
    return calls


def _ops(ops: list[FileOp], cwd: str | None) -> list[Mapped] | None:
    calls: list[Mapped] = []
    for op in ops:
        path = to_abs(op.path, cwd)
        if op.kind == "add":
            calls.append(Mapped("write", {"path": path, "content": op.content}))
        elif op.kind == "update" and not op.move_to:
            pairs = [(h.old(), h.new()) for h in op.hunks]
            if not pairs or any(not old or old == new for old, new in pairs):
                return None          # a pure insertion has no anchor an edit could use
            calls.append(Mapped("edit", {"path": path, "edits": [{"oldText": o, "newText": n} for o, n in pairs]}))
        else:
            return None              # delete and move have no write/edit form
    return calls


CALLS = Vocabulary(to_neutral, from_neutral)
