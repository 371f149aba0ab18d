"""Qwen Code checks (docs/qwen.md, docs/doctor.md): history a folder move hid, sessions in the wrong
folder, file names that are not the session id, broken lines. Read-only; heads only, except the broken-line
count, which streams each file once."""
from __future__ import annotations

from collections import defaultdict
from datetime import datetime
from pathlib import Path
from typing import Any

from histmig.core.diagnostics import HistmigError
from histmig.jsonio.jsonl import head_lines, record_lines
from histmig.toolkit.doctor.base import Finding, dir_missing
from histmig.toolkit.doctor.locate import HomeIndex, move_fix
from histmig.tools.claude_family.listing import UUID_RE, subdirs
from histmig.tools.qwen.adapter import chat_files, projects_root, qwen_slug, records_from_lines


def first_record(path: Path) -> dict[str, Any] | None:
    """Qwen reads only the first line to decide where a session belongs (``readProjectSessionHead``)."""
    try:
        for line in head_lines(path, max_lines=1):
            return line.obj if isinstance(line.obj, dict) else None
    except (HistmigError, OSError):
        return None
    return None


def check(homes: Any, index: HomeIndex, now: datetime, ignored=lambda code: False) -> list[Finding]:
    """The table's doctor hook (histmig/tools/__init__.py)."""
    out: list[Finding] = []
    missing: dict[str, list[Path]] = defaultdict(list)
    for folder in subdirs(projects_root(homes)):
        for path in chat_files(folder):
            head = first_record(path) or {}
            cwd, sid = head.get("cwd"), head.get("sessionId")
            if isinstance(cwd, str) and dir_missing(cwd):
                missing[cwd].append(path)
            elif isinstance(cwd, str) and qwen_slug(cwd) != folder.name:
                right = projects_root(homes) / qwen_slug(cwd) / "chats"
                out.append(Finding("qwen.folder-mismatch", f"recorded in {cwd}, but kept in {folder.name}",
                                   path=str(path), fix=f"mv {path} {right}/", data={"cwd": cwd}))
            if isinstance(sid, str) and sid.lower() != path.stem.lower():
                out.append(_id_mismatch(path, sid))
            if not ignored("qwen.broken-lines"):
                out += _broken(path)
    for cwd, paths in sorted(missing.items()):
        new = index.suggest(cwd)
        out.append(Finding("qwen.cwd-missing", f"{len(paths)} session(s) were recorded in {cwd}, which no longer "
                           "exists" + (f"; likely moved to {new}" if new else ""), path=str(paths[0].parent.parent),
                           count=len(paths), fix=move_fix(cwd, new), data={"cwd": cwd, "suggested": new}))
    return out


def _id_mismatch(path: Path, sid: str) -> Finding:
    # the id comes from the file: a rename is suggested only to a UUID name (never "../x" or "a/b")
    fix = f"mv {path} {path.with_name(sid + '.jsonl')}" if UUID_RE.match(sid) else "nothing safe to rename to"
    return Finding("qwen.id-mismatch", f"file name {path.stem} but sessionId {sid!r}", path=str(path), fix=fix)


def _broken(path: Path) -> list[Finding]:
    try:
        bad = [r.line for r in records_from_lines(record_lines(path)) if r.opaque]
    except (HistmigError, OSError) as e:
        return [Finding("qwen.broken-lines", f"cannot read: {e}", path=str(path))]
    if not bad:
        return []
    return [Finding("qwen.broken-lines", f"{len(bad)} line(s) do not parse (first: line {bad[0]})", path=str(path),
                    line=bad[0], count=len(bad), fix="nothing to do: Qwen skips them")]
