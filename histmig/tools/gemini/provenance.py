"""Where a converted Gemini session records its source: a ``histmig`` key in its metadata line (the client
merges unknown metadata keys and ignores them, docs/specs/gemini.md §2), and where converted copies live:
the ``chats/`` of the slug Gemini uses for the cwd."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Iterable

from histmig.toolkit.convert.provenance import first_obj, pair
from histmig.tools.gemini import files as layout


def marker_of(path: str | os.PathLike) -> tuple[str, str] | None:
    obj = first_obj(Path(path))
    return pair(obj.get("histmig"), "sourceTool", "sourceSession") if isinstance(obj, dict) else None


def folders(homes: Any, cwd: str | None) -> list[Path]:
    if not cwd:
        return []
    from histmig.tools.gemini.write import project_slug
    gdir = layout.gemini_dir(homes)
    slug, _known = project_slug(gdir, os.path.realpath(cwd))
    return [gdir / "tmp" / slug / "chats"]


def files(folder: Path) -> Iterable[Path]:
    return folder.glob("session-*.jsonl")
