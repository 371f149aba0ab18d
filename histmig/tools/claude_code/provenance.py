"""Where a converted Claude Code session records its source and where converted copies live: the
Claude-style first line and slug folder (tools/claude_family/provenance.py)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from histmig.tools.claude_family.provenance import files, marker_of, slug_folders

__all__ = ["files", "folders", "marker_of"]


def folders(homes: Any, cwd: str | None) -> list[Path]:
    return slug_folders(homes.claude, cwd)
