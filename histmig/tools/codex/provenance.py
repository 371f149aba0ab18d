"""Where a converted Codex session says where it came from: a ``histmig_source`` key in the
``session_meta`` payload (serde ignores unknown keys; docs/specs/codex.md §3), and where converted
rollouts live (``sessions/`` and ``archived_sessions/``, at any depth)."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Iterator

from histmig import __version__
from histmig.toolkit.convert.provenance import first_obj, pair

KEY = "histmig_source"


def marker(tool: str, source_id: str, at: str) -> dict[str, Any]:
    return {"tool": tool, "id": source_id, "converted_at": at, "histmig": __version__}


def marker_of(path: str | os.PathLike) -> tuple[str, str] | None:
    obj = first_obj(Path(path))
    payload = obj.get("payload") if isinstance(obj, dict) and obj.get("type") == "session_meta" else None
    return pair(payload.get(KEY) if isinstance(payload, dict) else None, "tool", "id")


def folders(homes: Any, cwd: str | None) -> list[Path]:
    return [Path(homes.codex) / "sessions", Path(homes.codex) / "archived_sessions"]


def files(folder: Path) -> Iterator[Path]:
    for dirpath, _, names in os.walk(folder):
        yield from (Path(dirpath) / n for n in names if n.startswith("rollout-") and ".jsonl" in n)
