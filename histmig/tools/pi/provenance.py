"""Where a converted Pi session records its source: a ``custom`` entry (Pi's extension-state entry, never
sent to the model) right after the header, ``customType`` ``histmig-provenance``; converted copies live
in the slug folder of their cwd (histmig/toolkit/convert/provenance.py)."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

from histmig.core.diagnostics import HistmigError
from histmig.jsonio.jsonl import head_lines
from histmig.toolkit.convert.provenance import LINE_TYPE, pair
from histmig.tools.pi.layout import pi_slug, sessions_root, slug_dirs


def marker_of(path: Any) -> tuple[str, str] | None:
    try:
        lines = head_lines(Path(path), max_lines=2, max_bytes=1 << 20)
    except (HistmigError, OSError):
        return None
    obj = lines[1].obj if len(lines) > 1 and not lines[1].opaque and lines[1].raw else None
    if isinstance(obj, dict) and obj.get("type") == "custom" and obj.get("customType") == LINE_TYPE:
        return pair(obj.get("data"), "sourceTool", "sourceSession")
    return None


def folders(homes: Any, cwd: str | None) -> list[Path]:
    root = sessions_root(homes)
    return [root / pi_slug(cwd)] if cwd else slug_dirs(root)


def files(folder: Path) -> Iterable[Path]:
    return folder.glob("*.jsonl")
