"""What the write path guards for Gemini CLI (histmig/apply/guards.py): ``projects.json`` is written only
under the client's own lock, ``projects.json.lock`` (proper-lockfile: a folder made with ``mkdir``, stale
after 10 s without a refresh), which the client takes around every registry update (docs/specs/gemini.md §1)."""
from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path
from typing import Any, Iterator

from histmig.apply.guards import FileLock, WriteGuards
from histmig.core.diagnostics import LockedError
from histmig.tools.gemini import files

STALE_S = 10.0      # proper-lockfile's default ``stale``


def _age(path: Path) -> float | None:
    try:
        return time.time() - os.lstat(f"{path}.lock").st_mtime
    except FileNotFoundError:
        return None


def check_registry_lock(path: Path) -> None:
    """Refuse while Gemini holds a fresh lock on ``projects.json``."""
    age = _age(path)
    if age is not None and age < STALE_S:
        raise LockedError(f"{path} is locked by Gemini CLI ({path}.lock, {age:.0f}s old); retry in a few seconds",
                          path=f"{path}.lock")


@contextlib.contextmanager
def registry_lock(fs: Any, path: Path, *, wait_s: float = 1.0) -> Iterator[None]:
    """Hold ``projects.json.lock`` while the registry is replaced; a fresh lock is waited on, then refused,
    a stale one (its holder died) taken over."""
    lock = f"{path}.lock"
    deadline = time.monotonic() + wait_s
    while True:
        try:
            fs.mkdir(lock, 0o700, label=lock)
            break
        except FileExistsError:
            age = _age(path)
            if age is not None and age >= STALE_S:
                with contextlib.suppress(FileNotFoundError):
                    os.rmdir(lock)
                continue
            if time.monotonic() >= deadline:
                check_registry_lock(path)
                continue
            time.sleep(0.05)
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            os.rmdir(lock)


def guards(homes: Any) -> WriteGuards:
    return WriteGuards(file_locks=(FileLock(files.registry_path(files.gemini_dir(homes)), check_registry_lock,
                                            registry_lock),))
