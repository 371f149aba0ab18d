"""OpenCode's part of a project move (docs/opencode.md): row updates in its database, one transaction.

``opencode run -c`` continues only a session whose ``session.directory`` is exactly the current folder,
and ``run -s`` fails ("UnknownError") while it names a folder that is gone, so every session row under
OLD gets NEW: ``directory``, and ``path`` where it is the ``global`` project's form (the folder without
its leading ``/``; under a git project ``path`` is relative to the worktree and moves with it). The
``project`` rows follow (``worktree``, the ``sandboxes`` list) and so do ``project_directory`` rows
(their key holds the folder, so the row is replaced; a row OpenCode already added for NEW is left,
the old one too).
Every change is a :class:`~histmig.core.plan.SqlUpdate` with the old value as its expectation, so apply
re-checks each row inside its transaction and undo puts the old values back (histmig/apply/sqlops.py).
What assistant messages recorded as ``path.cwd`` is history and stays.
"""
from __future__ import annotations

import json
from contextlib import closing
from typing import Any

from histmig.core.dbread import DatabaseLockedError
from histmig.core.diagnostics import HistmigInputError, Skip, Warning
from histmig.core.plan import SqlDelete, SqlInsert, SqlUpdate
from histmig.toolkit.move.common import PathMap, ToolPlan
from histmig.tools.opencode.layout import db_path

TOOL = "opencode"
REASON = "folder move (OpenCode keys sessions by folder)"


def unit(sid: str) -> dict[str, str]:
    return {"tool": TOOL, "id": sid}


def plan(homes: Any, pm: PathMap, plans: dict[str, ToolPlan], opts: dict[str, Any]) -> None:
    """The table's move hook (histmig/tools/__init__.py)."""
    db = db_path(homes)
    if not db.is_file():
        return
    from histmig.tools.opencode.dbrows import open_db, rows
    tplan = plans[TOOL]
    try:
        con = open_db(db)
    except DatabaseLockedError as e:
        tplan.skips.append(Skip(str(db), f"{e}; its sessions keep the old folder; when it is free, re-run: "
                                f"{opts['rerun']}", "db-locked"))
        return
    except HistmigInputError as e:
        tplan.warnings.append(Warning("db-unreadable", f"{e}; its sessions keep the old folder", str(db)))
        return
    if con is None:
        return
    with closing(con):
        for s in rows(con, "SELECT id, project_id, directory, path FROM session ORDER BY id"):
            with pm.reading(str(db), f"session {s['id']}"):     # a refused directory: named with the row
                op = session_op(str(db), s, pm)
            if op is not None:
                tplan.other.append(op)
                tplan.count("sessions")
                tplan.count("db-rows")
        for p in rows(con, "SELECT id, worktree, sandboxes FROM project ORDER BY id"):
            with pm.reading(str(db), f"project {p['id']}"):
                op = project_op(str(db), p, pm)
            if op is not None:
                tplan.other.append(op)
                tplan.count("db-rows")
        dirs = list(rows(con, "SELECT * FROM project_directory ORDER BY project_id, directory"))
    have = {(d["project_id"], d["directory"]) for d in dirs}
    for d in dirs:
        with pm.reading(str(db), f"project_directory of project {d['project_id']}"):
            new = pm.rebase(d["directory"])
        if new is None or new == d["directory"] or (d["project_id"], new) in have:
            continue
        # the folder is part of the row's key: undo finds rows by key, so the row is replaced (a delete
        # journals it whole, undo re-inserts it and removes the new one), not updated in place
        tplan.other.append(SqlDelete(db=str(db), table="project_directory", where=dict(d), expect_count=1,
                                     reason=REASON))
        tplan.other.append(SqlInsert(db=str(db), table="project_directory", row={**d, "directory": new},
                                     key=("project_id", "directory"), reason=REASON))
        tplan.count("db-rows")


def session_op(db: str, s: dict[str, Any], pm: PathMap) -> SqlUpdate | None:
    new = pm.rebase(s["directory"])
    if new is None or new == s["directory"]:
        return None
    changes: dict[str, Any] = {"directory": new}
    old: dict[str, Any] = {"directory": s["directory"]}
    if s["project_id"] == "global" and s["path"] == s["directory"].lstrip("/"):
        changes["path"], old["path"] = new.lstrip("/"), s["path"]
    return SqlUpdate(db=db, table="session", key={"id": s["id"]}, set=changes, expect=old,
                     session=unit(s["id"]), reason=REASON)


def project_op(db: str, p: dict[str, Any], pm: PathMap) -> SqlUpdate | None:
    changes: dict[str, Any] = {}
    old: dict[str, Any] = {}
    worktree = pm.rebase(p["worktree"]) if p["worktree"] != "/" else None
    if worktree is not None and worktree != p["worktree"]:
        changes["worktree"], old["worktree"] = worktree, p["worktree"]
    try:
        boxes = json.loads(p["sandboxes"]) if p["sandboxes"] else None
    except ValueError:
        boxes = None
    if isinstance(boxes, list):
        moved = [pm.rebase(b) or b if isinstance(b, str) else b for b in boxes]
        if moved != boxes:
            changes["sandboxes"], old["sandboxes"] = json.dumps(moved, separators=(",", ":")), p["sandboxes"]
    if not changes:
        return None
    return SqlUpdate(db=db, table="project", key={"id": p["id"]}, set=changes, expect=old, reason=REASON)
