"""Gemini CLI's tool calls and the neutral vocabulary (histmig/toolkit/convert/calls.py; docs/gemini.md).

Gemini 0.61.0's tools and parameters (its tool declarations): ``run_shell_command {command, description,
dir_path, is_background}``, ``read_file {file_path, start_line, end_line}``, ``write_file {file_path,
content}``, ``replace {file_path, old_string, new_string, allow_multiple}``, ``write_todos {todos:
[{description, status}]}``; the rest (``glob``, ``grep_search``, ``list_directory``, ``web_fetch`` ...) have
no neutral form.

From Gemini: those five -> Shell / Read / Write / Edit / Todos; anything else -> Other.
To Gemini: Shell -> ``run_shell_command`` (a workdir other than the session's as ``dir_path``); Read /
Write -> ``read_file`` / ``write_file`` (paths made absolute against the session's cwd); Edit -> one
``replace`` per change (or per hunk of a recorded diff); Patch -> ``write_file`` per added file and
``replace`` per update hunk when the patch parses and deletes nothing, else kept as ``apply_patch
{"input": patch}``; Todos -> ``write_todos``; anything else keeps its name and arguments.
"""
from __future__ import annotations

from typing import Any

from histmig.core.model import ToolCall
from histmig.toolkit.convert.callmap import as_int as _int
from histmig.toolkit.convert.calls import (Call, Change, Edit, Mapped, Note, Other, Patch, Read, Shell, Todo, Todos,
                                           Vocabulary, Write, as_dict)
from histmig.toolkit.convert.patch import to_abs

STATUSES = ("pending", "in_progress", "completed", "cancelled")
_SHELL_KEYS = ("command", "description", "dir_path")


# ---- Gemini -> neutral -----------------------------------------------------------------------------

def to_neutral(call: ToolCall, result: Any = None) -> Call:
    name, arguments = call.name, call.arguments
    args = as_dict(arguments) or {}
    path = args.get("file_path") if isinstance(args.get("file_path"), str) and args.get("file_path") else None
    made: Call | None = None
    if name == "run_shell_command" and isinstance(args.get("command"), str):
        made = Shell(name=name, arguments=arguments, command=args["command"],
                     workdir=args.get("dir_path") if isinstance(args.get("dir_path"), str) else None,
                     description=args.get("description") if isinstance(args.get("description"), str) else None,
                     options={k: v for k, v in args.items() if k not in _SHELL_KEYS})
    elif name == "read_file" and path:
        start, end = _int(args.get("start_line")), _int(args.get("end_line"))
        made = Read(name=name, arguments=arguments, path=path, offset=start,
                    limit=end - start + 1 if start is not None and end is not None and end >= start else None)
    elif name == "write_file" and path and isinstance(args.get("content"), str):
        made = Write(name=name, arguments=arguments, path=path, content=args["content"])
    elif name == "replace" and path and isinstance(args.get("old_string"), str) \
            and isinstance(args.get("new_string"), str):
        made = Edit(name=name, arguments=arguments, path=path,
                    changes=[Change(args["old_string"], args["new_string"], bool(args.get("allow_multiple")))])
    elif name == "write_todos" and isinstance(args.get("todos"), list):
        made = Todos(name=name, arguments=arguments, items=[
            Todo(str(t.get("description", "")), t.get("status", "pending")) for t in args["todos"] if isinstance(t, dict)])
    return made or Other(name=name, arguments=arguments)


# ---- neutral -> Gemini -----------------------------------------------------------------------------

def from_neutral(call: Call, cwd: str | None) -> list[Mapped]:
    made: list[Mapped] | None = None
    if isinstance(call, Shell):
        made = [_shell(call, cwd)]
    elif isinstance(call, Read):
        args: dict[str, Any] = {"file_path": to_abs(call.path, cwd)}
        if call.offset is not None:
            args["start_line"] = call.offset
            if call.limit is not None:
                args["end_line"] = call.offset + call.limit - 1
        made = [Mapped("read_file", args, _renamed(call, "read_file"))]
    elif isinstance(call, Write):
        made = [Mapped("write_file", {"file_path": to_abs(call.path, cwd), "content": call.content},
                       _renamed(call, "write_file"))]
    elif isinstance(call, Edit):
        made = _edit(call, call.path, cwd)
    elif isinstance(call, Patch):
        made = _patch(call, cwd)
    elif isinstance(call, Todos):
        todos = [{"description": t.content, "status": t.status if t.status in STATUSES else "pending"}
                 for t in call.items]
        made = [Mapped("write_todos", {"todos": todos}, _renamed(call, "write_todos"))]
    return made or [keep(call)]


def keep(call: Call) -> Mapped:
    """A call Gemini has no form for: its own name, its arguments as a JSON object."""
    args = as_dict(call.arguments)
    notes = call.notes if isinstance(call, Other) and call.notes else [("mapped", f"{call.name} kept as is")]
    return Mapped(call.name, args if args is not None else {"input": call.arguments}, notes)


def _renamed(call: Call, name: str) -> list[Note]:
    return [] if call.name == name else [("mapped", f"{call.name} -> {name}")]


def _shell(call: Shell, cwd: str | None) -> Mapped:
    args: dict[str, Any] = {"command": call.command}
    if call.description:
        args["description"] = call.description
    if call.workdir and call.workdir != cwd:
        args["dir_path"] = call.workdir
    notes = _renamed(call, "run_shell_command")
    if call.timeout_ms is not None or (call.options and call.name != "run_shell_command"):
        notes.append(("approximated", f"{call.name} options (timeout, background) dropped"))
    if call.name == "run_shell_command":
        args.update(call.options)
    return Mapped("run_shell_command", args, notes)


def _edit(call: Edit, path: str, cwd: str | None) -> list[Mapped] | None:
    pairs = [(c.old, c.new, c.replace_all) for c in call.changes]
    if not pairs and call.lines:
        pairs = [(h.old(), h.new(), False) for h in call.lines]
    if not pairs:
        return None
    out = []
    for old, new, every in pairs:
        args: dict[str, Any] = {"file_path": to_abs(path, cwd), "old_string": old, "new_string": new}
        if every:
            args["allow_multiple"] = True
        out.append(Mapped("replace", args, _renamed(call, "replace")))
    if len(out) > 1:
        out[0].notes.append(("approximated", f"{call.name} split into {len(out)} replace calls"))
    return out


def _patch(call: Patch, cwd: str | None) -> list[Mapped] | None:
    if not call.ops or any(op.kind == "delete" or op.move_to for op in call.ops):
        return [Mapped("apply_patch", {"input": call.body}, [("mapped", f"{call.name} kept as apply_patch")])] \
            if call.body is not None else None
    out: list[Mapped] = []
    for op in call.ops:
        if op.kind == "add":
            out.append(Mapped("write_file", {"file_path": to_abs(op.path, cwd), "content": op.content},
                              [("mapped", f"{call.name} -> write_file")]))
        else:
            for h in op.hunks:
                out.append(Mapped("replace", {"file_path": to_abs(op.path, cwd), "old_string": h.old(),
                                              "new_string": h.new()}, [("mapped", f"{call.name} -> replace")]))
    if len(out) > 1:
        out[0].notes.append(("approximated", f"{call.name} split into {len(out)} calls"))
    return out or None


CALLS = Vocabulary(to_neutral, from_neutral)
