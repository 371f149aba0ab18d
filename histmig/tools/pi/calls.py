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

from typing import Any

from histmig.core.model import ToolCall
from histmig.toolkit.convert.callmap import Pairs, fold_workdir, keep, patch_calls, read_args
from histmig.toolkit.convert.callmap import as_int as _int
from histmig.toolkit.convert.calls import (Call, Change, Edit, Mapped, Note, Other, Patch, Read, Shell, Vocabulary,
                                           Write, as_dict)
from histmig.toolkit.convert.patch import to_abs


# ---- Pi -> neutral ---------------------------------------------------------------------------------

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
        return patch_calls(call, cwd, _write, _edits, "write/edit")
    made = None
    if isinstance(call, Edit):
        made = _edit(call, cwd)
    elif isinstance(call, Write):
        made = Mapped("write", {"path": to_abs(call.path, cwd), "content": call.content},
                      [("mapped", f"{call.name} -> write")])
    elif isinstance(call, Read):
        made = Mapped("read", read_args(call, cwd, "path"), [("mapped", f"{call.name} -> read")])
    return [made or keep(call)]


def _bash(call: Shell, cwd: str | None) -> Mapped:
    notes: list[Note] = [("mapped", f"{call.name} -> bash")]
    out: dict[str, Any] = {"command": fold_workdir(call, cwd, notes, "the bash command")}
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


def _write(path: str, content: str) -> Mapped:
    return Mapped("write", {"path": path, "content": content})


def _edits(path: str, pairs: Pairs) -> list[Mapped] | None:
    """One ``edit`` with every hunk of the file."""
    if not pairs:
        return None
    return [Mapped("edit", {"path": path, "edits": [{"oldText": o, "newText": n} for o, n in pairs]})]


CALLS = Vocabulary(to_neutral, from_neutral)
