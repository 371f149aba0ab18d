"""Copilot CLI's tool calls and the neutral vocabulary (histmig/toolkit/convert/calls.py; docs/copilot.md,
"convert").

Copilot's own tools (1.0.102): ``bash {command, description}``, ``view {path, view_range}``, ``create {path,
file_text}``, ``edit {path, old_str, new_str}`` (others, such as ``read_bash`` or MCP tools, kept as they are).
From Copilot: bash -> Shell, view -> Read, create -> Write, edit -> Edit; anything else -> Other.
To Copilot: Shell -> ``bash`` (a workdir other than the session's folded into the command); Read -> ``view``;
Write -> ``create``; Edit -> one ``edit`` per change; anything else keeps its name and arguments.
"""
from __future__ import annotations

from typing import Any

from histmig.core.model import ToolCall
from histmig.toolkit.convert.calls import (Call, Change, Edit, Mapped, Note, Other, Read, Shell, Vocabulary, Write,
                                           as_dict)
from histmig.toolkit.convert.callmap import fold_workdir, keep
from histmig.toolkit.convert.patch import to_abs


def to_neutral(call: ToolCall, result: Any = None) -> Call:
    name, arguments = call.name, call.arguments
    args = as_dict(arguments) or {}
    path = args.get("path") if isinstance(args.get("path"), str) and args.get("path") else None
    if name == "bash" and isinstance(args.get("command"), str):
        desc = args.get("description") if isinstance(args.get("description"), str) else None
        return Shell(name=name, arguments=arguments, command=args["command"], description=desc,
                     options={k: v for k, v in args.items() if k not in ("command", "description")})
    if name == "view" and path:
        rng = args.get("view_range")
        offset = limit = None
        if isinstance(rng, list) and len(rng) == 2 and all(isinstance(x, int) for x in rng):
            offset, limit = rng[0], (rng[1] - rng[0] + 1 if rng[1] >= rng[0] else None)
        return Read(name=name, arguments=arguments, path=path, offset=offset, limit=limit)
    if name == "create" and path and isinstance(args.get("file_text"), str):
        return Write(name=name, arguments=arguments, path=path, content=args["file_text"])
    if name == "edit" and path and isinstance(args.get("old_str"), str):
        return Edit(name=name, arguments=arguments, path=path,
                    changes=[Change(args["old_str"], args.get("new_str") if isinstance(args.get("new_str"), str) else "")])
    return Other(name=name, arguments=arguments)


def from_neutral(call: Call, cwd: str | None) -> list[Mapped]:
    if isinstance(call, Shell):
        return [_bash(call, cwd)]
    if isinstance(call, Write):
        return [Mapped("create", {"path": to_abs(call.path, cwd), "file_text": call.content},
                       [("mapped", f"{call.name} -> create")])]
    if isinstance(call, Read):
        args: dict[str, Any] = {"path": to_abs(call.path, cwd)}
        if call.offset is not None and call.limit is not None:
            args["view_range"] = [call.offset, call.offset + call.limit - 1]
        return [Mapped("view", args, [("mapped", f"{call.name} -> view")])]
    if isinstance(call, Edit):
        pairs = [(c.old, c.new) for c in call.changes] or [(h.old(), h.new()) for h in call.lines or []]
        if pairs and all(old for old, _ in pairs):
            notes: list[Note] = [("mapped", f"{call.name} -> edit")]
            if any(c.replace_all for c in call.changes):
                notes.append(("approximated", "replace_all (Copilot's edit changes one place)"))
            return [Mapped("edit", {"path": to_abs(call.path, cwd), "old_str": old, "new_str": new}, notes if i == 0 else [])
                    for i, (old, new) in enumerate(pairs)]
    return [keep(call)]


def _bash(call: Shell, cwd: str | None) -> Mapped:
    notes: list[Note] = [("mapped", f"{call.name} -> bash")]
    command = fold_workdir(call, cwd, notes, "the bash command")
    dropped = sorted(set(call.options) - {"timeout"}) if call.options else []
    if dropped:
        notes.append(("approximated", f"{call.name} options ({', '.join(dropped)}) dropped"))
    return Mapped("bash", {"command": command, "description": call.description or "run a command"}, notes)


CALLS = Vocabulary(to_neutral, from_neutral)
