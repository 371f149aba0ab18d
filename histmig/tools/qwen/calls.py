"""Qwen Code's tool calls and the neutral vocabulary (histmig/toolkit/convert/calls.py; docs/qwen.md).

Qwen's own tools (the ``tools`` a 0.24.4 request offers): ``run_shell_command {command, description,
timeout, is_background, directory}``, ``read_file {file_path, offset, limit}``, ``write_file {file_path,
content}``, ``edit {file_path, old_string, new_string, replace_all}``, ``todo_write {todos: [{id, content,
status}]}``, ``glob {pattern, path}``, ``grep_search {pattern, glob, path, limit}``, ``list_directory
{path}``, ``web_fetch {url, prompt}``, ``agent {description, prompt, subagent_type}``.

From Qwen: ``run_shell_command`` -> Shell, ``edit`` -> Edit, ``write_file`` -> Write, ``read_file`` ->
Read, ``todo_write`` -> Todos, anything else -> Other. To Qwen: Shell -> ``run_shell_command {command}``
(a workdir other than the session's folded into the command); Patch -> one ``write_file`` per added
file and one ``edit`` per update hunk when the patch allows, else kept as ``apply_patch {"input"}``;
Edit -> one ``edit`` per change (Qwen has no multi-edit); Write / Read / Todos -> ``write_file`` /
``read_file`` / ``todo_write``. Other calls whose names are the common search and web tools (``Glob``,
``Grep``, ``LS``, ``WebFetch``, ``Task``/``Agent``) get Qwen's names and argument names; the rest keep
their (sanitised) name and arguments.
"""
from __future__ import annotations

from typing import Any

from histmig.core.model import ToolCall
from histmig.toolkit.convert import callmap
from histmig.toolkit.convert.callmap import TODO_STATUSES, Pairs, fold_workdir, patch_calls, read_args
from histmig.toolkit.convert.callmap import as_int as _int
from histmig.toolkit.convert.calls import (Call, Change, Edit, Mapped, Note, Other, Patch, Read, Shell, Todo, Todos,
                                           Vocabulary, Write, as_dict)
from histmig.toolkit.convert.patch import to_abs

# a kept call's name (as Claude and others spell the common tools) -> (Qwen name, {argument: Qwen argument})
OTHERS: dict[str, tuple[str, dict[str, str]]] = {
    "Glob": ("glob", {"pattern": "pattern", "path": "path"}),
    "Grep": ("grep_search", {"pattern": "pattern", "path": "path", "glob": "glob", "head_limit": "limit"}),
    "LS": ("list_directory", {"path": "path"}),
    "WebFetch": ("web_fetch", {"url": "url", "prompt": "prompt"}),
    "Agent": ("agent", {"description": "description", "prompt": "prompt", "subagent_type": "subagent_type"}),
    "Task": ("agent", {"description": "description", "prompt": "prompt", "subagent_type": "subagent_type"}),
}


# ---- Qwen -> neutral -------------------------------------------------------------------------------

def to_neutral(call: ToolCall, result: Any = None) -> Call:
    name, arguments = call.name, call.arguments
    args = as_dict(arguments) or {}
    path = args.get("file_path") if isinstance(args.get("file_path"), str) and args.get("file_path") else None
    if name == "run_shell_command" and isinstance(args.get("command"), str):
        timeout, description = args.get("timeout"), args.get("description")
        workdir = args.get("directory")
        return Shell(name=name, arguments=arguments, command=args["command"],
                     workdir=workdir if isinstance(workdir, str) and workdir else None,
                     timeout_ms=timeout if isinstance(timeout, int) else None,
                     description=description if isinstance(description, str) else None,
                     options={k: v for k, v in args.items() if k not in ("command", "description", "timeout", "directory")})
    if name == "edit" and path and isinstance(args.get("old_string"), str) and isinstance(args.get("new_string"), str):
        return Edit(name=name, arguments=arguments, path=path,
                    changes=[Change(args["old_string"], args["new_string"], bool(args.get("replace_all")))])
    if name == "write_file" and path and isinstance(args.get("content"), str):
        return Write(name=name, arguments=arguments, path=path, content=args["content"])
    if name == "read_file" and path:
        return Read(name=name, arguments=arguments, path=path, offset=_int(args.get("offset")), limit=_int(args.get("limit")))
    if name == "todo_write" and isinstance(args.get("todos"), list):
        return Todos(name=name, arguments=arguments, items=[Todo(str(t.get("content", "")), t.get("status", "pending"))
                                                            for t in args["todos"] if isinstance(t, dict)])
    return Other(name=name, arguments=arguments)


# ---- neutral -> Qwen -------------------------------------------------------------------------------

def from_neutral(call: Call, cwd: str | None) -> list[Mapped]:
    if isinstance(call, Shell):
        return [_shell(call, cwd)]
    if isinstance(call, Patch):
        return patch_calls(call, cwd, _write, _edits, "edit/write_file")
    if isinstance(call, Edit) and call.changes:
        path = to_abs(call.path, cwd)
        out = [Mapped("edit", {"file_path": path, "old_string": c.old, "new_string": c.new}
                      | ({"replace_all": True} if c.replace_all else {}), [("mapped", f"{call.name} -> edit")])
               for c in call.changes]
        if len(out) > 1:
            out[0].notes.append(("approximated", f"{call.name} split into one edit per change (output repeated)"))
        return out
    if isinstance(call, Write):
        return [Mapped("write_file", {"file_path": to_abs(call.path, cwd), "content": call.content},
                       [("mapped", f"{call.name} -> write_file")])]
    if isinstance(call, Read):
        return [Mapped("read_file", read_args(call, cwd, "file_path"), [("mapped", f"{call.name} -> read_file")])]
    if isinstance(call, Todos):
        todos = [{"id": str(i + 1), "content": t.content, "status": t.status if t.status in TODO_STATUSES else "pending"}
                 for i, t in enumerate(call.items)]
        return [Mapped("todo_write", {"todos": todos}, [("mapped", f"{call.name} -> todo_write")])]
    return [keep(call)]


def keep(call: Call) -> Mapped:
    """A call with no neutral form: a common tool under Qwen's name, else its own name and arguments."""
    args = as_dict(call.arguments)
    if args is not None and call.name in OTHERS:
        qname, names = OTHERS[call.name]
        out = {names[k]: v for k, v in args.items() if k in names}
        notes = [("mapped", f"{call.name} -> {qname}")]
        if len(out) < len(args):
            notes.append(("approximated", f"{call.name} arguments Qwen has no field for"))
        return Mapped(qname, out, notes)
    return callmap.keep(call)


def _shell(call: Shell, cwd: str | None) -> Mapped:
    notes: list[Note] = [("mapped", f"{call.name} -> run_shell_command")]
    args: dict[str, Any] = {"command": fold_workdir(call, cwd, notes, "the command")}
    if isinstance(call.timeout_ms, int) and call.timeout_ms > 0:
        args["timeout"] = call.timeout_ms
    if call.description is not None:
        args["description"] = call.description
    return Mapped("run_shell_command", args, notes)


def _write(path: str, content: str) -> Mapped:
    return Mapped("write_file", {"file_path": path, "content": content})


def _edits(path: str, pairs: Pairs) -> list[Mapped]:
    return [Mapped("edit", {"file_path": path, "old_string": old, "new_string": new}) for old, new in pairs]


CALLS = Vocabulary(to_neutral, from_neutral)
