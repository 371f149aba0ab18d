"""Where a converted OpenCode session says where it came from: ``session.metadata`` holds
``{"histmigProvenance": {sourceTool, sourceSession, convertedAt, histmig}}`` (tools/opencode/write.py;
OpenCode keeps the column as it is), and where converted sessions live: rows of the one database.

A session is named ``<db>#<session id>`` (how the adapter names a session on its own), so the run's
index (histmig/toolkit/convert/provenance.py) finds converted copies as it finds files. A bare
database path (how a source OpenCode session's ref names it) holds many sessions: no marker.
"""
from __future__ import annotations

import json
import os
from contextlib import closing
from pathlib import Path
from typing import Any, Iterable

from histmig.toolkit.convert.provenance import pair
from histmig.tools.opencode.layout import db_path
from histmig.tools.opencode.write import MARK


def _marker(metadata: Any) -> tuple[str, str] | None:
    try:
        meta = json.loads(metadata) if isinstance(metadata, str) else None
    except ValueError:
        return None
    return pair(meta.get(MARK), "sourceTool", "sourceSession") if isinstance(meta, dict) else None


def marker_of(path: str | os.PathLike) -> tuple[str, str] | None:
    text = str(path)
    if "#" not in text:
        return None
    db, sid = text.rsplit("#", 1)
    con = _open(Path(db))
    if con is None:
        return None
    with closing(con):
        row = con.execute("SELECT metadata FROM session WHERE id = ?", (sid,)).fetchone()
    return _marker(row[0]) if row else None


def folders(homes: Any, cwd: str | None) -> list[Path]:
    return [db_path(homes)]


def files(folder: Path) -> Iterable[Path]:
    """The converted sessions of the database ``folder`` (named so by :func:`folders`)."""
    con = _open(folder) if folder.is_file() else None
    if con is None:
        return []
    with closing(con):
        found = con.execute("SELECT id FROM session WHERE metadata LIKE ?", (f'%"{MARK}"%',)).fetchall()
    return [Path(f"{folder}#{sid}") for (sid,) in found]


def _open(db: Path) -> Any:
    """The database, or None: one that cannot be read holds no provenance histmig can see (scan and
    doctor name it)."""
    from histmig.core.diagnostics import HistmigInputError
    from histmig.tools.opencode.dbrows import open_db
    try:
        return open_db(db)
    except HistmigInputError:
        return None
