"""``~/.claude.json`` is guarded by ``~/.claude.json.lock``, a folder made with ``mkdir`` the way
proper-lockfile does it, stale after 10 s without an mtime refresh (docs/specs/safety.md §3.3, rows 35-36).
histmig takes it around every write of the file (tools/claude_code/guards.py)."""
from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path
from typing import Iterator

from histmig.core.diagnostics import LockedError


CLAUDE_LOCK_STALE_S = 10.0     # proper-lockfile's default ``stale`` (plf:lib/lockfile.js:11-12)


def claude_json_lock_age(claude_json: Path) -> float | None:
    """Seconds since ``<claude_json>.lock`` was last refreshed, or None when there is no lock."""
    try:
        return time.time() - os.lstat(f"{claude_json}.lock").st_mtime
    except FileNotFoundError:
        return None


def check_claude_json_lock(claude_json: Path) -> None:
    """Refuse while Claude Code holds a fresh lock on ``~/.claude.json``."""
    age = claude_json_lock_age(claude_json)
    if age is not None and age < CLAUDE_LOCK_STALE_S:
        raise LockedError(f"{claude_json} is locked by Claude Code ({claude_json}.lock, {age:.0f}s old); "
                          "retry in a few seconds", path=f"{claude_json}.lock")


@contextlib.contextmanager
def claude_json_lock(fs, claude_json: Path, *, wait_s: float = 1.0) -> Iterator[None]:
    """Hold ``<claude_json>.lock`` (mkdir through the facade) while ``~/.claude.json`` is replaced.

    A fresh lock held by Claude Code is waited on for up to ``wait_s``, then refused
    (``LockedError``); a stale one (no refresh for 10 s: its holder died) is removed and taken.
    Released with a plain rmdir (cleanup is not a counted step); a histmig killed while holding it
    leaves a lock that turns stale after 10 s, which Claude Code then takes over."""
    lock = f"{claude_json}.lock"
    deadline = time.monotonic() + wait_s
    while True:
        try:
            fs.mkdir(lock, 0o700, label=lock)
            break
        except FileExistsError:
            age = claude_json_lock_age(claude_json)
            if age is not None and age >= CLAUDE_LOCK_STALE_S:
                try:
                    os.rmdir(lock)        # proper-lockfile's lock is an empty folder
                except FileNotFoundError:
                    pass
                except OSError:
                    raise LockedError(f"{lock} is stale but cannot be removed", path=lock) from None
                continue
            if time.monotonic() >= deadline:
                check_claude_json_lock(claude_json)
                continue               # it went away just now: try again
            time.sleep(0.05)
    try:
        yield
    finally:
        try:
            os.rmdir(lock)
        except OSError:
            pass
