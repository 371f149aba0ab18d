"""``archive.unarchived``: sessions a client is about to delete that histmig's archive holds no copy of.

Each tool's check names what its client will delete in ``data["at_risk"]`` (Claude Code's
``cleanupPeriodDays`` sweep, Gemini CLI's session retention and its stub bug: docs/specs/claude-code.md §13,
docs/specs/gemini.md §4 and §6). This step, which names no tool, compares those files with the newest run of
the default archive (``<state dir>/archive``, histmig/verbs/archive) and points to ``histmig archive`` when a
file is not there as it is now (docs/archive.md).
"""
from __future__ import annotations

import os
from typing import Any

from histmig.toolkit.doctor.base import Finding


def unarchived(homes: Any, findings: list[Finding]) -> list[Finding]:
    at_risk: dict[str, list[str]] = {}
    for f in findings:
        for path in f.data.get("at_risk", ()):
            at_risk.setdefault(f.tool, [])
            if path not in at_risk[f.tool]:
                at_risk[f.tool].append(path)
    if not at_risk:
        return []
    # the archive's catalog (and zstandard, ~11 M instructions) only when a client is about to delete something
    from histmig.verbs.archive import catalog, default_root  # noqa: PLC0415
    root = default_root(homes)
    latest = catalog.latest_files(root)
    out = []
    for tool, paths in at_risk.items():
        missing = [p for p in paths if not _current(p, latest.get(p))]
        if missing:
            out.append(Finding("archive.unarchived", f"{len(missing)} session file(s) {tool} is about to delete have "
                               f"no current copy in {root}", path=missing[0], count=len(missing),
                               fix="histmig archive (then, once the client deleted them: histmig restore --deleted "
                                   "--apply)", data={"paths": missing, "archive": str(root)}, tool=tool))
    return out


def _current(path: str, entry: dict | None) -> bool:
    if entry is None:
        return False
    try:
        st = os.stat(path)
    except OSError:
        return True          # already gone: nothing left to archive
    return entry.get("size") == st.st_size and entry.get("mtime_ns") == st.st_mtime_ns
