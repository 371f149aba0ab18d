"""OpenCode's tool calls and the neutral vocabulary (histmig/toolkit/convert/calls.py; docs/opencode.md).

OpenCode's own tools (``part.data`` of type ``tool``: ``tool`` and ``state.input``): ``bash {command,
timeout (ms), workdir, description}``, ``read {filePath, offset, limit}``, ``write {filePath, content}``,
``edit {filePath, oldString, newString, replaceAll}``. From OpenCode: bash -> Shell, read -> Read,
write -> Write, edit -> Edit (one change; ``replaceAll`` keeps it Other), anything else -> Other.
To OpenCode (no writer yet): every call keeps its name and arguments.
"""
from __future__ import annotations

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


def from_neutral(call: Call, cwd: str | None) -> list[Mapped]:
    args = as_dict(call.arguments)
    if args is None:
        return [Mapped(safe_tool_name(call.name), {"input": call.arguments if isinstance(call.arguments, str) else ""},
                       [("mapped", f"{call.name} (free-form input kept as 'input')")])]
    return [Mapped(safe_tool_name(call.name), args, [("mapped", f"{call.name} kept as is")])]


CALLS = Vocabulary(to_neutral=to_neutral, from_neutral=from_neutral)
