"""Header facts of one Pi session file, read from its first line only (cheap, for move and doctor)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from histmig.core.diagnostics import HistmigError
from histmig.jsonio.jsonl import Line, head_lines


def _first_line(path: Path) -> Line | None:
    try:
        lines = head_lines(path, max_lines=1, max_bytes=64 * 1024)
    except (HistmigError, OSError):
        return None
    return lines[0] if lines else None


def header(path: Path) -> dict[str, Any] | None:
    """The ``session`` header object, or None (not a Pi session, or unreadable)."""
    line = _first_line(path)
    obj = line.obj if line is not None and not line.blank and line.error is None else None
    return obj if isinstance(obj, dict) and obj.get("type") == "session" else None


def header_problem(path: Path) -> tuple[bytes, str] | None:
    """(line 1's bytes, why it does not parse) when the header line is broken (a duplicate ``cwd``
    key: docs/specs safety §6), else None (it parses, or the file cannot be read)."""
    line = _first_line(path)
    return (line.raw or b"", line.error or "") if line is not None and line.opaque else None


def header_cwd(path: Path) -> str | None:
    h = header(path)
    return h.get("cwd") if h and isinstance(h.get("cwd"), str) else None


def header_id(path: Path) -> str | None:
    h = header(path)
    return h.get("id") if h and isinstance(h.get("id"), str) else None
