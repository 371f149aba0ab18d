"""Codex's own locks (docs/specs/codex.md §15.4): ``thread-writer-locks/<thread_id>.lock`` (Rust
``File::try_lock`` = flock) marks a thread with a live writer; ``.tmp/rollout-maintenance.lock`` is
shared by compression and migration, and histmig holds it while replacing rollouts."""
from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path
from typing import Iterator

from histmig.core.diagnostics import LockedError
from histmig.core.locks import is_flocked


def codex_thread_locked(codex_home: Path, thread_id: str) -> bool:
    if not thread_id or "/" in thread_id or thread_id.startswith("."):
        return False
    return is_flocked(Path(codex_home) / "thread-writer-locks" / f"{thread_id}.lock")


@contextlib.contextmanager
def codex_maintenance_lock(codex_home: Path) -> Iterator[None]:
    """Hold Codex's ``.tmp/rollout-maintenance.lock`` (exclusive) while rewriting rollouts.

    Only when ``.tmp`` exists: we do not create folders in the Codex home just to lock (a Codex that
    never ran maintenance has none, and nothing to race with)."""
    tmp = Path(codex_home) / ".tmp"
    if not tmp.is_dir() or tmp.is_symlink():
        yield
        return
    path = tmp / "rollout-maintenance.lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise LockedError("Codex rollout maintenance (compression/migration) is running; retry later",
                              path=str(path)) from None
        yield
    finally:
        os.close(fd)
