"""Cline CLI's part of a project move (docs/cline.md): history is global and ``cline --id`` resumes from
any folder, so nothing is needed for resume; the manifest's ``cwd`` and ``workspace_root`` are rewritten
in place (indent and key order kept) only so listings (``histmig scan``, the manifest Cline shows) and
doctor stay true. The messages file is left alone (its text changes only with ``--rewrite-content``);
the index database ``data/db/sessions.db`` keeps the old cwd (Cline rewrites its row when it resumes the
session)."""
from __future__ import annotations

from typing import Any

from histmig.core.diagnostics import Skip
from histmig.toolkit.move.common import FieldEdit, PathMap, ToolPlan, field_at, scan_json_file
from histmig.tools.cline.adapter import SID_RE, sessions_root

TOOL = "cline"


def manifest_fields(obj: Any, pm: PathMap) -> list[FieldEdit]:
    if not isinstance(obj, dict):
        return []
    return field_at(obj, ("cwd",), pm) + field_at(obj, ("workspace_root",), pm)


def plan(homes: Any, pm: PathMap, plans: dict[str, ToolPlan], opts: dict[str, Any]) -> None:
    """The table's move hook (histmig/tools/__init__.py)."""
    tplan = plans[TOOL]
    root = sessions_root(homes)
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


def line_fields(obj: Any, pm: PathMap) -> list[FieldEdit]:
    """Messages carry no path field."""
    return []


def _record(tplan: ToolPlan, scan, sid: str, folder: str) -> None:
    if scan.skip:
        tplan.skips.append(Skip(scan.path, scan.skip))
    elif scan.patches:
        tplan.add_scan(scan, session={"tool": TOOL, "id": sid, "folder": folder}, reason="project move")
        tplan.count("sessions")



