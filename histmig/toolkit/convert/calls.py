"""Tool calls in each tool's own schema (docs/specs/pitfalls.md #23: rename *and* reshape the arguments).

Codex -> Claude: ``exec_command``/``shell``/``shell_command``/``local_shell`` -> ``Bash {command}``;
``apply_patch`` -> one ``Write`` per added file and one ``Edit`` per update hunk when the patch
allows, else kept as ``apply_patch {"input": patch}``; ``update_plan`` -> ``TodoWrite``.
Claude -> Codex: ``Bash`` -> ``exec_command {"cmd"}``; ``Edit``/``Write``/``MultiEdit`` -> an
``apply_patch`` custom call with a correct patch; ``TodoWrite`` -> ``update_plan``; anything else
keeps its name and arguments. Each mapping returns the loss notes it incurred.
"""
from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass, field
from typing import Any

import orjson

from histmig.toolkit.convert.patch import (FileOp, PatchError, hunk_from_strings, hunk_from_structured,
                                   parse_patch, render_patch, to_abs, to_rel)

SHELL_TOOLS = {"exec_command", "shell", "shell_command", "local_shell", "local_shell_call", "container.exec"}
EDIT_TOOLS = {"Edit", "Write", "MultiEdit"}
_ID_OK = re.compile(r"[^A-Za-z0-9_-]")


@dataclass
class Mapped:
    """One call in the target's schema. ``arguments`` is a dict, or a str for a free-form tool."""

    name: str
    arguments: Any
    notes: list[tuple[str, str]] = field(default_factory=list)   # (category, kind) loss notes


def as_dict(arguments: Any) -> dict | None:
    """JSON tool arguments as a dict (Codex stores them as a JSON string)."""
    if isinstance(arguments, dict):
        return arguments
    if isinstance(arguments, (str, bytes)):
        try:
            value = orjson.loads(arguments)
        except orjson.JSONDecodeError:
            return None
        return value if isinstance(value, dict) else None
    return None


def safe_tool_id(call_id: str | None, taken: set[str], fallback: str) -> str:
    """Anthropic tool_use ids must match ``[A-Za-z0-9_-]+`` and be unique in a conversation."""
    base = _ID_OK.sub("_", call_id or "") or fallback
    cand, n = base, 2
    while cand in taken:
        cand, n = f"{base}_{n}", n + 1
    taken.add(cand)
    return cand


def safe_tool_name(name: str) -> str:
    return (_ID_OK.sub("_", name) or "tool")[:64]


# ---- Codex -> Claude -----------------------------------------------------------------------------

def shell_command(name: str, args: dict) -> str | None:
    """The shell text a Codex shell-like call ran, or None when the arguments are not understood."""
    cmd = args.get("cmd", args.get("command"))
    if isinstance(cmd, str):
        return cmd
    if isinstance(cmd, list) and all(isinstance(c, str) for c in cmd) and cmd:
        if len(cmd) == 3 and os.path.basename(cmd[0]) in ("bash", "sh", "zsh") and cmd[1] in ("-lc", "-c"):
            return cmd[2]
        return shlex.join(cmd)
    return None


def codex_to_claude(name: str, arguments: Any, cwd: str | None) -> list[Mapped]:
    if name == "apply_patch":
        return _patch_to_claude(arguments, cwd)
    args = as_dict(arguments)
    if name in SHELL_TOOLS and args is not None:
        return [_shell_to_bash(name, args, cwd)]
    if name == "update_plan" and args is not None and isinstance(args.get("plan"), list):
        return [_plan_to_todos(args)]
    if args is None:
        return [Mapped(safe_tool_name(name), {"input": arguments if isinstance(arguments, str) else ""},
                       [("mapped", f"{name} (free-form input kept as 'input')")])]
    return [Mapped(safe_tool_name(name), args, [("mapped", f"{name} kept as is")])]


def _shell_to_bash(name: str, args: dict, cwd: str | None) -> Mapped:
    command = shell_command(name, args)
    if command is None:
        return Mapped(safe_tool_name(name), args, [("approximated", f"{name} with unknown arguments kept as is")])
    notes = [("mapped", f"{name} -> Bash")]
    workdir = args.get("workdir") or args.get("working_directory")
    if isinstance(workdir, str) and workdir and os.path.normpath(workdir) != os.path.normpath(cwd or ""):
        command = f"cd {shlex.quote(workdir)} && {command}"
        notes.append(("approximated", "shell workdir folded into the Bash command"))
    bash: dict[str, Any] = {"command": command}
    timeout = args.get("timeout_ms")
    if isinstance(timeout, int) and 0 < timeout <= 600000:
        bash["timeout"] = timeout
    return Mapped("Bash", bash, notes)


