"""``histmig search`` over Pi sessions: one JSONL file each, every branch of it (a message typed on a
branch Pi no longer continues from is still found) (histmig/toolkit/search.py, docs/search.md)."""
from __future__ import annotations

from pathlib import Path

from histmig.tools.pi.entries import records_from_lines
from histmig.toolkit.search import JsonlSource

SEARCH = JsonlSource(files=lambda ref: (Path(ref.path),), records=records_from_lines)
