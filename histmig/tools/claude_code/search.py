"""``histmig search`` over Claude Code transcripts: the session's file, then its sub-agents' files
(histmig/toolkit/search.py, docs/search.md)."""
from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any, Iterator

from histmig.tools.claude_code.listing import is_agent_file, legacy_agents, subagent_files
from histmig.tools.claude_code.records import records_from_lines
from histmig.toolkit.search import JsonlSource


@functools.lru_cache(maxsize=16)
def _legacy(folder: Path) -> dict:
    # the 2.0-era agent files of a project folder, listed once per folder, not once per session
    return legacy_agents(folder)


def files(ref: Any) -> Iterator[Path]:
    path = Path(ref.path)
    yield path
    if not is_agent_file(path):
        legacy = _legacy(path.parent)
        if legacy or os.path.isdir(path.parent / path.stem):      # one stat, not a walk, for most sessions
            yield from subagent_files(path, legacy)


SEARCH = JsonlSource(files=files, records=records_from_lines)