def _plan_to_todos(args: dict) -> Mapped:
    todos = []
    for step in args["plan"]:
        if isinstance(step, dict):
            text = str(step.get("step", ""))
            status = step.get("status") if step.get("status") in ("pending", "in_progress", "completed") else "pending"
            todos.append({"content": text, "status": status, "activeForm": text})
    return Mapped("TodoWrite", {"todos": todos}, [("mapped", "update_plan -> TodoWrite")])


def _patch_body(arguments: Any) -> str | None:
    if isinstance(arguments, str):
        return arguments
    args = as_dict(arguments)
    if args:
        for key in ("input", "patch"):
            if isinstance(args.get(key), str):
                return args[key]
    return None


def _patch_to_claude(arguments: Any, cwd: str | None) -> list[Mapped]:
    body = _patch_body(arguments)
    try:
        ops = parse_patch(body) if body is not None else None
    except PatchError:
        ops = None
    calls = _ops_to_edits(ops, cwd) if ops else None
    if not calls:
        return [Mapped("apply_patch", {"input": body if body is not None else ""},
                       [("approximated", "apply_patch kept under its own name (not expressible as Edit/Write)")])]
    if len(calls) > 1:
        calls[0].notes.append(("approximated", "apply_patch split into several Edit/Write calls (output repeated)"))
    return calls


def _ops_to_edits(ops: list[FileOp], cwd: str | None) -> list[Mapped] | None:
    calls: list[Mapped] = []
    for op in ops:
        path = to_abs(op.path, cwd)
        if op.kind == "add":
            calls.append(Mapped("Write", {"file_path": path, "content": op.content}, [("mapped", "apply_patch -> Write")]))
        elif op.kind == "update" and not op.move_to:
            for h in op.hunks:
                old, new = h.old(), h.new()
                if not old or old == new:
                    return None          # a pure insertion has no anchor Edit could use
                calls.append(Mapped("Edit", {"file_path": path, "old_string": old, "new_string": new},
                                    [("mapped", "apply_patch -> Edit")]))
        else:
            return None                  # delete and move have no Edit/Write form
    return calls


# ---- Claude -> Codex -----------------------------------------------------------------------------

def claude_to_codex(name: str, arguments: Any, cwd: str | None, structured: Any = None) -> Mapped:
    args = as_dict(arguments) or {}
    if name == "Bash" and isinstance(args.get("command"), str):
        notes = [("mapped", "Bash -> exec_command")]
        if set(args) - {"command", "description"}:
            notes.append(("approximated", "Bash options (timeout, background) dropped"))
        return Mapped("exec_command", {"cmd": args["command"]}, notes)
    if name in EDIT_TOOLS:
        patch, notes = edit_to_patch(name, args, cwd, structured)
        if patch is not None:
            return Mapped("apply_patch", patch, notes)
    if name == "apply_patch" and isinstance(args.get("input"), str):
        return Mapped("apply_patch", args["input"], [])
    if name == "TodoWrite" and isinstance(args.get("todos"), list):
        plan = [{"step": str(t.get("content", "")), "status": t.get("status", "pending")}
                for t in args["todos"] if isinstance(t, dict)]
        return Mapped("update_plan", {"plan": plan}, [("mapped", "TodoWrite -> update_plan")])
    return Mapped(name, args if isinstance(arguments, dict) or args else arguments,
                  [("mapped", f"{name} kept as a function call")])


def edit_to_patch(name: str, args: dict, cwd: str | None, structured: Any = None) -> tuple[str | None, list]:
    """A correct apply_patch body for an Edit / Write / MultiEdit input, or None."""
    path = args.get("file_path")
    if not isinstance(path, str) or not path:
        return None, []
    rel = to_rel(path, cwd)
    notes: list[tuple[str, str]] = [("mapped", f"{name} -> apply_patch")]
    if name == "Write":
        content = args.get("content")
        if not isinstance(content, str):
            return None, []
        if content and not content.endswith("\n"):
            notes.append(("approximated", "Write without a final newline (apply_patch adds one)"))
        return render_patch([FileOp("add", rel, content=content)]), notes
    edits = args.get("edits") if name == "MultiEdit" else [args]
    if not isinstance(edits, list) or not edits:
        return None, []
    hunks = _structured_hunks(structured)
    if hunks is None:
        hunks = []
        for e in edits:
            if not isinstance(e, dict) or not isinstance(e.get("old_string"), str) or not isinstance(e.get("new_string"), str):
                return None, []
            if e.get("replace_all"):
                notes.append(("approximated", "Edit replace_all (apply_patch changes one place)"))
            hunks.append(hunk_from_strings(e["old_string"], e["new_string"]))
    return render_patch([FileOp("update", rel, hunks=hunks)]), notes


def _structured_hunks(structured: Any) -> list | None:
    """Whole-line hunks from Claude's own diff of the edit, when the result recorded one."""
    patches = structured.get("structuredPatch") if isinstance(structured, dict) else None
    if not isinstance(patches, list) or not patches:
        return None
    hunks = [hunk_from_structured(p) for p in patches]
    return hunks if all(h is not None for h in hunks) else None
