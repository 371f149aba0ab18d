"""Claude's tool calls (Claude Code, mini-cc, manifest) and the neutral vocabulary
(histmig/toolkit/convert/calls.py; docs/specs/claude-code.md).

From Claude: ``Bash`` -> Shell; ``Edit``/``MultiEdit`` -> Edit (with the whole-line hunks of Claude's
own ``structuredPatch`` when the result recorded one); ``Write`` -> Write; ``Read`` -> Read;
``apply_patch {"input"}`` (an earlier conversion) -> Patch; ``TodoWrite`` -> Todos; anything else -> Other.
To Claude: Shell -> ``Bash {command}`` (a workdir other than the session's is folded into the
command); Patch -> one ``Write`` per added file and one ``Edit`` per update hunk when the patch allows,
else kept as ``apply_patch {"input": patch}``; Edit / Write / Read / Todos -> ``Edit``/``MultiEdit`` /
``Write`` / ``Read`` / ``TodoWrite``; anything else keeps its (sanitised) name and its arguments.
"""
from __future__ import annotations

import os
import shlex
from typing import Any

from histmig.core.model import ToolCall
from histmig.toolkit.convert.calls import (Call, Change, Edit, Mapped, Note, Other, Patch, Read, Shell, Todo, Todos,
                                           Vocabulary, Write, as_dict, safe_tool_name)
from histmig.toolkit.convert.patch import FileOp, PatchError, hunk_from_structured, parse_patch, to_abs

STATUSES = ("pending", "in_progress", "completed")
MAX_TIMEOUT_MS = 600000          # Bash's own limit (docs/specs/claude-code.md)


# ---- Claude -> neutral -----------------------------------------------------------------------------

def to_neutral(call: ToolCall, result: Any = None) -> Call:
    """``result``: the call's ``toolUseResult`` as flatten kept it (``{"structuredPatch": ...}``) or None."""
    name, arguments = call.name, call.arguments
    args = as_dict(arguments) or {}
    made: Call | None = None
    if name == "Bash" and isinstance(args.get("command"), str):
        made = _shell(name, args)
    elif name in ("Edit", "MultiEdit"):
        made = _edit(name, args, result)
    elif name == "Write" and _path(args) and isinstance(args.get("content"), str):
        made = Write(name=name, arguments=arguments, path=args["file_path"], content=args["content"])
    elif name == "Read" and _path(args):
        made = Read(name=name, arguments=arguments, path=args["file_path"],
                    offset=_int(args.get("offset")), limit=_int(args.get("limit")))
    elif name == "apply_patch" and isinstance(args.get("input"), str):
        made = Patch(name=name, arguments=arguments, body=args["input"], ops=_parse(args["input"]))
    elif name == "TodoWrite" and isinstance(args.get("todos"), list):
        made = Todos(name=name, arguments=arguments, items=[
            Todo(str(t.get("content", "")), t.get("status", "pending"), t.get("activeForm"))
            for t in args["todos"] if isinstance(t, dict)])
    return made or Other(name=name, arguments=arguments)


def _path(args: dict) -> bool:
    return isinstance(args.get("file_path"), str) and bool(args["file_path"])


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _parse(body: str) -> list[FileOp] | None:
    try:
        return parse_patch(body)
    except PatchError:
        return None


def _shell(name: str, args: dict) -> Shell:
    timeout = args.get("timeout")
    timeout = timeout if isinstance(timeout, int) else None
    description = args.get("description")
    return Shell(name=name, arguments=args, command=args["command"], timeout_ms=timeout,
                 description=description if isinstance(description, str) else None,
                 options={k: v for k, v in args.items()
                          if k not in ("command", "description") and not (k == "timeout" and timeout is not None)})


def _edit(name: str, args: dict, result: Any) -> Edit | None:
    if not _path(args):
        return None
    edits = args.get("edits") if name == "MultiEdit" else [args]
    if not isinstance(edits, list) or not edits:
        return None
    changes = [Change(e["old_string"], e["new_string"], bool(e.get("replace_all"))) for e in edits
               if isinstance(e, dict) and isinstance(e.get("old_string"), str) and isinstance(e.get("new_string"), str)]
    lines = _structured_hunks(result)
    if len(changes) < len(edits):
        if lines is None:
            return None              # not every edit is understood, and Claude recorded no diff of it
        changes = []
    return Edit(name=name, arguments=args, path=args["file_path"], changes=changes, lines=lines)


def _structured_hunks(structured: Any) -> list | None:
    """Whole-line hunks from Claude's own diff of the edit, when the result recorded one."""
    patches = structured.get("structuredPatch") if isinstance(structured, dict) else None
    if not isinstance(patches, list) or not patches:
        return None
    hunks = [hunk_from_structured(p) for p in patches]
    return hunks if all(h is not None for h in hunks) else None


