"""``histmig search`` over mini-cc sessions: one JSONL file each (histmig/toolkit/search.py, docs/search.md)."""
from __future__ import annotations

from pathlib import Path

from histmig.tools.mini_cc.adapter import records_from_lines
from histmig.toolkit.search import JsonlSource

SEARCH = JsonlSource(files=lambda ref: (Path(ref.path),), records=records_from_lines)
