"""Claude Code's part of ``pack`` / ``unpack`` (docs/pack.md; histmig/toolkit/pack.py says what each hook does).

A session is its transcript ``projects/<slug(cwd)>/<id>.jsonl`` and its side folder ``<id>/``
(sub-agents, tool results), byte for byte. Claude Code lists sessions by project folder, so no rows
are needed; on unpack a re-homed session goes to the folder named after its re-homed cwd, the rule
``move`` uses (docs/specs/claude-code.md §2.1, §11).

Beside the files go the project's entry of ``~/.claude.json`` (``projects[<cwd>]``: trust, allowed
tools, MCP servers; §8) and the session's prompt lines of ``history.jsonl`` (``sessionId``; §7), as
rows ``.claude.json`` ``{"key", "value"}`` and ``history.jsonl`` ``{"line"}``. On unpack the entry is
added under its re-homed key when ``~/.claude.json`` has no entry for that project (an entry already
there is left as it is), and the prompt lines are appended with their ``project`` re-homed (the field
``move`` rewrites), lines the file already has left out.
"""
from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from histmig.core.paths import claude_slug
from histmig.toolkit.pack import Append, Entry, Rebase, append_ops, default_entry, first_json, inside, session_lines

CONFIG, PROMPTS = ".claude.json", "history.jsonl"      # the manifest's row names


@dataclass(frozen=True)
class ProjectEntry:
    """A ``projects`` entry an unpacked session brings for ``~/.claude.json`` (merged by :func:`merge`)."""

    key: str
    value: Any


def entry(homes: Any, ref: Any) -> Entry:
    home = Path(homes.claude)
    out = default_entry(home, ref)
    side = Path(ref.path).with_suffix("")
    if out.files and side.is_dir():
        for dirpath, dirnames, filenames in os.walk(side):
            dirnames.sort()
            for name in sorted(filenames):
                p = Path(dirpath) / name
                rel = inside(home, p)
                if rel is not None and p.is_file() and not p.is_symlink():
                    out.files.append((p, rel))
    if out.files:
        key, value = _project(homes, ref.cwd)
        if key is not None:
            out.rows[CONFIG] = [{"key": key, "value": value}]
        lines = session_lines(Path(homes.claude) / PROMPTS, "sessionId", ref.id)
        if lines:
            out.rows[PROMPTS] = [{"line": line} for line in lines]
    return out


def _project(homes: Any, cwd: Any) -> tuple[str | None, Any]:
    """The ``projects`` entry of the session's project: the key that is its cwd, else the nearest
    folder above it (Claude keys a project by its git root; keys use ``/``, even on Windows)."""
    if not isinstance(cwd, str):
        return None, None
    projects = _projects(str(homes.claude_json), _stamp(homes.claude_json))
    want = cwd.replace("\\", "/").rstrip("/")
    best = None
    for key in projects:
        k = key.replace("\\", "/").rstrip("/")
        if (want == k or want.startswith(k + "/")) and (best is None or len(k) > len(best.replace("\\", "/"))):
            best = key
    return (best, projects[best]) if best is not None else (None, None)


def _stamp(path: Any) -> tuple:
    try:
        st = os.stat(path)
        return st.st_size, st.st_mtime_ns
    except OSError:
        return ()


@functools.lru_cache(maxsize=2)
def _projects(path: str, _stamp: tuple) -> dict[str, Any]:
    """``projects`` of ``~/.claude.json``, read once per pack (not once per session)."""
    from histmig.tools.claude_code.files import read_claude_json  # noqa: PLC0415
    cj = read_claude_json(SimpleNamespace(claude_json=path))      # it asks homes for the path only
    projects = cj.data.get("projects") if isinstance(cj.data, dict) else None
    return projects if isinstance(projects, dict) else {}


def rows(homes: Any, session: dict[str, Any], placed: dict[str, Path], rebase: Rebase) -> tuple[list[Any], bool]:
    """No database rows (Claude lists by folder): the project entry and the prompt lines, re-homed."""
    if not placed:
        return [], False
    packed = session.get("rows") or {}
    out: list[Any] = []
    for r in packed.get(CONFIG) or []:
        if isinstance(r.get("key"), str):
            key = r["key"]
            new = rebase(key.replace("\\", "/"))
            out.append(ProjectEntry(key if new is None else new, r.get("value")))
    lines = tuple(_rehomed_line(r["line"], rebase) for r in packed.get(PROMPTS) or [] if isinstance(r.get("line"), str))
    if lines:
        out.append(Append(str(Path(homes.claude) / PROMPTS), lines, {"tool": "claude-code", "id": session["id"]}))
    return out, False


def _rehomed_line(line: str, rebase: Rebase) -> bytes:
    """The prompt line with its ``project`` re-homed; every other byte as it was."""
    import orjson  # noqa: PLC0415
    raw = line.encode("utf-8", "surrogateescape")
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return raw
    old = obj.get("project") if isinstance(obj, dict) else None
    new = rebase(old) if isinstance(old, str) else None
    if new is None or new == old:
        return raw
    span = b'"project":' + orjson.dumps(old)
    if raw.count(span) == 1:
        return raw.replace(span, b'"project":' + orjson.dumps(new))
    obj["project"] = new
    return orjson.dumps(obj)


def merge(homes: Any, items: list[Any]) -> tuple[list[Any], dict[str, list[str]]]:
    """The prompt lines of every unpacked session: one append to ``history.jsonl``; the project entries:
    one edit of ``~/.claude.json`` (edits.add_projects_op), and the keys it adds (for undo)."""
    from histmig.tools.claude_code.edits import add_projects_op  # noqa: PLC0415
    ops = append_ops([a for a in items if isinstance(a, Append)], "prompt history of unpacked sessions")
    entries: dict[str, Any] = {}
    for e in items:
        if isinstance(e, ProjectEntry):
            entries.setdefault(e.key, e.value)
    op = add_projects_op(homes, entries) if entries else None
    if op is None:
        return ops, {}
    added = sorted(set(entries) - set(_projects(str(homes.claude_json), _stamp(homes.claude_json))))
    return ops + [op], {str(homes.claude_json): added}


def version(head: bytes) -> str | None:
    """The ``version`` field records carry: the Claude Code that wrote the session."""
    for obj in first_json(head):
        if isinstance(obj, dict) and isinstance(obj.get("version"), str):
            return obj["version"]
    return None


def place(homes: Any, rel: str, session: dict[str, Any], rebase: Rebase) -> Path:
    """``projects/<slug(old cwd)>/…`` goes to ``projects/<slug(new cwd)>/…`` when the cwd is re-homed."""
    parts = rel.split("/")
    cwd = session.get("cwd")
    new = rebase(cwd) if isinstance(cwd, str) else None
    if len(parts) >= 3 and parts[0] == "projects" and new is not None:
        parts[1] = claude_slug(os.path.realpath(new) if os.path.isdir(new) else new)
    return Path(homes.claude).joinpath(*parts)
