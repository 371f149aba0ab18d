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

from typing import Any

from histmig.core.model import ToolCall
from histmig.toolkit.convert.callmap import TODO_STATUSES, Pairs, fold_workdir, keep, patch_calls, read_args
from histmig.toolkit.convert.callmap import as_int as _int
from histmig.toolkit.convert.calls import (Call, Change, Edit, Mapped, Note, Other, Patch, Read, Shell, Todo, Todos,
                                           Vocabulary, Write, as_dict)
from histmig.toolkit.convert.patch import FileOp, PatchError, hunk_from_structured, parse_patch, to_abs
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
        return patch_calls(call, cwd, _write, _edits, "Edit/Write")
    made = None
    if isinstance(call, Edit) and call.changes:
        made = _edit_call(call, cwd)
    elif isinstance(call, Write):
        made = Mapped("Write", {"file_path": to_abs(call.path, cwd), "content": call.content},
                      [("mapped", f"{call.name} -> Write")])
    elif isinstance(call, Read):
        made = Mapped("Read", read_args(call, cwd, "file_path"), [("mapped", f"{call.name} -> Read")])
    elif isinstance(call, Todos):
        made = Mapped("TodoWrite", {"todos": [_todo(t) for t in call.items]}, [("mapped", f"{call.name} -> TodoWrite")])
    return [made or keep(call)]


def _bash(call: Shell, cwd: str | None) -> Mapped:
    notes: list[Note] = [("mapped", f"{call.name} -> Bash")]
    bash: dict[str, Any] = {"command": fold_workdir(call, cwd, notes, "the Bash command")}
    if isinstance(call.timeout_ms, int) and 0 < call.timeout_ms <= MAX_TIMEOUT_MS:
        bash["timeout"] = call.timeout_ms
    if call.description is not None:
        bash["description"] = call.description
    return Mapped("Bash", bash, notes)


def _todo(t: Todo) -> dict:
    status = t.status if t.status in TODO_STATUSES else "pending"
    return {"content": t.content, "status": status, "activeForm": t.content if t.active_form is None else t.active_form}


def _edit_call(call: Edit, cwd: str | None) -> Mapped:
    path = to_abs(call.path, cwd)
    edits = [{"old_string": c.old, "new_string": c.new} | ({"replace_all": True} if c.replace_all else {})
             for c in call.changes]
    if len(edits) == 1:
        return Mapped("Edit", {"file_path": path, **edits[0]}, [("mapped", f"{call.name} -> Edit")])
    return Mapped("MultiEdit", {"file_path": path, "edits": edits}, [("mapped", f"{call.name} -> MultiEdit")])


def _write(path: str, content: str) -> Mapped:
    return Mapped("Write", {"file_path": path, "content": content})


def _edits(path: str, pairs: Pairs) -> list[Mapped]:
    return [Mapped("Edit", {"file_path": path, "old_string": old, "new_string": new}) for old, new in pairs]


CALLS = Vocabulary(to_neutral, from_neutral)
