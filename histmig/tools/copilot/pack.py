"""Copilot CLI's part of ``pack`` / ``unpack`` (docs/pack.md; histmig/toolkit/pack.py says what each hook does).

A session is its folder ``session-state/<id>/`` (``events.jsonl``, ``workspace.yaml`` with the cwd the
listing shows, checkpoints, snapshots), byte for byte; ``--rehome`` rewrites ``workspace.yaml``'s
``cwd:`` line with ``move``'s own patch (``move.cwd_patch``). The index database row is not carried:
Copilot lists sessions from their folders (docs/copilot.md).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from histmig.toolkit.pack import Entry, folder_entry


def entry(homes: Any, ref: Any) -> Entry:
    return folder_entry(homes.copilot, ref, Path(ref.path).parent)


def rule(rel: str):
    if rel.endswith("/workspace.yaml"):
        return ("patch", _workspace)
    return None


def _workspace(data: bytes, pm: Any) -> list:
    from histmig.tools.copilot import workspace  # noqa: PLC0415
    from histmig.tools.copilot.move import cwd_patch  # noqa: PLC0415
    cwd = workspace.parse(data).get("cwd")
    new = pm.rebase(cwd) if pm.covers(cwd) else None
    patch = cwd_patch(data, new) if new else None
    return [] if patch is None or patch.old == patch.new else [patch]
