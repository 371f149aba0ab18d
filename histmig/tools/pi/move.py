"""Pi's part of a project move (docs/pi.md): everything Pi keys by path.

Pi finds a project's sessions in ``sessions/--<slug of cwd>--/`` (``pi -c`` takes the newest file there)
and reads the header ``cwd`` for listings, forks and ``--session <path>``. A session whose header ``cwd``
lies under OLD gets that ``cwd`` rewritten (line 1 only; the rest of the file keeps its bytes) and
moves to the folder of its new cwd: the whole folder is renamed when all of it moves to one folder that
does not exist yet, otherwise its files move one by one (an emptied folder is removed last). A flat
session dir (``$PI_CODING_AGENT_SESSION_DIR``, ``sessionDir``) has no folders: only the header changes.
A file open for writing, or a folder holding one, waits and is named.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from histmig.core.diagnostics import RefusedError, Skip
from histmig.core.livewriters import open_writers
from histmig.core.paths import safe_component
from histmig.core.plan import Fingerprint, Rename, RmDir
from histmig.toolkit.move.common import FieldEdit, PathMap, ToolPlan, dir_fingerprint, field_at, scan_file, shown
from histmig.tools.pi.layout import flat_dir, pi_slug, session_files, sessions_root, slug_dirs
from histmig.tools.pi.listing import header_cwd, header_id, header_problem

TOOL = "pi"


def pi_fields(obj: Any, pm: PathMap) -> list[FieldEdit]:
    """The path fields of one line: the header's ``cwd`` (entries name no project path)."""
    if isinstance(obj, dict) and obj.get("type") == "session":
        return field_at(obj, ("cwd",), pm)
    return []


def unit(folder: Path, sid: str | None = None, cwd: str | None = None, pm: PathMap | None = None) -> dict[str, str]:
    """An operation's ``session``: the session, its slug folder, and its cwd before and after the move
    (what the live probe in histmig/tools/pi/guards.py matches a running Pi against)."""
    out = {"tool": TOOL, **({"id": sid} if sid else {}), "folder": str(folder)}
    if cwd and pm is not None:
        out.update(cwd=cwd, new_cwd=pm.rebase(cwd) or cwd)
    return out


def _busy(files: list[Path]) -> dict[str, str]:
    """file -> who holds it open for writing."""
    stats = {}
    for f in files:
        try:
            st = os.stat(f)
            stats[(st.st_dev, st.st_ino)] = str(f)
        except OSError:
            pass
    return {stats[k]: v[0].describe() for k, v in open_writers(stats).items()}


def _edit(tplan: ToolPlan, path: Path, pm: PathMap, opts: dict[str, Any], folder: Path) -> bool:
    """Plan the header edit of one session; False (and a skip) when the file must stay as it is."""
    scan = scan_file(str(path), pm, pi_fields, rewrite_content=opts["rewrite_content"])
    if scan.skip:
        tplan.skips.append(Skip(str(path), scan.skip, "in-use"))
        return False
    tplan.add_scan(scan, session=unit(folder, header_id(path), header_cwd(path), pm), reason="project move")
    return True


def _slug_ok(path: Path, cwd: str, pm: PathMap, tplan: ToolPlan) -> bool:
    """Whether the session's new folder name can be made; else a skip (a cwd of 300 bytes)."""
    if safe_component(pi_slug(pm.rebase(cwd))):
        return True
    tplan.skips.append(Skip(str(path), f"line 1: the folder name for {shown(pm.rebase(cwd))} would be over 255 bytes; "
                            "left as it is", "bad-cwd"))
    return False


def _covers(pm: PathMap, path: Path, cwd: str | None) -> bool:
    """``pm.covers`` of a session's header ``cwd`` (line 1): a refused one is named with its file."""
    with pm.reading(str(path), 1):
        return pm.covers(cwd)


def _broken_headers(files: list[Path], pm: PathMap, tplan: ToolPlan) -> None:
    """A session whose header does not parse (a duplicate ``cwd`` key) but names OLD is skipped and
    named: left behind silently, it would vanish from the project's listing after the ``mv``.
    ``files``: those whose header gave no cwd."""
    for f in files:
        if (bad := header_problem(f)) and any(n in bad[0] for n in pm.needles):
            tplan.skips.append(Skip(str(f), f"line 1: {bad[1]}; the session's header cannot be edited safely, "
                                    "left as it is", "unparseable-line"))


