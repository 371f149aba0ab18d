"""Where a converted session came from, stored in the converted session itself, in a place its
client ignores, so that converting again is idempotent and ``undo`` (which removes the file)
forgets the conversion with it. Each tool says where it keeps the marker and where its converted
copies live in ``tools/<tool>/provenance.py`` (``marker_of``, ``folders``, ``files``); this module
has what they share: the marker line Claude-style transcripts start with, and the run's index.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable, Iterable


from histmig import __version__
from histmig.core.diagnostics import HistmigError
from histmig.jsonio.jsonl import head_lines

LINE_TYPE = "histmig-provenance"


def line_marker(tool: str, source_id: str, at: str) -> dict[str, Any]:
    return {"type": LINE_TYPE, "sourceTool": tool, "sourceSession": source_id, "convertedAt": at,
            "histmig": __version__}


def key_marker(tool: str, source_id: str, at: str) -> dict[str, Any]:
    """:func:`line_marker` without its ``type``: the value of a key in a record of the tool's own
    (``histmigProvenance`` in Qwen, Copilot and Cline files)."""
    return {k: v for k, v in line_marker(tool, source_id, at).items() if k != "type"}


def first_obj(path: Path) -> Any:
    """The first line of a file as an object (None when absent, opaque or unreadable)."""
    try:
        lines = head_lines(path, max_lines=1, max_bytes=1 << 20)
    except (HistmigError, OSError):
        return None
    return lines[0].obj if lines and not lines[0].opaque and lines[0].raw else None


def line_marker_of(path: str | os.PathLike) -> tuple[str, str] | None:
    """``(source tool, source id)`` from a transcript's first line written by :func:`line_marker`."""
    obj = first_obj(Path(path))
    if isinstance(obj, dict) and obj.get("type") == LINE_TYPE:
        return pair(obj, "sourceTool", "sourceSession")
    return None


def pair(mark: Any, k1: str, k2: str) -> tuple[str, str] | None:
    if isinstance(mark, dict) and isinstance(mark.get(k1), str) and isinstance(mark.get(k2), str):
        return mark[k1], mark[k2]
    return None


class Index:
    """Converted sessions already in the target home, found lazily and cached for one run. ``hooks`` is
    the target tool's provenance module: ``folders(homes, cwd)``, ``files(folder)``, ``marker_of(path)``."""

    def __init__(self, homes: Any, hooks: Any):
        self.homes, self.hooks = homes, hooks
        self.found: dict[tuple[str, str], str] = {}
        self._scanned: set[str] = set()
        # cwd -> its folders, for a tool whose folders follow from the cwd alone (``FOLDERS_OF_CWD``:
        # a slug of its realpath): computed once per cwd, not once per session
        self._folders_of: dict[str | None, list[Path]] | None = {} if getattr(hooks, "FOLDERS_OF_CWD", False) else None

    def find(self, tool: str, source_id: str, cwd: str | None) -> str | None:
        for folder in self._folders(cwd):
            if str(folder) not in self._scanned:
                self._scanned.add(str(folder))
                # a folder of session files, or a database whose sessions are rows (named ``<db>#<id>``)
                for path in self.hooks.files(folder) if folder.exists() else ():
                    mark = self.hooks.marker_of(path)
                    if mark:
                        self.found.setdefault(mark, str(path))
        return self.found.get((tool, source_id))

    def add(self, tool: str, source_id: str, path: str) -> None:
        self.found[(tool, source_id)] = path

    def _folders(self, cwd: str | None) -> Iterable[Path]:
        if self.hooks is None:
            return ()
        if self._folders_of is None:
            return self.hooks.folders(self.homes, cwd)
        got = self._folders_of.get(cwd)
        if got is None:
            got = self._folders_of[cwd] = list(self.hooks.folders(self.homes, cwd))
        return got


def glob_files(pattern: str) -> Callable[[Path], Iterable[Path]]:
    """``files`` for a tool whose converted copies are the files matching ``pattern`` in a folder."""
    return lambda folder: folder.glob(pattern)
