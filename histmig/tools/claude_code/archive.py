"""What ``histmig archive`` keeps of a Claude Code session: the transcript, everything in its ``<sid>/``
folder (sub-agent transcripts, tool results) and 2.0-era ``agent-*.jsonl`` files that name it. Claude's
``cleanupPeriodDays`` sweep deletes all of these (docs/specs/claude-code.md §13)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from histmig.tools.base import files_below
from histmig.tools.claude_code.listing import legacy_agents


def files(ref: Any) -> list[Path]:
    main = Path(ref.path)
    legacy = [p for p, owner in legacy_agents(main.parent).items() if owner == main.stem]
    return [main, *files_below(main.parent / main.stem), *legacy]
