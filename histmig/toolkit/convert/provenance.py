"""Where a converted session came from, stored in the converted session itself, in a place its
client ignores, so that converting again is idempotent and ``undo`` (which removes the file)
forgets the conversion with it:

- Claude Code and mini-cc: a first line ``{"type":"histmig-provenance",...}`` (both loaders skip
  record types they do not know; the line has no ``cwd``/``sessionId``/``content`` keys that
  Claude's listing would pick up);
- Codex: a ``histmig_source`` key in the ``session_meta`` payload (serde ignores unknown keys);
- manifest: a ``histmigSource`` key in ``meta.json``.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Iterator

import orjson

from histmig import __version__
from histmig.core.diagnostics import HistmigError
from histmig.jsonio.jsonl import head_lines
from histmig.core.paths import claude_slug

LINE_TYPE = "histmig-provenance"
CODEX_KEY = "histmig_source"
MANIFEST_KEY = "histmigSource"


def line_marker(tool: str, source_id: str, at: str) -> dict[str, Any]:
    return {"type": LINE_TYPE, "sourceTool": tool, "sourceSession": source_id, "convertedAt": at,
            "histmig": __version__}


def codex_marker(tool: str, source_id: str, at: str) -> dict[str, Any]:
    return {"tool": tool, "id": source_id, "converted_at": at, "histmig": __version__}


def manifest_marker(tool: str, source_id: str, at: str) -> dict[str, Any]:
    return {"tool": tool, "id": source_id, "convertedAt": at, "histmig": __version__}


def _first_obj(path: Path) -> Any:
    try:
        lines = head_lines(path, max_lines=1, max_bytes=1 << 20)
    except (HistmigError, OSError):
        return None
    return lines[0].obj if lines and not lines[0].opaque and lines[0].raw else None


def marker_of(path: str | os.PathLike, fmt: str) -> tuple[str, str] | None:
    """``(source tool, source id)`` recorded in a converted session, or None."""
    p = Path(path)
    if fmt == "manifest":
        meta = p / "meta.json" if p.is_dir() else p.parent / "meta.json"
        try:
            obj = orjson.loads(meta.read_bytes()) if meta.is_file() else None
        except (orjson.JSONDecodeError, OSError):
            obj = None
        mark = obj.get(MANIFEST_KEY) if isinstance(obj, dict) else None
        return _pair(mark, "tool", "id")
    obj = _first_obj(p)
    if not isinstance(obj, dict):
        return None
    if fmt == "codex":
        payload = obj.get("payload") if obj.get("type") == "session_meta" else None
        return _pair(payload.get(CODEX_KEY) if isinstance(payload, dict) else None, "tool", "id")
    if obj.get("type") == LINE_TYPE:
        return _pair(obj, "sourceTool", "sourceSession")
    return None


def _pair(mark: Any, k1: str, k2: str) -> tuple[str, str] | None:
    if isinstance(mark, dict) and isinstance(mark.get(k1), str) and isinstance(mark.get(k2), str):
        return mark[k1], mark[k2]
    return None


class Index:
    """Converted sessions already in the target home, found lazily and cached for one run."""

    def __init__(self, homes: Any, target: str):
        self.homes, self.target = homes, target
        self.found: dict[tuple[str, str], str] = {}
        self._scanned: set[str] = set()

    def find(self, tool: str, source_id: str, cwd: str | None) -> str | None:
        for folder in self._folders(cwd):
            if str(folder) not in self._scanned:
                self._scanned.add(str(folder))
                for path in self._files(folder):
                    mark = marker_of(path, self.target)
                    if mark:
                        self.found.setdefault(mark, str(path))
        return self.found.get((tool, source_id))

    def add(self, tool: str, source_id: str, path: str) -> None:
        self.found[(tool, source_id)] = path

    def _folders(self, cwd: str | None) -> list[Path]:
        if self.target == "codex":
            return [Path(self.homes.codex) / "sessions", Path(self.homes.codex) / "archived_sessions"]
        root = Path(self.homes.mini_cc if self.target == "mini-cc" else self.homes.claude) / "projects"
        if self.target == "manifest":
            return [root]
        return [root / claude_slug(os.path.realpath(cwd))] if cwd else []

    def _files(self, folder: Path) -> Iterator[Path]:
        if not folder.is_dir():
            return
        if self.target == "codex":
            for dirpath, _, names in os.walk(folder):
                yield from (Path(dirpath) / n for n in names if n.startswith("rollout-") and ".jsonl" in n)
        elif self.target == "manifest":
            yield from folder.glob("*/sessions/*/meta.json")
        else:
            yield from folder.glob("*.jsonl")
