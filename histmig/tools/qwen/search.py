"""``histmig search`` over Qwen Code sessions: one JSONL file each (histmig/toolkit/search.py, docs/search.md)."""
from __future__ import annotations

from pathlib import Path

from histmig.tools.qwen.adapter import records_from_lines
from histmig.toolkit.search import JsonlSource

SEARCH = JsonlSource(files=lambda ref: (Path(ref.path),), records=records_from_lines)
