"""Claude Code's part of ``pack`` / ``unpack`` (docs/pack.md; histmig/toolkit/pack.py says what each hook does).

A session is its transcript ``projects/<slug(cwd)>/<id>.jsonl`` and its side folder ``<id>/``
(sub-agents, tool results), byte for byte. Claude Code lists sessions by project folder, so no rows
are needed; on unpack a re-homed session goes to the folder named after its re-homed cwd, the rule
``move`` uses (docs/specs/claude-code.md §2.1, §11).
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from histmig.core.paths import claude_slug
from histmig.toolkit.pack import Entry, Rebase, default_entry, first_json, inside


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
    return out


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
