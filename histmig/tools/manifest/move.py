"""The manifest layout's part of a project move (docs/specs/manifest-layout.md §7): ``meta.json`` ``projectPath``
and ``cwd`` rewritten in place (indent and key order kept). Folders named by the Claude slug move with
Claude Code's folders (``move_folders``); opaque hash-named folders keep their name. Transcript
``payload`` text is left alone unless ``--rewrite-content``."""
from __future__ import annotations

import os
from typing import Any

from histmig.core.diagnostics import Skip
from histmig.toolkit.move.common import FieldEdit, PathMap, ToolPlan, field_at, scan_file, scan_json_file

TOOL = "manifest"


def meta_fields(obj: Any, pm: PathMap) -> list[FieldEdit]:
    if not isinstance(obj, dict):
        return []
    return field_at(obj, ("projectPath",), pm) + field_at(obj, ("cwd",), pm)


def session_dirs(root) -> list[str]:
    out = []
    try:
        projects = sorted(os.scandir(root), key=lambda e: e.name)
    except OSError:
        return out
    for p in projects:
        base = os.path.join(p.path, "sessions")
        if not p.is_dir(follow_symlinks=False) or not os.path.isdir(base) or os.path.islink(base):
            continue
        out += [os.path.join(base, s) for s in sorted(os.listdir(base)) if os.path.isdir(os.path.join(base, s))]
    return out


def plan_manifest(homes, pm: PathMap, plans: dict[str, ToolPlan], opts: dict[str, Any]) -> None:
    tplan = plans[TOOL]
    waiting = plans["claude-code"].waiting      # Claude folders left whole (live session, shared)
    for sdir in session_dirs(homes.manifest / "projects"):
        sid = os.path.basename(sdir)
        meta = os.path.join(sdir, "meta.json")
        folder = os.path.dirname(os.path.dirname(sdir))
        if folder in waiting:
            continue              # named once, as the folder
        if os.path.exists(os.path.join(sdir, ".lock")):
            if os.path.exists(meta):
                tplan.skips.append(Skip(meta, "session is locked (.lock present: a writer holds it)", "in-use"))
            continue
        if os.path.isfile(meta):
            scan = scan_json_file(meta, pm, meta_fields, rewrite_content=opts["rewrite_content"])
            _record(tplan, scan, sid, folder)
        transcript = os.path.join(sdir, "transcript.jsonl")
        if opts["rewrite_content"] and os.path.isfile(transcript):
            scan = scan_file(transcript, pm, lambda obj, pm: [], rewrite_content=True)
            _record(tplan, scan, sid, folder)


plan = plan_manifest           # the table's move hook (histmig/tools/__init__.py)


def line_fields(obj: Any, pm: PathMap) -> list[FieldEdit]:
    """Transcript records carry no path field (their text changes only with --rewrite-content)."""
    return []


def _record(tplan: ToolPlan, scan, sid: str, folder: str) -> None:
    if scan.skip:
        tplan.skips.append(Skip(scan.path, scan.skip))
    elif scan.patches:
        tplan.add_scan(scan, session={"tool": TOOL, "id": sid, "folder": folder}, reason="project move")
