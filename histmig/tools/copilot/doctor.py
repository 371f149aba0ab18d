"""Copilot CLI checks (docs/copilot.md, docs/doctor.md): listings that name a folder a move took away, a
broken ``parentId`` chain, broken lines. Read-only; ``workspace.yaml`` only, except the chain and
broken-line checks, which stream each events.jsonl once."""
from __future__ import annotations

from collections import defaultdict
from datetime import datetime
from pathlib import Path
from typing import Any

from histmig.core.diagnostics import HistmigError
from histmig.jsonio.jsonl import record_lines
from histmig.toolkit.doctor.base import Finding, dir_missing
from histmig.toolkit.doctor.locate import HomeIndex, move_fix
from histmig.tools.copilot import workspace
from histmig.tools.copilot.adapter import records_from_lines
from histmig.tools.copilot.move import session_dirs


def check(homes: Any, index: HomeIndex, now: datetime, ignored=lambda code: False) -> list[Finding]:
    """The table's doctor hook (histmig/tools/__init__.py)."""
    out: list[Finding] = []
    missing: dict[str, list[Path]] = defaultdict(list)
    for d in session_dirs(homes):
        cwd = workspace.read(d / "workspace.yaml").get("cwd")
        if isinstance(cwd, str) and cwd and dir_missing(cwd):
            missing[cwd].append(d)
        if (d / "events.jsonl").is_file() and not (ignored("copilot.broken-lines") and ignored("copilot.chain-broken")):
            out += _events(d / "events.jsonl")
    for cwd, dirs in sorted(missing.items()):
        new = index.suggest(cwd)
        out.append(Finding("copilot.cwd-missing", f"{len(dirs)} session(s) list {cwd}, which no longer exists"
                           + (f"; likely moved to {new}" if new else ""), path=str(dirs[0]), count=len(dirs),
                           fix=move_fix(cwd, new), data={"cwd": cwd, "suggested": new}))
    return out


def _events(path: Path) -> list[Finding]:
    bad: list[int] = []
    breaks: list[int] = []
    prev = None
    try:
        for r in records_from_lines(record_lines(path)):
            if r.opaque:
                bad.append(r.line or 0)
                continue
            if r.source_type == "blank":
                continue
            if prev is not None and r.parent_id != prev:
                breaks.append(r.line or 0)
            prev = r.id
    except (HistmigError, OSError) as e:
        return [Finding("copilot.broken-lines", f"cannot read: {e}", path=str(path))]
    out = []
    if bad:
        out.append(Finding("copilot.broken-lines", f"{len(bad)} line(s) do not parse (first: line {bad[0]})",
                           path=str(path), line=bad[0], count=len(bad), fix="nothing to do: Copilot skips them"))
    if breaks:
        out.append(Finding("copilot.chain-broken", f"{len(breaks)} event(s) do not follow the one before "
                           f"(first: line {breaks[0]})", path=str(path), line=breaks[0], count=len(breaks)))
    return out
