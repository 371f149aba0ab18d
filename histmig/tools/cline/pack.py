"""Cline CLI's part of ``pack`` / ``unpack`` (docs/pack.md; histmig/toolkit/pack.py says what each hook does).

A session is its folder ``data/sessions/<id>/`` (the messages file and the manifest ``<id>.json``), byte
for byte; ``--rehome`` rewrites the manifest's ``cwd`` and ``workspace_root`` with ``move``'s own field
rule (``move.manifest_fields``). The index row in ``data/db/sessions.db`` is not carried (docs/cline.md:
``cline --id`` resumes from the files).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from histmig.toolkit.pack import Entry, folder_entry


def entry(homes: Any, ref: Any) -> Entry:
    return folder_entry(homes.cline, ref, Path(ref.path).parent)


def rule(rel: str):
    name = rel.rsplit("/", 1)[-1]
    if name.endswith(".json") and not name.endswith(".messages.json"):
        from histmig.tools.cline.move import manifest_fields  # noqa: PLC0415
        return ("json", manifest_fields)
    return None
