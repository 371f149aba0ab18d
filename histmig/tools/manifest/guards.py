"""What the write path guards for the manifest layout (histmig/apply/guards.py): it lives in the Claude
home's project folders, so a folder a live Claude Code session writes to waits whole (its session ids
are its own: only the folder is checked)."""
from __future__ import annotations

from typing import Any

from histmig.apply.guards import WriteGuards
from histmig.tools.claude_family.live import live_probe


def guards(homes: Any) -> WriteGuards:
    return WriteGuards(live={"manifest": live_probe(homes.manifest, by_id=False)})
