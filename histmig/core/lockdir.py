"""A client's lock on one file the way proper-lockfile makes it: ``<file>.lock``, a folder made with
``mkdir``, refreshed by its holder, stale after ``stale_s`` seconds without a refresh (its holder died)
(docs/specs/safety.md §3.3). The tool that knows the client names the file and the holder."""
from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path
from typing import Any, Iterator

from histmig.core.diagnostics import LockedError

STALE_S = 10.0      # proper-lockfile's default ``stale``


def lock_age(path: Path) -> float | None:
    """Seconds since ``<path>.lock`` was last refreshed, or None when there is no lock."""
    try:
        return time.time() - os.lstat(f"{path}.lock").st_mtime
    except FileNotFoundError:
        return None


def check(path: Path, holder: str, stale_s: float = STALE_S) -> None:
    """Refuse (``LockedError``) while ``holder`` (the client, for the message) holds a fresh lock on ``path``."""
    age = lock_age(path)
    if age is not None and age < stale_s:
        raise LockedError(f"{path} is locked by {holder} ({path}.lock, {age:.0f}s old); retry in a few seconds",
                          path=f"{path}.lock")


@contextlib.contextmanager
def hold(fs: Any, path: Path, holder: str, *, wait_s: float = 1.0, stale_s: float = STALE_S) -> Iterator[None]:
    """Hold ``<path>.lock`` (mkdir through the fsio facade ``fs``) while ``path`` is replaced.

    A fresh lock is waited on for up to ``wait_s``, then refused (``LockedError``); a stale one is removed
    and taken. Released with a plain rmdir (cleanup is not a counted step); a histmig killed while holding
    it leaves a lock that turns stale, which the client then takes over."""
    lock = f"{path}.lock"
    deadline = time.monotonic() + wait_s
    while True:
        try:
            fs.mkdir(lock, 0o700, label=lock)
            break
        except FileExistsError:
            age = lock_age(path)
            if age is not None and age >= stale_s:
                try:
                    os.rmdir(lock)        # proper-lockfile's lock is an empty folder
                except FileNotFoundError:
                    pass
                except OSError:
                    raise LockedError(f"{lock} is stale but cannot be removed", path=lock) from None
                continue
            if time.monotonic() >= deadline:
                check(path, holder, stale_s)
                continue               # it went away just now: try again
            time.sleep(0.05)
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            os.rmdir(lock)
