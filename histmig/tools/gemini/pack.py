"""Gemini CLI's part of ``pack`` / ``unpack`` (docs/pack.md; histmig/toolkit/pack.py says what each hook does).

A session is its chat file ``tmp/<slug>/chats/session-….jsonl`` and the folder's ownership marker
``tmp/<slug>/.project_root`` (the project path: docs/specs/gemini.md), byte for byte; ``--rehome``
rewrites the marker's path. The registry ``projects.json`` is not carried: Gemini CLI finds the folder
by its marker (docs/gemini.md).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from histmig.toolkit.pack import Entry, default_entry, inside
from histmig.tools.gemini.files import MARKER


def entry(homes: Any, ref: Any) -> Entry:
    out = default_entry(homes.gemini, ref)
    marker = Path(ref.path).parent.parent / MARKER
    rel = inside(homes.gemini, marker)
    if out.files and rel is not None and marker.is_file():
        out.files.append((marker, rel))
    return out


def rule(rel: str):
    return ("patch", _marker) if rel.endswith("/" + MARKER) else None


def _marker(data: bytes, pm: Any) -> list[Any]:
    from histmig.core.plan import Patch  # noqa: PLC0415 (pack, which only reads, never loads the plan model)
    text = data.decode("utf-8", "surrogateescape")
    path = text.strip()
    new = pm.rebase(path)
    if new is None or new == path:
        return []
    start = text.index(path)
    return [Patch(len(text[:start].encode("utf-8", "surrogateescape")), path.encode("utf-8", "surrogateescape"),
                  new.encode("utf-8", "surrogateescape"))]
