"""Where a converted Cline session says where it came from: ``metadata.histmigProvenance`` in its
manifest (``<sid>.json``, small; Cline keeps metadata keys it does not know), and where converted
sessions live: the one global ``data/sessions/`` folder (tools/cline/write.py)."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterable

from histmig.core.diagnostics import HistmigInputError
from histmig.jsonio.regular import read_regular
from histmig.toolkit.convert.provenance import pair
from histmig.tools.cline.adapter import manifest_path, sessions_root
from histmig.tools.cline.write import MARK


def marker_of(path: str | os.PathLike) -> tuple[str, str] | None:
    try:
        obj = json.loads(read_regular(manifest_path(Path(path)), 1 << 24))    # a FIFO would block
    except (OSError, HistmigInputError, ValueError, RecursionError):
        return None
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    return pair(meta.get(MARK), "sourceTool", "sourceSession") if isinstance(meta, dict) else None


def folders(homes: Any, cwd: str | None) -> list[Path]:
    return [sessions_root(homes)]


def files(folder: Path) -> Iterable[Path]:
    return folder.glob("*/*.messages.json")