def plan_folder(folder: Path, root: Path, pm: PathMap, tplan: ToolPlan, opts: dict[str, Any],
                existing: set[str]) -> None:
    files = session_files(folder)
    cwds = {f: header_cwd(f) for f in files}
    _broken_headers([f for f, cwd in cwds.items() if cwd is None], pm, tplan)
    ours = [(f, cwd) for f, cwd in cwds.items() if _covers(pm, f, cwd) and _slug_ok(f, cwd, pm, tplan)]
    if not ours:
        return
    busy = _busy(files)
    if busy:
        why = "; ".join(f"{f} is open for writing by {who}" for f, who in sorted(busy.items()))
        tplan.skips.append(Skip(str(folder), f"{why}; the folder waits (nothing in it is changed); when it ends, "
                                f"re-run: {opts['rerun']}", "live-folder"))
        tplan.waiting[str(folder)] = "live-folder"
        return
    moving = [(f, pi_slug(pm.rebase(cwd))) for f, cwd in ours if _edit(tplan, f, pm, opts, folder)]
    moving = [(f, t) for f, t in moving if t != folder.name]
    if not moving:
        return
    targets = {t for _, t in moving}
    everything = len(moving) == len(os.listdir(folder))
    target = next(iter(targets))
    if everything and len(targets) == 1 and target not in existing:
        tplan.renames.append(Rename(src=str(folder), dst=str(root / target), expect=dir_fingerprint(str(folder)),
                                    session=unit(folder, None, ours[0][1], pm),
                                    reason=f"Pi's folder of {pm.rebase(ours[0][1])}"))
        existing.add(target)
        tplan.count("folders")
        tplan.count("sessions", len(moving))
        return
    for f, t in moving:
        dst = root / t / f.name
        if dst.exists():
            raise RefusedError(f"{dst} exists; refusing to replace a Pi session, nothing moved")
        tplan.renames.append(Rename(src=str(f), dst=str(dst), expect=_fp(f, tplan),
                                    session=unit(folder, header_id(f), header_cwd(f), pm),
                                    reason=f"into Pi's folder of {pm.rebase(header_cwd(f))}"))
        tplan.count("sessions")
    if everything:
        tplan.cleanup.append(RmDir(path=str(folder), expect=dir_fingerprint(str(folder)), session=unit(folder),
                                   reason="emptied by the move"))


def _fp(path: Path, tplan: ToolPlan) -> Fingerprint:
    """A file rewritten earlier in the same plan gets a new inode: only its device is expected then."""
    if any(getattr(w, "path", None) == str(path) for w in tplan.writes):
        return Fingerprint(dev=os.lstat(path).st_dev)
    return Fingerprint.of(str(path), with_hash=False)


def plan_pi(homes: Any, pm: PathMap, plans: dict[str, ToolPlan], opts: dict[str, Any]) -> None:
    tplan = plans[TOOL]
    root = sessions_root(homes)
    existing = {d.name for d in slug_dirs(root)}
    for folder in slug_dirs(root):
        plan_folder(folder, root, pm, tplan, opts, existing)
    flat = flat_dir(homes)
    if flat is not None and flat.is_dir():
        cwds = {f: header_cwd(f) for f in session_files(flat)}
        _broken_headers([f for f, cwd in cwds.items() if cwd is None], pm, tplan)
        busy = _busy([f for f, cwd in cwds.items() if _covers(pm, f, cwd)])
        for f, cwd in cwds.items():
            if not pm.covers(cwd):
                continue
            if str(f) in busy:
                tplan.skips.append(Skip(str(f), f"open for writing by {busy[str(f)]}; re-run: {opts['rerun']}",
                                        "in-use"))
            elif _edit(tplan, f, pm, opts, flat):
                tplan.count("sessions")


plan = plan_pi                 # the table's move hook (histmig/tools/__init__.py)
line_fields = pi_fields
