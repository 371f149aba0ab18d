"""Header facts of one Pi session file, read from its first line only (cheap, for move and doctor)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from histmig.core.diagnostics import HistmigError
from histmig.jsonio.jsonl import head_lines


def header(path: Path) -> dict[str, Any] | None:
    """The ``session`` header object, or None (not a Pi session, or unreadable)."""
    try:
        lines = head_lines(path, max_lines=1, max_bytes=64 * 1024)
    except (HistmigError, OSError):
        return None
    obj = lines[0].obj if lines and not lines[0].blank and lines[0].error is None else None
    return obj if isinstance(obj, dict) and obj.get("type") == "session" else None


def header_problem(path: Path) -> tuple[bytes, str] | None:
    """(line 1's bytes, why it does not parse) when the header line is broken (a duplicate ``cwd``
    key: docs/specs safety §6), else None (it parses, or the file cannot be read)."""
    try:
        lines = head_lines(path, max_lines=1, max_bytes=64 * 1024)
    except (HistmigError, OSError):
        return None
    return (lines[0].raw or b"", lines[0].error or "") if lines and lines[0].opaque else None


def header_cwd(path: Path) -> str | None:
    h = header(path)
    return h.get("cwd") if h and isinstance(h.get("cwd"), str) else None


def header_id(path: Path) -> str | None:
    h = header(path)
    return h.get("id") if h and isinstance(h.get("id"), str) else None
