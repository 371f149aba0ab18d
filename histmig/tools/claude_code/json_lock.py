"""``~/.claude.json`` is guarded by ``~/.claude.json.lock``, a folder made with ``mkdir`` the way
proper-lockfile does it, stale after 10 s without an mtime refresh (docs/specs/safety.md §3.3, rows 35-36).
histmig takes it around every write of the file (tools/claude_code/guards.py); the lock itself is
histmig/core/lockdir.py."""
from __future__ import annotations

from pathlib import Path
from typing import Iterator

from histmig.core import lockdir

CLAUDE_LOCK_STALE_S = lockdir.STALE_S     # proper-lockfile's default ``stale`` (plf:lib/lockfile.js:11-12)
HOLDER = "Claude Code"


def claude_json_lock_age(claude_json: Path) -> float | None:
    """Seconds since ``<claude_json>.lock`` was last refreshed, or None when there is no lock."""
    return lockdir.lock_age(claude_json)


def check_claude_json_lock(claude_json: Path) -> None:
    """Refuse while Claude Code holds a fresh lock on ``~/.claude.json``."""
    lockdir.check(claude_json, HOLDER, CLAUDE_LOCK_STALE_S)


def claude_json_lock(fs, claude_json: Path, *, wait_s: float = 1.0) -> Iterator[None]:
    """Hold ``<claude_json>.lock`` while ``~/.claude.json`` is replaced (histmig/core/lockdir.py)."""
    return lockdir.hold(fs, claude_json, HOLDER, wait_s=wait_s, stale_s=CLAUDE_LOCK_STALE_S)
