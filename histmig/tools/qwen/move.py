"""Qwen Code's part of a project move (docs/qwen.md): Qwen finds a project's sessions by the folder
``projects/<sanitizeCwd(root)>/`` *and* by the sha256 of the first record's ``cwd`` (both must match the
current root), so both change: ``cwd`` is rewritten in every record of every ``chats/`` and
``chats/archive/`` file, and the folder is renamed to the slug of NEW.

A folder is claimed by the ``cwd`` its sessions record (or, with none, by its name being the slug of
OLD). When NEW's folder already exists (Qwen was started there after ``mv``), the session files move
into its ``chats/`` one by one and the rest (``meta.json``, ``memory/`` ...) stays behind, named. A
folder that also holds sessions of a path outside OLD (slugs collide: ``/a/b-c`` and ``/a/b/c``), or
one with a session file open for writing, is left whole and named.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from histmig.core.diagnostics import RefusedError, Skip, Warning
from histmig.core.livewriters import open_writers
from histmig.core.paths import safe_component
from histmig.core.plan import Fingerprint, Rename
from histmig.tools.claude_family.listing import subdirs
from histmig.jsonio.jsonl import head_lines
from histmig.toolkit.move.common import FieldEdit, PathMap, ToolPlan, dir_fingerprint, field_at, scan_file, shown
from histmig.toolkit.move.parallel import scan_all
from histmig.tools.qwen.adapter import chat_files, projects_root, qwen_slug
from histmig.tools.qwen.live import live_in

TOOL = "qwen"


def qwen_fields(obj: Any, pm: PathMap) -> list[FieldEdit]:
    """The path fields of one Qwen record: ``cwd`` (Qwen compares its hash with the project root)."""
    return field_at(obj, ("cwd",), pm) if isinstance(obj, dict) else []


def unit(folder: Path, sid: str | None = None) -> dict[str, str]:
    return {"tool": TOOL, **({"id": sid} if sid else {}), "folder": str(folder)}


def plan(homes: Any, pm: PathMap, plans: dict[str, ToolPlan], opts: dict[str, Any]) -> None:
    """The table's move hook (histmig/tools/__init__.py)."""
    root = projects_root(homes)
    tplan = plans[TOOL]
    existing = {d.name for d in subdirs(root)}
    targets: dict[str, Path] = {}
    for folder in subdirs(root):
        files = chat_files(folder)
        launch = _claim(folder, files, pm, tplan)
        if launch is None:
            continue
        target = qwen_slug(pm.rebase(launch) or launch)
        if not safe_component(target):     # a recorded cwd of 300 bytes: no such folder can be made
            tplan.skips.append(Skip(str(folder), f"the folder name for {shown(pm.rebase(launch))} would be over 255 bytes; "
                                    "left in place", code="bad-cwd"))
            continue
        if target != folder.name and target in targets:
            raise RefusedError(f"{targets[target]} and {folder} would both become {root / target}; "
                               "refusing, nothing moved")
        targets[target] = folder
        if not _scan(folder, files, pm, tplan, opts):
            continue
        if target == folder.name:
            continue
        if target not in existing:
            tplan.renames.append(Rename(src=str(folder), dst=str(root / target), expect=dir_fingerprint(str(folder)),
                                        session=unit(folder), reason=f"project folder of {launch}"))
            tplan.count("folders")
            tplan.count("sessions", len(files))
        else:
            _merge(folder, files, root / target, tplan)


def first_cwd(path: Path) -> str | None:
    """The ``cwd`` of a session's first record: what Qwen hashes to decide where it belongs."""
    try:
        lines = head_lines(str(path), max_lines=1)
    except Exception:  # a broken head has no cwd; the scan names the file properly
        return None
    obj = lines[0].obj if lines and not lines[0].blank and lines[0].error is None else None
    return obj.get("cwd") if isinstance(obj, dict) and isinstance(obj.get("cwd"), str) else None


