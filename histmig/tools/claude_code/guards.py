"""What the write path guards for Claude Code (histmig/apply/guards.py): ``~/.claude.json`` is written
only under Claude Code's own lock (``<file>.lock``, proper-lockfile), and a session in its live
registry, or a project folder one writes to, waits."""
from __future__ import annotations

from typing import Any

from histmig.apply.guards import FileLock, WriteGuards
from histmig.tools.claude_code import json_lock
from histmig.tools.claude_family.live import live_probe


def guards(homes: Any) -> WriteGuards:
    live = live_probe(homes.claude, by_id=True)
    return WriteGuards(file_locks=(FileLock(homes.claude_json, json_lock.check_claude_json_lock, json_lock.claude_json_lock),),
                       live={"claude-code": live, "claude": live})    # "claude": the alias the write path always took
