"""Tool calls in Gemini CLI's own schema (docs/specs/pitfalls.md #23: rename *and* reshape the arguments).

Shaped as the neutral call vocabulary the ``calls`` hook will take (``to_neutral`` / ``from_neutral``);
until that lands, convert's Gemini writer uses :func:`to_gemini`. The neutral kinds: ``shell {command}``,
``read {path, start, end}``, ``write {path, content}``, ``edit {path, old, new, all}``, ``glob {pattern,
path}``, ``grep {pattern, path, include}``, ``list {path}``, ``todo {todos}``, ``search {query}``,
``fetch {prompt}``. Gemini's names and parameters are those of 0.61.0's tool declarations
(``run_shell_command``, ``read_file`` ...; docs/gemini.md).
"""
from __future__ import annotations

from typing import Any

from histmig.toolkit.convert.calls import as_dict, codex_to_claude, shell_command

# neutral kind -> (Gemini tool, {neutral key: Gemini parameter})
GEMINI = {
    "shell": ("run_shell_command", {"command": "command", "description": "description"}),
    "read": ("read_file", {"path": "file_path", "start": "start_line", "end": "end_line"}),
    "write": ("write_file", {"path": "file_path", "content": "content"}),
    "edit": ("replace", {"path": "file_path", "old": "old_string", "new": "new_string", "all": "allow_multiple"}),
    "glob": ("glob", {"pattern": "pattern", "path": "dir_path"}),
    "grep": ("grep_search", {"pattern": "pattern", "path": "dir_path", "include": "include_pattern"}),
    "list": ("list_directory", {"path": "dir_path"}),
    "todo": ("write_todos", {"todos": "todos"}),
    "search": ("google_web_search", {"query": "query"}),
    "fetch": ("web_fetch", {"prompt": "prompt"}),
}
_FROM_GEMINI = {tool: (kind, {v: k for k, v in keys.items()}) for kind, (tool, keys) in GEMINI.items()}

# Claude Code's tools -> (neutral kind, {Claude key: neutral key})
_CLAUDE = {
    "Bash": ("shell", {"command": "command", "description": "description"}),
    "Read": ("read", {"file_path": "path"}),
    "Write": ("write", {"file_path": "path", "content": "content"}),
    "Edit": ("edit", {"file_path": "path", "old_string": "old", "new_string": "new", "replace_all": "all"}),
    "Glob": ("glob", {"pattern": "pattern", "path": "path"}),
    "Grep": ("grep", {"pattern": "pattern", "path": "path", "glob": "include"}),
    "LS": ("list", {"path": "path"}),
    "WebSearch": ("search", {"query": "query"}),
}
SHELL_NAMES = {"exec_command", "shell", "shell_command", "local_shell", "local_shell_call", "container.exec"}


def to_neutral(name: str, arguments: Any) -> tuple[str, dict] | None:
    """(kind, neutral arguments) for a call of Codex, Claude Code or Gemini CLI; None when not understood."""
    args = as_dict(arguments)
    if args is None:
        return None
    if name in SHELL_NAMES:
        cmd = shell_command(name, args)
        return ("shell", {"command": cmd}) if cmd is not None else None
    if name == "Read":
        out = {"path": args.get("file_path")}
        if isinstance(args.get("offset"), int):
            out["start"] = args["offset"]
            if isinstance(args.get("limit"), int):
                out["end"] = args["offset"] + args["limit"] - 1
        return "read", out
    if name == "TodoWrite" and isinstance(args.get("todos"), list):
        return "todo", {"todos": [{"description": t.get("content", ""), "status": t.get("status", "pending")}
                                  for t in args["todos"] if isinstance(t, dict)]}
    if name == "WebFetch":
        return "fetch", {"prompt": f"{args.get('prompt', '')} {args.get('url', '')}".strip()}
    table = _CLAUDE.get(name) or _FROM_GEMINI.get(name)
    if table is None:
        return None
    kind, keys = table
    return kind, {keys[k]: v for k, v in args.items() if k in keys}


def from_neutral(kind: str, args: dict) -> tuple[str, dict]:
    """Gemini CLI's tool and arguments for a neutral call."""
    tool, keys = GEMINI[kind]
    return tool, {keys[k]: v for k, v in args.items() if k in keys and v is not None}


def to_gemini(name: str, arguments: Any, cwd: str | None = None) -> tuple[str, Any, bool]:
    """(name, args, mapped): a call in Gemini's schema; not understood -> its name and arguments as a dict.
    A Codex ``apply_patch`` of one file becomes ``write_file`` or ``replace`` (by way of Claude's Write/Edit,
    toolkit/convert/calls.py); a patch of several files keeps its name and text (``{"input": patch}``)."""
    if name == "apply_patch":
        edits = codex_to_claude(name, arguments, cwd)
        if len(edits) == 1 and edits[0].name in ("Write", "Edit"):
            name, arguments = edits[0].name, edits[0].arguments
    neutral = to_neutral(name, arguments)
    if neutral is not None:
        tool, args = from_neutral(*neutral)
        return tool, args, tool != name
    args = as_dict(arguments)
    return name, args if args is not None else {"input": arguments}, False
