"""Where a converted Qwen session says where it came from: ``histmigProvenance`` on its first record (Qwen
needs a real record first: it reads ``sessionId`` and ``cwd`` from line 1), and where converted sessions
live: the ``chats/`` folder of the cwd's project folder (tools/qwen/write.py)."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from histmig.toolkit.convert.provenance import first_obj, glob_files, pair
from histmig.tools.qwen.adapter import qwen_slug
from histmig.tools.qwen.write import MARK

files = glob_files("*.jsonl")


def marker_of(path: str | os.PathLike) -> tuple[str, str] | None:
    obj = first_obj(Path(path))
    return pair(obj.get(MARK), "sourceTool", "sourceSession") if isinstance(obj, dict) else None


def folders(homes: Any, cwd: str | None) -> list[Path]:
    return [Path(homes.qwen) / "projects" / qwen_slug(os.path.realpath(cwd)) / "chats"] if cwd else []
