"""Pi's own tools (``bash {command, timeout s}``, ``read {path, offset, limit}``, ``write {path, content}``,
``edit {path, edits: [{oldText, newText}]}``, ``grep``, ``find``, ``ls``) and the neutral call vocabulary
(docs/pi.md, "convert").

The neutral vocabulary is Claude Code's (``Bash``, ``Read``, ``Write``, ``Edit``, ``MultiEdit``): the one
histmig/toolkit/convert/calls.py already maps Codex calls into. ``from_neutral`` maps such a call to
Pi's tool and argument shape, ``to_neutral`` maps a Pi call back. Shaped so a per-tool ``calls`` hook can
take them over.
"""
from __future__ import annotations

from typing import Any

from histmig.toolkit.convert.calls import Mapped, as_dict, codex_to_claude, safe_tool_name


def from_neutral(name: str, arguments: Any) -> Mapped:
    """A Claude-vocabulary call as Pi's own."""
    args = as_dict(arguments)
    if args is None:
        return Mapped(safe_tool_name(name), {"input": arguments if isinstance(arguments, str) else ""},
                      [("mapped", f"{name} (free-form input kept as 'input')")])
    if name == "Bash" and isinstance(args.get("command"), str):
        out: dict[str, Any] = {"command": args["command"]}
        notes = [("mapped", "Bash -> bash")]
        if isinstance(args.get("timeout"), int) and args["timeout"] > 0:
            out["timeout"] = max(1, args["timeout"] // 1000)       # Claude: ms, Pi: seconds
        if set(args) - {"command", "description", "timeout"}:
            notes.append(("approximated", "Bash options (background) dropped"))
        return Mapped("bash", out, notes)
    if name == "Read" and isinstance(args.get("file_path"), str):
        out = {"path": args["file_path"], **{k: args[k] for k in ("offset", "limit") if isinstance(args.get(k), int)}}
        return Mapped("read", out, [("mapped", "Read -> read")])
    if name == "Write" and isinstance(args.get("file_path"), str) and isinstance(args.get("content"), str):
        return Mapped("write", {"path": args["file_path"], "content": args["content"]}, [("mapped", "Write -> write")])
    if name in ("Edit", "MultiEdit") and isinstance(args.get("file_path"), str):
        edits = args.get("edits") if name == "MultiEdit" else [args]
        pairs = [{"oldText": e["old_string"], "newText": e["new_string"]} for e in edits or []
                 if isinstance(e, dict) and isinstance(e.get("old_string"), str) and isinstance(e.get("new_string"), str)]
        if pairs and len(pairs) == len(edits):
            notes = [("mapped", f"{name} -> edit")]
            if any(isinstance(e, dict) and e.get("replace_all") for e in edits):
                notes.append(("approximated", "Edit replace_all (Pi's edit changes one place)"))
            return Mapped("edit", {"path": args["file_path"], "edits": pairs}, notes)
    return Mapped(safe_tool_name(name), args, [("mapped", f"{name} kept as is")])


def to_neutral(name: str, arguments: Any) -> Mapped:
    """A Pi call in the Claude vocabulary (what a Claude Code or Codex writer maps from)."""
    args = as_dict(arguments) or {}
    if name == "bash" and isinstance(args.get("command"), str):
        out: dict[str, Any] = {"command": args["command"]}
        if isinstance(args.get("timeout"), (int, float)) and args["timeout"] > 0:
            out["timeout"] = min(int(args["timeout"] * 1000), 600000)
        return Mapped("Bash", out, [("mapped", "bash -> Bash")])
    if name == "read" and isinstance(args.get("path"), str):
        return Mapped("Read", {"file_path": args["path"], **{k: args[k] for k in ("offset", "limit") if k in args}},
                      [("mapped", "read -> Read")])
    if name == "write" and isinstance(args.get("path"), str):
        return Mapped("Write", {"file_path": args["path"], "content": args.get("content", "")}, [("mapped", "write -> Write")])
    if name == "edit" and isinstance(args.get("path"), str) and isinstance(args.get("edits"), list):
        edits = [{"old_string": e.get("oldText", ""), "new_string": e.get("newText", "")}
                 for e in args["edits"] if isinstance(e, dict)]
        if len(edits) == 1:
            return Mapped("Edit", {"file_path": args["path"], **edits[0]}, [("mapped", "edit -> Edit")])
        return Mapped("MultiEdit", {"file_path": args["path"], "edits": edits}, [("mapped", "edit -> MultiEdit")])
    return Mapped(name, args if args or isinstance(arguments, dict) else arguments, [("mapped", f"{name} kept as is")])


def to_pi(source: str, name: str, arguments: Any, cwd: str | None) -> list[Mapped]:
    """A call from a session of ``source`` as Pi's own call(s)."""
    if source == "pi":
        return [Mapped(name, arguments if isinstance(arguments, dict) else {"input": arguments})]
    if source == "codex":
        out = []
        for m in codex_to_claude(name, arguments, cwd):
            pi = from_neutral(m.name, m.arguments)
            out.append(Mapped(pi.name, pi.arguments, m.notes + [n for n in pi.notes if n[0] != "mapped"]))
        return out
    return [from_neutral(name, arguments)]
