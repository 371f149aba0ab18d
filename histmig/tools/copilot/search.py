"""``histmig search`` over Copilot CLI sessions: ``session-state/<id>/events.jsonl``
(histmig/toolkit/search.py, docs/search.md)."""
from __future__ import annotations

from histmig.tools.copilot.adapter import events_path, records_from_lines
from histmig.toolkit.search import JsonlSource

SEARCH = JsonlSource(files=lambda ref: (events_path(ref),), records=records_from_lines)
