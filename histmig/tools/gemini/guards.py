"""What the write path guards for Gemini CLI (histmig/apply/guards.py): ``projects.json`` is written only
under the client's own lock, ``projects.json.lock`` (proper-lockfile: a folder made with ``mkdir``, stale
after 10 s without a refresh; histmig/core/lockdir.py), which the client takes around every registry update
(docs/specs/gemini.md §1)."""
from __future__ import annotations

from pathlib import Path
from typing import Any, ContextManager

from histmig.apply.guards import FileLock, WriteGuards
from histmig.core import lockdir
from histmig.tools.gemini import files

HOLDER = "Gemini CLI"


def check_registry_lock(path: Path) -> None:
    """Refuse while Gemini holds a fresh lock on ``projects.json``."""
    lockdir.check(path, HOLDER)


def registry_lock(fs: Any, path: Path, *, wait_s: float = 1.0) -> ContextManager[None]:
    """Hold ``projects.json.lock`` while the registry is replaced (histmig/core/lockdir.py)."""
    return lockdir.hold(fs, path, HOLDER, wait_s=wait_s)


def guards(homes: Any) -> WriteGuards:
    return WriteGuards(file_locks=(FileLock(files.registry_path(files.gemini_dir(homes)), check_registry_lock,
                                            registry_lock),))
