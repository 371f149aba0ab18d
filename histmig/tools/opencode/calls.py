"""OpenCode's tool calls and the neutral vocabulary (histmig/toolkit/convert/calls.py; docs/opencode.md).

OpenCode's own tools (``part.data`` of type ``tool``: ``tool`` and ``state.input``): ``bash {command,
timeout (ms), workdir, description}``, ``read {filePath, offset, limit}``, ``write {filePath, content}``,
``edit {filePath, oldString, newString, replaceAll}``. From OpenCode: bash -> Shell, read -> Read,
write -> Write, edit -> Edit (one change; ``replaceAll`` keeps it Other), anything else -> Other.
To OpenCode (tools/opencode/write.py): Shell -> bash (``workdir`` kept, made absolute; ``timeout`` in ms),
Read -> read, Write -> write, Edit -> one edit per change (``replaceAll`` kept), Patch -> one write per
added file and one edit per hunk when the patch allows (else ``apply_patch {"input"}``); paths made
absolute (OpenCode's tools take an absolute ``filePath``); anything else keeps its name and arguments.
"""
from __future__ import annotations

from typing import Any

from histmig.core.model import ToolCall
from histmig.toolkit.convert.callmap import Pairs, keep, patch_calls, read_args
from histmig.toolkit.convert.patch import to_abs
from histmig.toolkit.convert.calls import (Call, Change, Edit, Mapped, Note, Other, Patch, Read, Shell, Vocabulary, Write,
                                           as_dict)


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
    if isinstance(call, Shell):
        args: dict[str, Any] = {"command": call.command, "description": call.description or call.command[:80]}
        if _int(call.timeout_ms) is not None and call.timeout_ms > 0:
            args["timeout"] = call.timeout_ms                    # OpenCode: milliseconds, as the neutral form
        if call.workdir:
            args["workdir"] = to_abs(call.workdir, cwd)
        notes: list[Note] = [("mapped", f"{call.name} -> bash")]
        if call.options:
            notes.append(("approximated", f"{call.name} options ({', '.join(sorted(call.options))}) dropped"))
        return [Mapped("bash", args, notes)]
    if isinstance(call, Patch):
        return patch_calls(call, cwd, _write, _edits, "write/edit")
    if isinstance(call, Read):
        return [Mapped("read", read_args(call, cwd, "filePath"), [("mapped", f"{call.name} -> read")])]
    if isinstance(call, Write):
        return [Mapped("write", {"filePath": to_abs(call.path, cwd), "content": call.content},
                       [("mapped", f"{call.name} -> write")])]
    if isinstance(call, Edit):
        pairs = [(c.old, c.new, c.replace_all) for c in call.changes] or \
            [(h.old(), h.new(), False) for h in call.lines or []]
        if pairs and all(old for old, _, _ in pairs):
            return [Mapped("edit", {"filePath": to_abs(call.path, cwd), "oldString": old, "newString": new}
                           | ({"replaceAll": True} if every else {}), [("mapped", f"{call.name} -> edit")])
                    for old, new, every in pairs]
    return [keep(call)]


def _write(path: str, content: str) -> Mapped:
    return Mapped("write", {"filePath": path, "content": content})


def _edits(path: str, pairs: Pairs) -> list[Mapped] | None:
    """One ``edit`` per hunk (OpenCode's edit replaces one string)."""
    return [Mapped("edit", {"filePath": path, "oldString": o, "newString": n}) for o, n in pairs] or None


CALLS = Vocabulary(to_neutral=to_neutral, from_neutral=from_neutral)
