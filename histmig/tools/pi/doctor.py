"""Pi checks (docs/pi.md): history hidden after a folder move, sessions in the wrong folder, ambiguous
id prefixes across projects, assistant messages without ``usage``, broken lines. Read-only; each file
is streamed line by line."""
from __future__ import annotations

from collections import defaultdict
from datetime import datetime
from pathlib import Path

from histmig.core.homes import Homes
from histmig.jsonio.jsonl import record_lines
from histmig.toolkit.doctor.base import Finding, dir_missing
from histmig.toolkit.doctor.locate import HomeIndex, move_fix
from histmig.tools.pi.layout import flat_dir, pi_slug, session_files, sessions_root, slug_dirs
from histmig.tools.pi.listing import header

PREFIX = 8       # what Pi's own listings show and users type (``pi --session 01a23020``)


def check(homes: Homes, index: HomeIndex, now: datetime, ignored=lambda code: False) -> list[Finding]:
    """The table's doctor hook (histmig/tools/__init__.py)."""
    out: list[Finding] = []
    sessions: list[tuple[Path, dict]] = []
    missing: dict[str, list[Path]] = defaultdict(list)
    for folder in slug_dirs(sessions_root(homes)):
        for f in session_files(folder):
            h = header(f)
            if h is None:
                continue
            sessions.append((f, h))
            cwd = h.get("cwd") if isinstance(h.get("cwd"), str) else None
            if dir_missing(cwd):
                missing[cwd].append(f)
            elif cwd and folder.name != pi_slug(cwd):
                out.append(Finding("pi.folder-mismatch", f"recorded in {cwd} but kept in {folder.name} "
                                   f"(Pi looks in {pi_slug(cwd)})", path=str(f),
                                   fix=f"histmig move <the folder {folder.name} was made for> {cwd} --apply",
                                   data={"cwd": cwd, "folder": folder.name}))
    flat = flat_dir(homes)
    for f in session_files(flat) if flat is not None else []:
        h = header(f)
        if h is not None:
            sessions.append((f, h))
            if dir_missing(h.get("cwd") if isinstance(h.get("cwd"), str) else None):
                missing[h["cwd"]].append(f)
    for cwd, files in sorted(missing.items()):
        new = index.suggest(cwd)
        out.append(Finding("pi.cwd-missing", f"{len(files)} session(s) were recorded in {cwd}, which no longer exists"
                           + (f"; likely moved to {new}" if new else "") + "; `pi -c` there starts empty",
                           path=str(files[0].parent), count=len(files), fix=move_fix(cwd, new),
                           data={"cwd": cwd, "suggested": new}))
    out += _prefixes(sessions)
    for f, _ in sessions:
        out += _lines(f)
    return out


def _prefixes(sessions: list[tuple[Path, dict]]) -> list[Finding]:
    """8-character prefixes shared by sessions of different projects."""
    groups: dict[str, dict[str, str]] = defaultdict(dict)
    for _path, h in sessions:
        sid = h.get("id")
        if isinstance(sid, str) and len(sid) > PREFIX:
            groups[sid[:PREFIX]][sid] = h.get("cwd") if isinstance(h.get("cwd"), str) else ""
    out = []
    for prefix, ids in sorted(groups.items()):
        if len(set(ids.values())) > 1:
            shown = ", ".join(f"{sid} ({cwd})" for sid, cwd in sorted(ids.items()))
            out.append(Finding("pi.ambiguous-prefix", f"`pi --session {prefix}` may open any of: {shown}",
                               count=len(ids), fix=f"pass the full id to `pi --session` (not {prefix})",
                               data={"prefix": prefix, "ids": sorted(ids)}))
    return out


def _lines(path: Path) -> list[Finding]:
    """Broken lines and assistant messages without usage, in one streamed pass."""
    broken: list[int] = []
    no_usage: list[int] = []
    try:
        for line in record_lines(path):
            if line.blank:
                continue
            obj = line.obj if line.error is None else None
            if not isinstance(obj, dict):
                broken.append(line.number)
                continue
            msg = obj.get("message")
            if (obj.get("type") == "message" and isinstance(msg, dict) and msg.get("role") == "assistant"
                    and not isinstance(msg.get("usage"), dict)):
                no_usage.append(line.number)
    except Exception as e:     # an unreadable file is reported, never fatal for the other checks
        return [Finding("pi.broken-lines", f"cannot read: {e}", path=str(path))]
    out = []
    if broken:
        out.append(Finding("pi.broken-lines", f"{len(broken)} line(s) do not parse (first: line {broken[0]})",
                           path=str(path), line=broken[0], count=len(broken), fix="nothing to do: Pi skips them"))
    if no_usage:
        out.append(Finding("pi.usage-missing", f"{len(no_usage)} assistant message(s) without usage "
                           f"(first: line {no_usage[0]}); `pi -c` crashes on them", path=str(path), line=no_usage[0],
                           count=len(no_usage), fix="add a usage object to each (see docs/pi.md)"))
    return out