def _claim(folder: Path, files: list[Path], pm: PathMap, tplan: ToolPlan) -> str | None:
    """The path OLD's folder is named after, or None when the folder is not part of the move."""
    heads = [(f, c) for f in files if (c := first_cwd(f))]
    cwds = [c for _, c in heads]
    inside = []
    for f, c in heads:
        with pm.reading(str(f), 1):         # a refused cwd is named with its session file
            if pm.covers(c):
                inside.append(c)
    if not inside:
        return next((o for o in pm.olds if not cwds and qwen_slug(o) == folder.name), None)
    outside = sorted({c for c in cwds if not pm.covers(c)})
    if outside:
        tplan.skips.append(Skip(str(folder), f"holds sessions of {min(inside, key=len)} and of {', '.join(outside)} "
                                "(the paths encode to the same folder name); left in place", code="slug-collision"))
        return None
    exact = [c for c in inside if qwen_slug(c) == folder.name]
    return min(exact or inside, key=len)


def _scan(folder: Path, files: list[Path], pm: PathMap, tplan: ToolPlan, opts: dict[str, Any]) -> bool:
    """Plan the ``cwd`` edits of every session in the folder; False (and a skip) when it must wait."""
    live = live_in(folder)
    if live:
        tplan.skips.append(Skip(str(folder), f"live Qwen Code session {live[0]} (pid {live[1]}); the folder and every "
                                f"session in it wait; when it ends, re-run: {opts['rerun']}", code="live-folder"))
        return False
    keys = {}
    for f in files:
        st = os.stat(f)
        keys[(st.st_dev, st.st_ino)] = f
    writers = open_writers(keys)
    if writers:
        (key, holders), = list(writers.items())[:1]
        tplan.skips.append(Skip(str(folder), f"{keys[key]} is open for writing by {holders[0].describe()}; the folder "
                                f"and every session in it wait; when it ends, re-run: {opts['rerun']}", code="live-folder"))
        return False
    scans = scan_all([(scan_file, (str(f), pm, qwen_fields), {"rewrite_content": opts["rewrite_content"]})
                      for f in files])
    bad = next((s for s in scans if s.skip), None)
    if bad:
        tplan.skips.append(Skip(str(folder), f"{bad.path}: {bad.skip}; the folder is left as it is", code="in-use"))
        return False
    for f, scan in zip(files, scans):
        tplan.add_scan(scan, session=unit(folder, f.stem), reason="project move")
    return True


def _merge(folder: Path, files: list[Path], target: Path, tplan: ToolPlan) -> None:
    """NEW's folder exists: move the sessions (and their sidecars) into its ``chats/``."""
    chats, dst_chats = folder / "chats", target / "chats"
    if not dst_chats.exists():
        if chats.is_dir():
            tplan.renames.append(Rename(src=str(chats), dst=str(dst_chats), expect=dir_fingerprint(str(chats)),
                                        session=unit(folder), reason="merge into existing project folder"))
    else:
        for src in _chat_entries(chats):
            rel = src.relative_to(chats)
            dst = dst_chats / rel
            if dst.exists() or (rel.parent != Path(".") and not dst.parent.is_dir()):
                if dst.exists():
                    raise RefusedError(f"{src} and {dst} both exist; a session must live in one folder only; "
                                       "nothing moved")
                tplan.warnings.append(Warning("left-behind", f"{dst.parent} does not exist; left in place", path=str(src)))
                continue
            expect = (Fingerprint(dev=os.lstat(src).st_dev) if any(getattr(w, "path", None) == str(src)
                                                                   for w in tplan.writes)
                      else Fingerprint.of(str(src), with_hash=False))
            tplan.renames.append(Rename(src=str(src), dst=str(dst), expect=expect, session=unit(folder, src.name[:36]),
                                        reason="merge into existing project folder"))
    tplan.count("folders-merged")
    tplan.count("sessions", len(files))
    tplan.warnings.append(Warning("folder-merged", f"sessions merged into existing {target}; the rest of the folder "
                                  "(meta.json, memory/) stays", path=str(folder)))


def _chat_entries(chats: Path) -> list[Path]:
    """Every file of ``chats/`` and ``chats/archive/`` (sessions and their sidecars)."""
    out = []
    for d in (chats, chats / "archive"):
        try:
            out += sorted(p for p in d.iterdir() if p.is_file() and not p.is_symlink())
        except OSError:
            continue
    return out


line_fields = qwen_fields
