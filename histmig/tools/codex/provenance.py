"""Where a converted Codex session says where it came from: a ``histmig_source`` key in the
``session_meta`` payload (serde ignores unknown keys; docs/specs/codex.md §3), and where converted
rollouts live: any rollout of the home, as the one walker lists them (tools/codex/walk.py)."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Iterator

from histmig import __version__
from histmig.toolkit.convert.provenance import first_obj, pair
from histmig.tools.codex import walk

KEY = "histmig_source"


def marker(tool: str, source_id: str, at: str) -> dict[str, Any]:
    return {"tool": tool, "id": source_id, "converted_at": at, "histmig": __version__}


def marker_of(path: str | os.PathLike) -> tuple[str, str] | None:
    return _marker(first_obj(Path(path)))


def marker_of_session(session: Any) -> tuple[str, str] | None:
    """:func:`marker_of` of a session that ``adapter.stream`` read whole (its records a list: line 1
    is ``records[0]``, its value in ``extra["envelope"]`` unless the line did not parse), without
    reading the file again; of a streamed one, from its file."""
    if not isinstance(session.records, list):
        return marker_of(session.path)
    first = session.records[0].extra.get("envelope") if session.records else None
    return _marker(first)


def _marker(obj: Any) -> tuple[str, str] | None:
    payload = obj.get("payload") if isinstance(obj, dict) and obj.get("type") == "session_meta" else None
    return pair(payload.get(KEY) if isinstance(payload, dict) else None, "tool", "id")


def folders(homes: Any, cwd: str | None) -> list[Path]:
    return [Path(homes.codex)]


def files(codex_home: Path) -> Iterator[Path]:
    return (Path(path) for path, _, _ in walk.rollouts(codex_home, newest_first=False))
