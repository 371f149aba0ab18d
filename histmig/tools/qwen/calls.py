"""Qwen Code's tool calls in the neutral vocabulary and back (docs/qwen.md).

Shaped as ``to_neutral`` / ``from_neutral`` so it slots into the per-tool ``calls`` hook being built on
toolkit/convert/calls.py; until then the neutral vocabulary is Claude Code's tool names and argument
shapes (what ``calls.codex_to_claude`` produces). Qwen's own tools (the ``tools`` a 0.24.4 request offers):
``run_shell_command {command, description, timeout, is_background, directory}``, ``read_file {file_path,
offset, limit}``, ``write_file {file_path, content}``, ``edit {file_path, old_string, new_string,
replace_all}``, ``glob {pattern, path}``, ``grep_search {pattern, glob, path, limit}``, ``list_directory
{path}``, ``todo_write {todos}``, ``web_fetch {url, prompt}``, ``agent {description, prompt,
subagent_type}``. A call Qwen has no tool for keeps its name and arguments.
"""
from __future__ import annotations

from typing import Any

from histmig.toolkit.convert import calls

# neutral (Claude) name -> (Qwen name, {neutral argument: Qwen argument}); arguments not named are dropped
TO_QWEN: dict[str, tuple[str, dict[str, str]]] = {
    "Bash": ("run_shell_command", {"command": "command", "description": "description", "timeout": "timeout",
                                   "run_in_background": "is_background"}),
    "Read": ("read_file", {"file_path": "file_path", "offset": "offset", "limit": "limit"}),
    "Write": ("write_file", {"file_path": "file_path", "content": "content"}),
    "Edit": ("edit", {"file_path": "file_path", "old_string": "old_string", "new_string": "new_string",
                      "replace_all": "replace_all"}),
    "Glob": ("glob", {"pattern": "pattern", "path": "path"}),
    "Grep": ("grep_search", {"pattern": "pattern", "path": "path", "glob": "glob", "head_limit": "limit"}),
    "LS": ("list_directory", {"path": "path"}),
    "TodoWrite": ("todo_write", {"todos": "todos"}),
    "WebFetch": ("web_fetch", {"url": "url", "prompt": "prompt"}),
    "Agent": ("agent", {"description": "description", "prompt": "prompt", "subagent_type": "subagent_type"}),
    "Task": ("agent", {"description": "description", "prompt": "prompt", "subagent_type": "subagent_type"}),
}
TO_NEUTRAL: dict[str, tuple[str, dict[str, str]]] = {
    q: (n, {v: k for k, v in m.items()}) for n, (q, m) in TO_QWEN.items() if n != "Task"}


def _rename(args: dict, names: dict[str, str]) -> tuple[dict, bool]:
    out = {names[k]: v for k, v in args.items() if k in names}
    return out, len(out) != len(args)


def from_neutral(name: str, arguments: Any) -> list[calls.Mapped]:
    """A neutral call as Qwen calls (MultiEdit becomes one ``edit`` per edit)."""
    args = calls.as_dict(arguments)
    if name == "MultiEdit" and args and isinstance(args.get("edits"), list):
        return [m for e in args["edits"] if isinstance(e, dict)
                for m in from_neutral("Edit", {"file_path": args.get("file_path"), **e})]
    if name in TO_QWEN and args is not None:
        qname, names = TO_QWEN[name]
        out, dropped = _rename(args, names)
        return [calls.Mapped(qname, out, [("approximated", f"{name} arguments Qwen has no field for")] if dropped else [])]
    return [calls.Mapped(calls.safe_tool_name(name), args if args is not None else {"input": arguments})]


def to_neutral(name: str, arguments: Any) -> calls.Mapped:
    """A Qwen call in the neutral vocabulary."""
    args = calls.as_dict(arguments)
    if name in TO_NEUTRAL and args is not None:
        nname, names = TO_NEUTRAL[name]
        out, dropped = _rename(args, names)
        return calls.Mapped(nname, out, [("approximated", f"{name} arguments without a neutral field")] if dropped else [])
    return calls.Mapped(name, args if args is not None else {"input": arguments})


def from_source(source: str, name: str, arguments: Any, cwd: str | None) -> list[calls.Mapped]:
    """A call of ``source`` as Qwen calls: Codex goes through its Claude mapping first (apply_patch becomes
    one write/edit per file), the Claude family is the neutral vocabulary already."""
    if source == "codex":
        out = []
        for m in calls.codex_to_claude(name, arguments, cwd):
            for q in from_neutral(m.name, m.arguments):
                notes = [n for n in m.notes if n[0] != "mapped"] + [("mapped", f"{name} -> {q.name}")]
                out.append(calls.Mapped(q.name, q.arguments, notes + q.notes))
        return out
    if source in ("claude-code", "mini-cc", "manifest"):
        return from_neutral(name, arguments)
    args = calls.as_dict(arguments)
    return [calls.Mapped(calls.safe_tool_name(name), args if args is not None else {"input": arguments})]
