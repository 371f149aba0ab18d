"""Cheap listing of Claude-style project folders (``projects/<folder>/<uuid>.jsonl``, used by Claude
Code and mini-cc), and the ref states every format reports the same way.

A listing reads at most the first and last 64 KB of a file, as Claude's own lite listing does, so
scanning thousands of sessions never reads them whole.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Callable, Iterable

from histmig.core.diagnostics import HistmigError
from histmig.jsonio.jsonl import Line, head_lines, read_lines, tail_lines
from histmig.core.model import Record, SessionRef

UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", re.I)
HEAD_TAIL = 64 * 1024                      # Claude's lite listing reads 64 KB at each end (Tr=65536)
Parse = Callable[[Iterable[Line]], Iterable[Record]]


def subdirs(root: Path) -> list[Path]:
    """Real folders directly below ``root`` (symlinked ones are not entered), sorted."""
    try:
        return sorted(d for d in root.iterdir() if d.is_dir() and not d.is_symlink())
    except OSError:
        return []


def session_files(folder: Path) -> list[Path]:
    """What Claude lists in a project folder: ``<uuid>.jsonl`` files (§5.1)."""
    try:
        return sorted(p for p in folder.iterdir()
                      if p.name.endswith(".jsonl") and UUID_RE.match(p.name[:-6]) and not p.is_dir())
    except OSError:
        return []


def scan_ends(path: Path, size: int, parse: Parse) -> tuple[list[Record], list[Record], bool]:
    """Records of the head and the tail (each ~64 KB) and whether that was the whole file; a
    small file is read once, whole."""
    if size <= 2 * HEAD_TAIL:
        return list(parse(read_lines(path))), [], True
    head_l = head_lines(path, max_lines=10**6, max_bytes=HEAD_TAIL)
    end = max((ln.offset + (ln.length or 0) for ln in head_l), default=0)
    tail_l = [ln for ln in tail_lines(path, max_bytes=HEAD_TAIL) if ln.offset >= end]
    return list(parse(head_l)), list(parse(tail_l)), False


def head_value(path: Path, key: str, parse: Parse, *, max_lines: int = 10**6) -> Any:
    """The first top-level string ``key`` in the first 64 KB of a file, or None (also when unreadable)."""
    from histmig.tools.claude_family.blocks import first_value
    try:
        return first_value(parse(head_lines(path, max_lines=max_lines, max_bytes=HEAD_TAIL)), key)
    except (HistmigError, OSError):
        return None


# ---- ref states -------------------------------------------------------------------------------

def mark_unreadable(ref: SessionRef, e: Exception) -> SessionRef:
    """A file that cannot be listed stays in the listing, with why."""
    ref.error = e.describe() if isinstance(e, HistmigError) else (getattr(e, "strerror", None) or str(e))
    ref.state.append("unreadable")
    return ref


def broken_lines_state(records: Iterable[Record]) -> list[str]:
    """``["N broken line(s)"]`` for the opaque records, or [] when every line parsed."""
    broken = sum(1 for r in records if r.opaque)
    return [f"{broken} broken line" + ("s" if broken != 1 else "")] if broken else []
