"""Gemini CLI's part of a project move (docs/specs/gemini.md §7): the slug folder is kept; the registry
key in ``projects.json`` is re-keyed to the new path and both ``.project_root`` markers say the new path.
Session files stay as they are (``projectHash`` is not checked on load, §2).

When the client already ran in the new folder after the ``mv``, it registered the new path under a slug of
its own (empty listing, §7): that entry is dropped, the sessions it may have written there move into the
kept slug's ``chats/``, its markers are deleted (backed up, undoable) and its emptied folders removed.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson

from histmig.core.diagnostics import RefusedError, Warning
from histmig.core.plan import Delete, Fingerprint, Rename, RmDir, WriteFile
from histmig.toolkit.move.common import PathMap, ToolPlan, dir_fingerprint
from histmig.jsonio.regular import read_regular
from histmig.tools.gemini import files

TOOL = "gemini"


def plan_gemini(homes: Any, pm: PathMap, plans: dict[str, ToolPlan], opts: dict[str, Any]) -> None:
    if TOOL not in opts["tools"]:
        return
    tp = plans[TOOL]
    gdir = files.gemini_dir(homes)
    registry = files.read_registry(gdir)
    with pm.reading(str(files.registry_path(gdir))):      # a refused key is named with projects.json
        moved = {old: new for old in registry if (new := pm.rebase(old)) is not None and new != old}
    marker_ops = _marker_ops(gdir, pm)
    if not moved and not marker_ops:
        return
    keep = {registry[old] for old in moved}
    fresh = {new: registry[new] for new in moved.values() if new in registry and registry[new] not in keep}
    # nothing of an unreadable projects.json was read, so nothing to re-key there: say so, keep it
    op = _registry_op(gdir, registry, moved, fresh) if moved else None
    why = None if moved else files.registry_error(gdir)
    if why:
        tp.warnings.append(Warning("unparseable-file", f"{files.REGISTRY} left as is: {why}",
                                   path=str(files.registry_path(gdir))))
    if op is not None:
        tp.other.append(op)
        tp.count("files")
        tp.count("config-keys", len(moved))        # projects.json keys
    tp.writes += marker_ops
    tp.count("files", len(marker_ops))          # .project_root markers
    for new, slug in fresh.items():
        _fold_fresh_slug(gdir, slug, registry[next(o for o, n in moved.items() if n == new)], tp)


plan = plan_gemini              # the table's move hook (histmig/tools/__init__.py)


def _registry_op(gdir: Path, registry: dict[str, str], moved: dict[str, str],
                 fresh: dict[str, str]) -> WriteFile | None:
    """``projects.json`` with each moved key renamed in place (other bytes kept) and the entries the
    client made for the new paths dropped; verified by parsing."""
    path = files.registry_path(gdir)
    raw = read_regular(path)
    data = orjson.loads(raw)
    projects = data.get("projects")
    new_projects = {}
    for key, slug in projects.items():
        if key in fresh:
            continue
        new_projects[moved.get(key, key)] = slug
    expected = dict(data, projects=new_projects)
    new_raw = json.dumps(expected, indent=2, ensure_ascii=False).encode() + raw[len(raw.rstrip(b"\n")):]
    if json.dumps(data, indent=2, ensure_ascii=False).encode() != raw.rstrip(b"\n") and not fresh:
        new_raw = _rekey_bytes(raw, moved) or new_raw     # hand-formatted: keep its bytes where possible
    if orjson.loads(new_raw) != expected:
        raise RefusedError(f"internal error: the {path.name} edit did not verify; nothing changed", path=str(path))
    return WriteFile(path=str(path), expect=Fingerprint.of(path), new_bytes=new_raw,
                     session={"tool": TOOL, "id": _unit_id(gdir)}, reason=f"{len(moved)} project key(s) re-keyed")


def _unit_id(gdir: Path) -> str:
    """One unit for the registry and the markers a move re-keys: the apply changes them all or none,
    and an undo that keeps one (changed since) keeps the others with it, so a project's registry key
    and its two markers never disagree (``projects.json``, one file for every project, goes back whole)."""
    return f"projects:{files.registry_path(gdir)}"


def _rekey_bytes(raw: bytes, moved: dict[str, str]) -> bytes | None:
    """Each moved key's JSON string replaced where it occurs exactly once; None when one does not."""
    out = raw
    for old, new in moved.items():
        enc_old, enc_new = json.dumps(old, ensure_ascii=False).encode(), json.dumps(new, ensure_ascii=False).encode()
        if out.count(enc_old) != 1:
            return None
        out = out.replace(enc_old, enc_new)
    return out


def _marker_ops(gdir: Path, pm: PathMap) -> list[WriteFile]:
    """Both ``.project_root`` markers of every slug whose project moved, saying the new path."""
    ops = []
    for base in ("tmp", "history"):
        try:
            slugs = sorted(d for d in (gdir / base).iterdir() if d.is_dir() and not d.is_symlink())
        except OSError:
            continue
        for slug_dir in slugs:
            marker = slug_dir / files.MARKER
            old = files.read_marker(marker)
            with pm.reading(str(marker)):
                new = pm.rebase(old) if old else None
            if new is None or new == old:
                continue
            raw = marker.read_bytes()
            ops.append(WriteFile(path=str(marker), expect=Fingerprint.of(marker),
                                 new_bytes=raw.replace(old.encode(), new.encode(), 1),
                                 session={"tool": TOOL, "id": _unit_id(gdir), "folder": str(slug_dir)},
                                 reason="project marker"))
    return ops


def _fold_fresh_slug(gdir: Path, slug: str, kept: str, tp: ToolPlan) -> None:
    """The slug the client claimed for the new path: its sessions join the kept slug, the rest goes."""
    target = gdir / "tmp" / kept / "chats"
    fresh_tmp = gdir / "tmp" / slug
    for f in files.chat_files(fresh_tmp):
        dst = target / f.name
        if dst.exists() or not target.is_dir():
            tp.warnings.append(Warning("gemini-fresh-session-left",
                                       f"{f} was written after the move and is left in {fresh_tmp}", path=str(f)))
            continue
        tp.renames.append(Rename(src=str(f), dst=str(dst), expect=Fingerprint.of(f),
                                 session={"tool": TOOL, "folder": str(fresh_tmp)},
                                 reason="session written in the new folder joins the kept slug"))
        tp.count("sessions")
    for marker in files.markers(gdir, slug):
        if marker.is_file():
            tp.renames.append(Delete(path=str(marker), expect=Fingerprint.of(marker),
                                     reason="marker of the slug the client claimed after the move"))
    # one level only (undo recreates removed folders in plan order): a folder holding more than its
    # marker (the chats/ the client made, now emptied) stays, empty and unregistered
    for folder in (fresh_tmp, gdir / "history" / slug):
        if folder.is_dir() and not folder.is_symlink() and _only_marker(folder):
            tp.cleanup.append(RmDir(path=str(folder), expect=dir_fingerprint(str(folder)),
                                    reason="left empty by the move"))
    tp.count("folders")


def _only_marker(folder: Path) -> bool:
    try:
        return [p.name for p in folder.iterdir()] == [files.MARKER]
    except OSError:
        return False
