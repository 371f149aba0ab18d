"""Where a converted Claude-style transcript (Claude Code, mini-cc) says where it came from: a first
line ``{"type":"histmig-provenance",...}`` (their loaders skip record types they do not know), and
where converted transcripts live: the project folder named by the cwd's slug under ``projects/``."""
from __future__ import annotations

import os
from pathlib import Path

from histmig.core.paths import claude_slug
from histmig.toolkit.convert.provenance import glob_files, line_marker_of

marker_of = line_marker_of
files = glob_files("*.jsonl")


def slug_folders(home: str | os.PathLike, cwd: str | None) -> list[Path]:
    """The one project folder of ``home`` where a converted session of ``cwd`` would be."""
    return [Path(home) / "projects" / claude_slug(os.path.realpath(cwd))] if cwd else []
