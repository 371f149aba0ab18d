"""Where a converted Claude Code session records its source and where converted copies live: the
Claude-style first line and slug folder (tools/claude_family/provenance.py)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from histmig.tools.claude_family.provenance import files, marker_of, slug_folders

__all__ = ["FOLDERS_OF_CWD", "files", "folders", "marker_of"]

FOLDERS_OF_CWD = True      # folders(homes, cwd) is the slug of cwd's realpath: the run's index asks once per cwd


def folders(homes: Any, cwd: str | None) -> list[Path]:
    return slug_folders(homes.claude, cwd)
