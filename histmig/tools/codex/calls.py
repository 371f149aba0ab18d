"""Codex's tool calls and the neutral vocabulary (histmig/toolkit/convert/calls.py; docs/specs/codex.md).

From Codex: ``exec_command``/``shell``/``shell_command``/``local_shell``/``local_shell_call``/
``container.exec`` -> Shell; ``apply_patch`` (free-form or ``{"input"|"patch"}``) -> Patch;
``update_plan`` -> Todos; anything else -> Other (a namespaced call is named ``<namespace>__<name>``).
To Codex: Shell -> ``exec_command {"cmd"}``; Edit / Write -> an ``apply_patch`` custom call with a
correct patch; Patch -> ``apply_patch``; Todos -> ``update_plan``; anything else keeps its name and
arguments as a function call.
"""
from __future__ import annotations

import os
import shlex
from typing import Any

from histmig.core.model import ToolCall
from histmig.toolkit.convert.calls import (Call, Edit, Mapped, Note, Other, Patch, Shell, Todo, Todos, Vocabulary,
                                           Write, as_dict)
from histmig.toolkit.convert.patch import FileOp, PatchError, hunk_from_strings, parse_patch, render_patch, to_rel

SHELL_TOOLS = {"exec_command", "shell", "shell_command", "local_shell", "local_shell_call", "container.exec"}
_SHELL_KEYS = ("cmd", "command", "workdir", "working_directory", "timeout_ms")


# ---- Codex -> neutral ------------------------------------------------------------------------------

def to_neutral(call: ToolCall, result: Any = None) -> Call:
    name = call.name
    if call.namespace and not name.startswith(call.namespace):
        name = f"{call.namespace}__{name}"
    arguments = call.arguments
    if name == "apply_patch":
        body = _patch_body(arguments)
        try:
            ops = parse_patch(body) if body is not None else None
        except PatchError:
            ops = None
        return Patch(name=name, arguments=arguments, body=body, ops=ops)
    args = as_dict(arguments)
    if name in SHELL_TOOLS and args is not None:
        return _shell(name, args)
    if name == "update_plan" and args is not None and isinstance(args.get("plan"), list):
        items = [Todo(str(step.get("step", "")), step.get("status")) for step in args["plan"] if isinstance(step, dict)]
        return Todos(name=name, arguments=args, items=items)
    return Other(name=name, arguments=arguments)


def shell_command(args: dict) -> str | None:
    """The shell text a Codex shell-like call ran, or None when the arguments are not understood."""
    cmd = args.get("cmd", args.get("command"))
    if isinstance(cmd, str):
        return cmd
    if isinstance(cmd, list) and all(isinstance(c, str) for c in cmd) and cmd:
        if len(cmd) == 3 and os.path.basename(cmd[0]) in ("bash", "sh", "zsh") and cmd[1] in ("-lc", "-c"):
            return cmd[2]
        return shlex.join(cmd)
    return None


def _shell(name: str, args: dict) -> Call:
    command = shell_command(args)
    if command is None:
        return Other(name=name, arguments=args, notes=[("approximated", f"{name} with unknown arguments kept as is")])
    workdir = args.get("workdir") or args.get("working_directory")
    return Shell(name=name, arguments=args, command=command,
                 workdir=workdir if isinstance(workdir, str) and workdir else None,
                 timeout_ms=args.get("timeout_ms"),
                 options={k: v for k, v in args.items() if k not in _SHELL_KEYS})


def _patch_body(arguments: Any) -> str | None:
    if isinstance(arguments, str):
        return arguments
    args = as_dict(arguments)
    if args:
        for key in ("input", "patch"):
            if isinstance(args.get(key), str):
                return args[key]
    return None


# ---- neutral -> Codex ------------------------------------------------------------------------------

def from_neutral(call: Call, cwd: str | None) -> list[Mapped]:
    """Always exactly one call: a Codex call id answers one call."""
    mapped = None
    if isinstance(call, Shell):
        mapped = _exec(call)
    elif isinstance(call, (Edit, Write)):
        mapped = _edit_to_patch(call, cwd)
    elif isinstance(call, Patch):
        mapped = _patch(call)
    elif isinstance(call, Todos):
        plan = [{"step": t.content, "status": t.status} for t in call.items]
        mapped = Mapped("update_plan", {"plan": plan}, [("mapped", f"{call.name} -> update_plan")])
    return [mapped or keep(call)]


def keep(call: Call) -> Mapped:
    """A call Codex has no form for: a function call under its own name, its arguments as they were."""
    args = as_dict(call.arguments) or {}
    notes = call.notes if isinstance(call, Other) and call.notes else [("mapped", f"{call.name} kept as a function call")]
    return Mapped(call.name, args if isinstance(call.arguments, dict) or args else call.arguments, notes)


def _exec(call: Shell) -> Mapped:
    args: dict[str, Any] = {"cmd": call.command}
    if call.workdir:
        args["workdir"] = call.workdir
    notes: list[Note] = [("mapped", f"{call.name} -> exec_command")]
    if call.timeout_ms is not None or call.options:
        notes.append(("approximated", f"{call.name} options (timeout, background) dropped"))
    return Mapped("exec_command", args, notes)


def _patch(call: Patch) -> Mapped | None:
    body = call.body if call.body is not None else render_patch(call.ops) if call.ops else None
    if body is None:
        return None
    return Mapped("apply_patch", body, [] if call.name == "apply_patch" else [("mapped", f"{call.name} -> apply_patch")])


def _edit_to_patch(call: Edit | Write, cwd: str | None) -> Mapped | None:
    """An ``apply_patch`` custom call with a correct patch for an edit or a write."""
    rel = to_rel(call.path, cwd)
    notes: list[Note] = [("mapped", f"{call.name} -> apply_patch")]
    if isinstance(call, Write):
        if call.content and not call.content.endswith("\n"):
            notes.append(("approximated", f"{call.name} without a final newline (apply_patch adds one)"))
        return Mapped("apply_patch", render_patch([FileOp("add", rel, content=call.content)]), notes)
    hunks = call.lines
    if hunks is None:
        if not call.changes:
            return None
        hunks = []
        for change in call.changes:
            if change.replace_all:
                notes.append(("approximated", "Edit replace_all (apply_patch changes one place)"))
            hunks.append(hunk_from_strings(change.old, change.new))
    return Mapped("apply_patch", render_patch([FileOp("update", rel, hunks=hunks)]), notes)


CALLS = Vocabulary(to_neutral, from_neutral)
