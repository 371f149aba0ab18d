"""Cline CLI's part of a project move (docs/cline.md): history is global and ``cline --id`` resumes from
any folder, so nothing is needed for resume; the manifest's ``cwd`` and ``workspace_root`` are rewritten
in place (indent and key order kept), and the same two columns of the session's row in the index
database ``data/db/sessions.db`` (what ``cline history`` shows), only so listings and doctor stay true.
The messages file is left alone (its text changes only with ``--rewrite-content``)."""
from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from histmig.core.diagnostics import Skip, Warning
from histmig.core.plan import SqlUpdate
from histmig.toolkit.move.common import FieldEdit, PathMap, ToolPlan, field_at, scan_json_file
from histmig.tools.cline.adapter import SID_RE, data_dir, sessions_root

TOOL = "cline"


def manifest_fields(obj: Any, pm: PathMap) -> list[FieldEdit]:
    if not isinstance(obj, dict):
        return []
    return field_at(obj, ("cwd",), pm) + field_at(obj, ("workspace_root",), pm)


def plan(homes: Any, pm: PathMap, plans: dict[str, ToolPlan], opts: dict[str, Any]) -> None:
    """The table's move hook (histmig/tools/__init__.py)."""
    tplan = plans[TOOL]
    root = sessions_root(homes)
    _rows(data_dir(homes) / "db" / "sessions.db", pm, tplan)
    try:
        folders = sorted(p for p in root.iterdir() if SID_RE.match(p.name) and p.is_dir() and not p.is_symlink())
    except OSError:
        return
    for folder in folders:
        manifest = folder / f"{folder.name}.json"
        if manifest.is_file():
            _record(tplan, scan_json_file(str(manifest), pm, manifest_fields, rewrite_content=opts["rewrite_content"]),
                    folder.name, str(folder))
        messages = folder / f"{folder.name}.messages.json"
        if opts["rewrite_content"] and messages.is_file():
            _record(tplan, scan_json_file(str(messages), pm, lambda obj, pm: [], rewrite_content=True),
                    folder.name, str(folder))


def _rows(db: Path, pm: PathMap, tplan: ToolPlan) -> None:
    """``UPDATE sessions SET cwd, workspace_root`` for every row under OLD (read-only here; the apply
    engine writes, refusing a row that changed since)."""
    if not db.is_file():
        return
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
        try:
            rows = con.execute("SELECT session_id, cwd, workspace_root FROM sessions").fetchall()
        finally:
            con.close()
    except sqlite3.Error as e:
        tplan.warnings.append(Warning("db-unreadable", f"cannot read the sessions table ({e}); its cwd column "
                                      "keeps the old folder", path=str(db)))
        return
    for sid, cwd, root in rows:
        with pm.reading(str(db), f"session {sid}"):        # a refused path is named with the database and row
            new = {k: v for k, v in (("cwd", pm.rebase(cwd)), ("workspace_root", pm.rebase(root)))
                   if isinstance(v, str) and v != {"cwd": cwd, "workspace_root": root}[k]}
        if new:
            tplan.other.append(SqlUpdate(db=str(db), table="sessions", key={"session_id": sid}, set=new,
                                         expect={k: {"cwd": cwd, "workspace_root": root}[k] for k in new},
                                         session={"tool": TOOL, "id": sid}, reason="project move"))
            tplan.count("db-rows")


def line_fields(obj: Any, pm: PathMap) -> list[FieldEdit]:
    """Messages carry no path field."""
    return []


def _record(tplan: ToolPlan, scan, sid: str, folder: str) -> None:
    if scan.skip:
        tplan.skips.append(Skip(scan.path, scan.skip))
    elif scan.patches:
        tplan.add_scan(scan, session={"tool": TOOL, "id": sid, "folder": folder}, reason="project move")
        tplan.count("sessions")



