"""Where a converted manifest-layout session says where it came from: a ``histmigSource`` key in
``meta.json`` (docs/specs/manifest-layout.md §2), and where converted sessions live."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson

from histmig import __version__
from histmig.toolkit.convert.provenance import glob_files, pair

KEY = "histmigSource"


def marker(tool: str, source_id: str, at: str) -> dict[str, Any]:
    return {"tool": tool, "id": source_id, "convertedAt": at, "histmig": __version__}


def marker_of(path: str | os.PathLike) -> tuple[str, str] | None:
    p = Path(path)
    meta = p / "meta.json" if p.is_dir() else p.parent / "meta.json"
    try:
        obj = orjson.loads(meta.read_bytes()) if meta.is_file() else None
    except (orjson.JSONDecodeError, OSError):
        obj = None
    return pair(obj.get(KEY) if isinstance(obj, dict) else None, "tool", "id")


def folders(homes: Any, cwd: str | None) -> list[Path]:
    return [Path(homes.manifest) / "projects"]


files = glob_files("*/sessions/*/meta.json")
