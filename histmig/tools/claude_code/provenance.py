"""Where a converted Claude Code session says where it came from: a first line
``{"type":"histmig-provenance",...}`` (the loader skips record types it does not know), and where
converted transcripts live: the project folder named by the cwd's slug."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from histmig.core.paths import claude_slug
from histmig.toolkit.convert.provenance import glob_files, line_marker_of

marker_of = line_marker_of


def folders(homes: Any, cwd: str | None) -> list[Path]:
    root = Path(homes.claude) / "projects"
    return [root / claude_slug(os.path.realpath(cwd))] if cwd else []


files = glob_files("*.jsonl")
