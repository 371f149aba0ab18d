"""Mechanics several tools' ``calls`` hooks share when they map neutral calls to their own schema
(histmig/toolkit/convert/calls.py has the vocabulary; docs/convert.md the loss notes).

Each piece is the same logic under the target's names: the target passes its tool and argument names
(and the wording of its loss notes), never a tool of its own kind is named here.
"""
from __future__ import annotations

import os
import shlex
from typing import Any, Callable

from histmig.toolkit.convert.calls import Call, Mapped, Note, Other, Patch, Read, Shell, as_dict, safe_tool_name
from histmig.toolkit.convert.patch import FileOp, to_abs

TODO_STATUSES = ("pending", "in_progress", "completed")     # what the Claude-shaped todo tools accept


def as_int(value: Any) -> int | None:
    """An int argument, not a bool (JSON ``true`` is an int in Python)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def keep(call: Call) -> Mapped:
    """A call the target has no form for: its name made valid, its JSON arguments (free-form text as ``input``)."""
    args = as_dict(call.arguments)
    other = call.notes if isinstance(call, Other) else []
    if args is None:
        text = call.arguments if isinstance(call.arguments, str) else ""
        return Mapped(safe_tool_name(call.name), {"input": text},
                      other or [("mapped", f"{call.name} (free-form input kept as 'input')")])
    return Mapped(safe_tool_name(call.name), args, other or [("mapped", f"{call.name} kept as is")])


def fold_workdir(call: Shell, cwd: str | None, notes: list[Note], where: str) -> str:
    """The command, with a workdir other than the session's folded in as ``cd ... &&`` (noted in ``notes``;
    ``where`` names the command in the note: "the Bash command")."""
    if call.workdir and os.path.normpath(call.workdir) != os.path.normpath(cwd or ""):
        notes.append(("approximated", f"shell workdir folded into {where}"))
        return f"cd {shlex.quote(call.workdir)} && {call.command}"
    return call.command


def read_args(call: Read, cwd: str | None, path_key: str) -> dict[str, Any]:
    """A Read's arguments for a target whose read tool takes ``offset`` and ``limit`` as they are."""
    args: dict[str, Any] = {path_key: to_abs(call.path, cwd)}
    args |= {k: v for k, v in (("offset", call.offset), ("limit", call.limit)) if v is not None}
    return args


Pairs = list[tuple[str, str]]


def patch_calls(call: Patch, cwd: str | None, write: Callable[[str, str], Mapped],
                edits: Callable[[str, Pairs], list[Mapped] | None], forms: str) -> list[Mapped]:
    """A patch as the target's write calls (one per added file) and edit calls (``edits(path, [(old, new)])``
    per updated file) when the patch allows, else kept under its own name as ``{"input": patch}``.
    ``forms`` names the target's calls in the notes ("Edit/Write")."""
    calls = _ops(call.ops, cwd, write, edits) if call.ops else None
    if not calls:
        return [Mapped(safe_tool_name(call.name), {"input": call.body if call.body is not None else ""},
                       [("approximated", f"{call.name} kept under its own name (not expressible as {forms})")])]
    for c in calls:
        c.notes = [("mapped", f"{call.name} -> {c.name}")]
    if len(calls) > 1:
        calls[0].notes.append(("approximated", f"{call.name} split into several {forms} calls (output repeated)"))
    return calls


def _ops(ops: list[FileOp], cwd: str | None, write: Callable[[str, str], Mapped],
         edits: Callable[[str, Pairs], list[Mapped] | None]) -> list[Mapped] | None:
    calls: list[Mapped] = []
    for op in ops:
        path = to_abs(op.path, cwd)
        if op.kind == "add":
            calls.append(write(path, op.content))
        elif op.kind == "update" and not op.move_to:
            pairs = [(h.old(), h.new()) for h in op.hunks]
            if any(not old or old == new for old, new in pairs):
                return None          # a pure insertion has no anchor an edit could use
            made = edits(path, pairs)
            if made is None:
                return None
            calls.extend(made)
        else:
            return None              # delete and move have no write/edit form
    return calls
