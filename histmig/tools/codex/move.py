"""Codex's part of a project move (docs/specs/codex.md §0.5, §15.2).

Every rollout (``walk.rollouts``: ``sessions/``, ``archived_sessions/``, plain or ``.jsonl.zst``) is
scanned; in ``session_meta``, ``turn_context``, ``world_state`` and ``thread_settings_applied`` lines every string
that *is* a path under OLD is rebased (cwd, workspace and writable roots, environments); message text
and tool arguments stay unless ``--rewrite-content``. Rewritten lines change length, so the thread's
``thread_history_1.sqlite`` byte offsets are shifted. ``threads.cwd`` is updated in every state DB,
and ``[projects."OLD…"]`` in config.toml is re-keyed.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from histmig.tools.codex import locks
from histmig.core.diagnostics import Skip, Warning
from histmig.core.livewriters import open_writers
from histmig.core.patches import patch_list
from histmig.toolkit.move.common import FieldEdit, FileScan, PathMap, ToolPlan, path_strings, scan_file
from histmig.toolkit.move.parallel import scan_all
from histmig.tools.codex import projects as codex_projects
from histmig.tools.codex import state as codex_state
from histmig.tools.codex import walk

TOOL = "codex"
STRUCTURED = ("session_meta", "turn_context", "world_state")


def codex_fields(obj: Any, pm: PathMap) -> list[FieldEdit]:
    if not isinstance(obj, dict):
        return []
    kind, payload = obj.get("type"), obj.get("payload")
    if kind in STRUCTURED or (kind == "event_msg" and isinstance(payload, dict)
                              and payload.get("type") == "thread_settings_applied"):
        return path_strings(payload, pm, ("payload",))
    return []


def _remember(obj: Any, scan: FileScan) -> None:
    if "thread_id" in scan.first or not isinstance(obj, dict) or obj.get("type") != "session_meta":
        return
    payload = obj.get("payload")
    if isinstance(payload, dict) and isinstance(payload.get("id"), str):
        scan.first["thread_id"] = payload["id"]


def _rollouts(codex_home: Path) -> tuple[list[str], list[Warning]]:
    """Every rollout ``walk.rollouts`` lists, oldest first; a shadowed ``.jsonl.zst`` is named, not moved."""
    files: list[str] = []
    warnings: list[Warning] = []
    for path, _archived, shadowed in walk.rollouts(codex_home, newest_first=False):
        files.append(path)
        if shadowed is not None:
            warnings.append(Warning("shadowed", "shadowed by the plain .jsonl (Codex reads that one); "
                                    "left as is", path=shadowed))
    return files, warnings


def _thread_id_from_name(path: str) -> str | None:
    name = os.path.basename(path).removesuffix(".zst").removesuffix(".jsonl")
    parts = name[len("rollout-"):]
    return parts[20:].split("_")[0] if len(parts) > 20 else None


def plan_codex(homes, pm: PathMap, plans: dict[str, ToolPlan], opts: dict[str, Any]) -> None:
    tplan = plans[TOOL]
    files, tplan.warnings[:0] = _rollouts(Path(homes.codex))
    kw = {"rewrite_content": opts["rewrite_content"], "remember": _remember}
    scans = scan_all([(scan_file, (f, pm, codex_fields), kw) for f in files])
    edited = [s for s in scans if s.patches and not s.skip]
    holders = _writers(edited)
    blocked: set[str] = set()
    index = codex_state.HistoryIndex(codex_state.history_dbs(homes)) \
        if any(not patch_list(s.patches).same_length() for s in edited) else None
    for scan in scans:
        tid = scan.first.get("thread_id") or _thread_id_from_name(scan.path)
        why = scan.skip or holders.get(scan.path)
        if scan.patches and not why and tid and locks.codex_thread_locked(homes.codex, tid):
            why = f"Codex thread {tid} is open (thread-writer-locks/{tid}.lock held)"
        if why:
            if scan.patches or scan.skip:
                tplan.skips.append(Skip(scan.path, why, "in-use" if not scan.skip else "skipped"))
            blocked.add(tid or "")
            continue
        if not scan.patches:
            continue
        tplan.add_scan(scan, session={"tool": TOOL, "id": tid} if tid else None, reason="project move")
        if tid and (deltas := scan.deltas):
            tplan.other += codex_state.offset_shift_ops(homes, tid, deltas, index=index)
    _plan_threads(homes, pm, tplan, blocked)
    with pm.reading(str(codex_projects.config_path(homes))):     # a refused key is named with config.toml
        op, warnings, n = codex_projects.projects_op(homes, pm.rebase, force=opts["force"])
    tplan.warnings += warnings
    if op is not None:
        tplan.other.append(op)
        tplan.count("config-keys", n)


plan = plan_codex              # the table's move hook (histmig/tools/__init__.py)
line_fields = codex_fields


def _writers(scans: list[FileScan]) -> dict[str, str]:
    stats = {}
    for s in scans:
        try:
            st = os.stat(s.path)
        except OSError:
            continue
        stats[(st.st_dev, st.st_ino)] = s.path
    return {stats[k]: f"open for writing by {v[0].describe()}" for k, v in open_writers(stats).items()}


def _plan_threads(homes, pm: PathMap, tplan: ToolPlan, blocked: set[str]) -> None:
    """``threads.cwd`` and ``threads.rollout_path`` under OLD → NEW in every state DB (threads whose
    rollout was skipped stay), and Codex Desktop's ``project_roots.path``."""
    rows = {db: codex_state.thread_rows(db) for db in codex_state.state_dbs(homes)}
    ids: set[str] = set()
    for db, by_id in rows.items():
        for tid, r in by_id.items():
            with pm.reading(str(db), f"thread {tid}"):      # a refused cwd is named with the database and row
                if pm.covers(r.get("cwd")):
                    ids.add(tid)
    for tid in sorted(ids):
        if tid in blocked:
            continue
        cwd = next(r["cwd"] for by_id in rows.values() if (r := by_id.get(tid)) and pm.covers(r.get("cwd")))
        ops = codex_state.cwd_update_ops(homes, tid, pm.rebase(cwd), rows=rows)
        tplan.other += ops
        tplan.count("db-rows", len(ops))
    # a moved folder that holds the Codex home (a copied home re-homed) carries the rollouts too
    ops = codex_state.rebased_path_ops(homes, pm.rebase, rows=rows, skip=blocked, reason="project move")
    tplan.other += ops
    tplan.count("db-rows", len(ops))