# ---- neutral -> Claude -----------------------------------------------------------------------------

def from_neutral(call: Call, cwd: str | None) -> list[Mapped]:
    if isinstance(call, Shell):
        return [_bash(call, cwd)]
    if isinstance(call, Patch):
        return _patch(call, cwd)
    made = None
    if isinstance(call, Edit) and call.changes:
        made = _edit_call(call, cwd)
    elif isinstance(call, Write):
        made = Mapped("Write", {"file_path": to_abs(call.path, cwd), "content": call.content},
                      [("mapped", f"{call.name} -> Write")])
    elif isinstance(call, Read):
        args: dict[str, Any] = {"file_path": to_abs(call.path, cwd)}
        args |= {k: v for k, v in (("offset", call.offset), ("limit", call.limit)) if v is not None}
        made = Mapped("Read", args, [("mapped", f"{call.name} -> Read")])
    elif isinstance(call, Todos):
        made = Mapped("TodoWrite", {"todos": [_todo(t) for t in call.items]}, [("mapped", f"{call.name} -> TodoWrite")])
    return [made or keep(call)]


def keep(call: Call) -> Mapped:
    """A call Claude has no form for: its name made valid, its JSON arguments (free-form text as ``input``)."""
    args = as_dict(call.arguments)
    other = call.notes if isinstance(call, Other) else []
    if args is None:
        text = call.arguments if isinstance(call.arguments, str) else ""
        return Mapped(safe_tool_name(call.name), {"input": text},
                      other or [("mapped", f"{call.name} (free-form input kept as 'input')")])
    return Mapped(safe_tool_name(call.name), args, other or [("mapped", f"{call.name} kept as is")])


def _bash(call: Shell, cwd: str | None) -> Mapped:
    notes: list[Note] = [("mapped", f"{call.name} -> Bash")]
    command = call.command
    if call.workdir and os.path.normpath(call.workdir) != os.path.normpath(cwd or ""):
        command = f"cd {shlex.quote(call.workdir)} && {command}"
        notes.append(("approximated", "shell workdir folded into the Bash command"))
    bash: dict[str, Any] = {"command": command}
    if isinstance(call.timeout_ms, int) and 0 < call.timeout_ms <= MAX_TIMEOUT_MS:
        bash["timeout"] = call.timeout_ms
    if call.description is not None:
        bash["description"] = call.description
    return Mapped("Bash", bash, notes)


def _todo(t: Todo) -> dict:
    status = t.status if t.status in STATUSES else "pending"
    return {"content": t.content, "status": status, "activeForm": t.content if t.active_form is None else t.active_form}


def _edit_call(call: Edit, cwd: str | None) -> Mapped:
    path = to_abs(call.path, cwd)
    edits = [{"old_string": c.old, "new_string": c.new} | ({"replace_all": True} if c.replace_all else {})
             for c in call.changes]
    if len(edits) == 1:
        return Mapped("Edit", {"file_path": path, **edits[0]}, [("mapped", f"{call.name} -> Edit")])
    return Mapped("MultiEdit", {"file_path": path, "edits": edits}, [("mapped", f"{call.name} -> MultiEdit")])


def _patch(call: Patch, cwd: str | None) -> list[Mapped]:
    calls = _ops_to_edits(call.ops, cwd) if call.ops else None
    if not calls:
        return [Mapped(safe_tool_name(call.name), {"input": call.body if call.body is not None else ""},
                       [("approximated", f"{call.name} kept under its own name (not expressible as Edit/Write)")])]
    for c in calls:
        c.notes = [("mapped", f"{call.name} -> {c.name}")]
    if len(calls) > 1:
        calls[0].notes.append(("approximated", f"{call.name} split into several Edit/Write calls (output repeated)"))
    return calls


def _ops_to_edits(ops: list[FileOp], cwd: str | None) -> list[Mapped] | None:
    calls: list[Mapped] = []
    for op in ops:
        path = to_abs(op.path, cwd)
        if op.kind == "add":
            calls.append(Mapped("Write", {"file_path": path, "content": op.content}))
        elif op.kind == "update" and not op.move_to:
            for h in op.hunks:
                old, new = h.old(), h.new()
                if not old or old == new:
                    return None          # a pure insertion has no anchor Edit could use
                calls.append(Mapped("Edit", {"file_path": path, "old_string": old, "new_string": new}))
        else:
            return None                  # delete and move have no Edit/Write form
    return calls


CALLS = Vocabulary(to_neutral, from_neutral)
