"""What a tool's ``search`` hook gives ``histmig search`` (histmig/verbs/search; docs/search.md).

A tool whose sessions are JSON Lines files declares a :class:`JsonlSource`: which files hold a session
and how its lines become records. The verb then reads those files as raw bytes, looks for the pattern's
plain part in the bytes first, and hands only the lines that contain it to ``records``: a session file
without the phrase is never parsed. A tool without the hook (one JSON document, an SQLite database) is
searched through its adapter's read, record by record. Names no tool.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable


@dataclass(frozen=True)
class JsonlSource:
    """``files(ref)``: the JSONL files of one session (its transcript, then e.g. its sub-agents');
    ``records(lines)``: those ``jsonio.jsonl.Line`` objects as common-model records (one line may be
    handed alone: a record that spans several lines is read from the lines given)."""

    files: Callable[[Any], Iterable[Path]]
    records: Callable[[Iterable[Any]], Iterable[Any]]
    # ``locate(homes, index)``: every session in the listing's order as ``(ref, complete)`` without reading
    # what a search does not need (message counts; titles of sessions that do not match): the ref has
    # its id, path, size and ``updated`` as the listing gives them, and ``complete(ref, first)`` (None
    # when the ref is already the listing's) fills the rest of what search shows (``cwd``, ``title``)
    # as the listing computes them (``first``: the file's first bytes the search just read, or None).
    # ``index``: the scan index (None: not used); a hit's ref may hold only the stored fields search uses.
    locate: Callable[[Any, Any], Iterable[tuple[Any, Callable[[Any], None] | None]]] | None = None
