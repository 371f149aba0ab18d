"""Where a converted Copilot session says where it came from: ``histmigProvenance`` on its first event
(``session.start``; tools/copilot/write.py), and where converted sessions live: ``session-state/`` (history
is global, not per folder: docs/copilot.md)."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Iterable

from histmig.toolkit.convert.provenance import first_obj, pair
from histmig.tools.copilot.write import MARK


def marker_of(path: str | os.PathLike) -> tuple[str, str] | None:
    obj = first_obj(Path(path))
    return pair(obj.get(MARK), "sourceTool", "sourceSession") if isinstance(obj, dict) else None


def folders(homes: Any, cwd: str | None) -> list[Path]:
    return [Path(homes.copilot) / "session-state"]


def files(folder: Path) -> Iterable[Path]:
    return folder.glob("*/events.jsonl")
