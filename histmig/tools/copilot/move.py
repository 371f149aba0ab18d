"""Copilot CLI's part of a project move (docs/copilot.md, "move").

Copilot's history is global: ``--continue`` and ``--resume=<id>`` find a session from any folder, so
nothing is renamed. What keeps the old path is what listings show: ``workspace.yaml``'s ``cwd`` (one line
rewritten, every other byte kept) and the index row ``session-store.db`` ``sessions.cwd``. Events are left
as they are: ``session.start`` / ``session.resume`` record where each run happened.
"""
from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from histmig.core.diagnostics import HistmigInputError, Warning
from histmig.jsonio.regular import read_regular
from histmig.core.plan import Fingerprint, Patch, SqlUpdate, WriteFile
from histmig.toolkit.move.common import PathMap, ToolPlan
from histmig.tools.claude_family.listing import UUID_RE
from histmig.tools.copilot import workspace
from histmig.tools.copilot.index import index_db, session_rows

TOOL = "copilot"


def session_dirs(homes: Any) -> list[Path]:
    root = Path(homes.copilot) / "session-state"
    try:
        return sorted(d for d in root.iterdir() if UUID_RE.match(d.name) and d.is_dir() and not d.is_symlink())
    except OSError:
        return []


def cwd_patch(data: bytes, new: str) -> Patch | None:
    """The ``cwd:`` line's value replaced (offsets in the original bytes)."""
    offset = 0
    for raw in data.splitlines(keepends=True):
        line = raw.rstrip(b"\r\n")
        if line.startswith(b"cwd:"):
            start = offset + 4 + (1 if line[4:5] == b" " else 0)
            old = data[start:offset + len(line)]
            return Patch(start, old, workspace.quote(new).encode())
        offset += len(raw)
    return None


def cwd_line(data: bytes) -> int | None:
    """The line number of the ``cwd:`` line."""
    for n, raw in enumerate(data.splitlines(), 1):
        if raw.startswith(b"cwd:"):
            return n
    return None


def plan_workspace(d: Path, pm: PathMap, tplan: ToolPlan) -> None:
    path = d / "workspace.yaml"
    try:
        data = read_regular(path, 1 << 20)     # as workspace.read: no FIFO, nothing huge
    except (OSError, HistmigInputError):
        return
    cwd = workspace.parse(data).get("cwd")
    with pm.reading(str(path), lambda: cwd_line(data)):      # a refused cwd is named with its file and line
        new = pm.rebase(cwd) if pm.covers(cwd) else None
    patch = cwd_patch(data, new) if new else None
    if patch is None or patch.old == patch.new:
        return
    tplan.writes.append(WriteFile(path=str(path), expect=Fingerprint.of(str(path)), patches=(patch,),
                                  session={"tool": TOOL, "id": d.name}, reason="project move (listing cwd)"))
    tplan.count("files")
    tplan.count("fields")
    tplan.count("sessions")


def plan_index(homes: Any, pm: PathMap, tplan: ToolPlan) -> None:
    db = index_db(homes)
    try:
        rows = session_rows(db)
    except sqlite3.Error as e:
        tplan.warnings.append(Warning("db-unreadable", f"index database unreadable ({e}); its rows keep the old path",
                                      str(db)))
        return
    for sid, cwd in rows:
        with pm.reading(str(db), f"session {sid}"):
            new = pm.rebase(cwd) if pm.covers(cwd) else None
        if new and new != cwd:
            tplan.other.append(SqlUpdate(db=str(db), table="sessions", key={"id": sid}, set={"cwd": new},
                                         expect={"cwd": cwd}, session={"tool": TOOL, "id": sid},
                                         reason="project move (index row)"))
            tplan.count("db-rows")


def plan(homes: Any, pm: PathMap, plans: dict[str, ToolPlan], opts: dict[str, Any]) -> None:
    tplan = plans[TOOL]
    for d in session_dirs(homes):
        plan_workspace(d, pm, tplan)
    plan_index(homes, pm, tplan)
