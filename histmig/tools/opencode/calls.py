"""OpenCode's tool calls and the neutral vocabulary (histmig/toolkit/convert/calls.py; docs/opencode.md).

OpenCode's own tools (``part.data`` of type ``tool``: ``tool`` and ``state.input``): ``bash {command,
timeout (ms), workdir, description}``, ``read {filePath, offset, limit}``, ``write {filePath, content}``,
``edit {filePath, oldString, newString, replaceAll}``. From OpenCode: bash -> Shell, read -> Read,
write -> Write, edit -> Edit (one change; ``replaceAll`` keeps it Other), anything else -> Other.
To OpenCode (tools/opencode/write.py): Shell -> bash (a relative workdir made absolute), Read -> read,
Write -> write, Edit -> one edit per change (paths made absolute: OpenCode's tools take absolute
``filePath``); anything else keeps its name and arguments.
"""
from __future__ import annotations

import os
from typing import Any

from histmig.core.model import ToolCall
from histmig.toolkit.convert.calls import (Call, Change, Edit, Mapped, Other, Read, Shell, Vocabulary, Write, as_dict,
                                           safe_tool_name)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def to_neutral(call: ToolCall, result: Any = None) -> Call:
    name, arguments = call.name, call.arguments
    args = as_dict(arguments) or {}
    path = _str(args.get("filePath"))
    if name == "bash" and isinstance(args.get("command"), str):
        return Shell(name=name, arguments=arguments, command=args["command"], workdir=_str(args.get("workdir")),
                     timeout_ms=_int(args.get("timeout")), description=_str(args.get("description")),
                     options={k: v for k, v in args.items() if k not in ("command", "workdir", "timeout",
                                                                         "description")})
    if name == "read" and path:
        return Read(name=name, arguments=arguments, path=path, offset=_int(args.get("offset")),
                    limit=_int(args.get("limit")))
    if name == "write" and path and isinstance(args.get("content"), str):
        return Write(name=name, arguments=arguments, path=path, content=args["content"])
    if (name == "edit" and path and isinstance(args.get("oldString"), str) and isinstance(args.get("newString"), str)
            and not args.get("replaceAll")):
        return Edit(name=name, arguments=arguments, path=path, changes=[Change(args["oldString"], args["newString"])])
    return Other(name=name, arguments=arguments)


def _abs(path: str, cwd: str | None) -> str:
    return path if os.path.isabs(path) or not cwd else os.path.join(cwd, path)


def from_neutral(call: Call, cwd: str | None) -> list[Mapped]:
    if isinstance(call, Shell):
        args: dict[str, Any] = {"command": call.command, "description": call.description or call.command[:80]}
        if isinstance(call.timeout_ms, int) and not isinstance(call.timeout_ms, bool):
            args["timeout"] = call.timeout_ms
        if call.workdir:
            args["workdir"] = _abs(call.workdir, cwd)
        return [Mapped("bash", args, [("mapped", f"{call.name} -> bash")] if call.name != "bash" else [])]
    if isinstance(call, Read):
        args = {"filePath": _abs(call.path, cwd)}
        args |= {k: v for k, v in (("offset", call.offset), ("limit", call.limit)) if v is not None}
        return [Mapped("read", args, [("mapped", f"{call.name} -> read")] if call.name != "read" else [])]
    if isinstance(call, Write):
        return [Mapped("write", {"filePath": _abs(call.path, cwd), "content": call.content},
                       [("mapped", f"{call.name} -> write")] if call.name != "write" else [])]
    if isinstance(call, Edit) and call.changes:
        return [Mapped("edit", {"filePath": _abs(call.path, cwd), "oldString": c.old, "newString": c.new}
                       | ({"replaceAll": True} if c.replace_all else {}),
                       [("mapped", f"{call.name} -> edit")] if call.name != "edit" else []) for c in call.changes]
    return keep(call)


def keep(call: Call) -> list[Mapped]:
    args = as_dict(call.arguments)
    if args is None:
        return [Mapped(safe_tool_name(call.name), {"input": call.arguments if isinstance(call.arguments, str) else ""},
                       [("mapped", f"{call.name} (free-form input kept as 'input')")])]
    return [Mapped(safe_tool_name(call.name), args, [("mapped", f"{call.name} kept as is")])]


CALLS = Vocabulary(to_neutral=to_neutral, from_neutral=from_neutral)
