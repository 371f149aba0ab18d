"""Locks: histmig's own global flock, and the locks the agents use for live sessions.

* Global: ``fcntl.flock(LOCK_EX | LOCK_NB)`` on ``<state dir>/lock``; the kernel drops it when the
  process dies, so a SIGKILLed run leaves no stale lock (docs/specs/safety.md §3.3). The holder writes its pid
  into the file so a second run can say who holds it.
* Codex: ``thread-writer-locks/<thread_id>.lock`` (Rust ``File::try_lock`` = flock) marks a thread
  with a live writer; ``.tmp/rollout-maintenance.lock`` is shared by compression and migration, and
  histmig holds it while replacing rollouts (docs/specs/codex.md §15.4).
* Claude Code: ``<claude home>/sessions/<pid>.json`` lists live sessions (docs/specs/claude-code.md §1);
  ``~/.claude.json`` is guarded by ``~/.claude.json.lock``, a folder made with ``mkdir`` the way
  proper-lockfile does it, stale after 10 s without an mtime refresh (docs/specs/safety.md §3.3, rows 35-36).
"""
from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import time
from pathlib import Path
from typing import Iterator

import orjson

from histmig.core.diagnostics import LockedError
from histmig.core.livewriters import pid_alive


def ensure_private_dir(path: Path) -> None:
    """Create ``path`` (and parents) with mode 0700 from the start; tighten an existing one."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    if path.stat().st_mode & 0o077:
        os.chmod(path, 0o700)


class GlobalLock:
    def __init__(self, state_dir: Path):
        self.path = Path(state_dir) / "lock"
        self.fd: int | None = None

    def acquire(self) -> "GlobalLock":
        ensure_private_dir(self.path.parent)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            holder = _read_pid(fd)
            os.close(fd)
            if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                who = f" (pid {holder})" if holder else ""
                raise LockedError(f"another histmig is running{who}", path=str(self.path)) from None
            raise
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        except OSError:
            pass    # the pid is only for "another histmig is running (pid N)"; a full disk must not keep the lock open
        self.fd = fd
        return self

    def release(self) -> None:
        if self.fd is not None:
            os.ftruncate(self.fd, 0)
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None

    def __enter__(self) -> "GlobalLock":
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


def _read_pid(fd: int) -> int | None:
    try:
        text = os.pread(fd, 32, 0).decode().strip()
        return int(text) if text.isdigit() else None
    except (OSError, ValueError):
        return None


def is_flocked(path: Path) -> bool:
    """True if someone holds a flock on ``path`` (we probe with a shared, non-blocking lock)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    except OSError as e:
        return e.errno in (errno.EWOULDBLOCK, errno.EAGAIN)
    finally:
        os.close(fd)


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


def claude_live_sessions(claude_home: Path) -> dict[str, int]:
    """``{sessionId: pid}`` for entries of ``<claude home>/sessions/<pid>.json`` whose pid is alive."""
    return {sid: pid for sid, (pid, _cwd) in claude_live_registry(claude_home).items()}


def claude_live_registry(claude_home: Path) -> dict[str, tuple[int, str | None]]:
    """``{sessionId: (pid, cwd)}`` of the live entries: the cwd says which project folder a live
    session writes to even before its transcript exists."""
    live: dict[str, tuple[int, str | None]] = {}
    folder = Path(claude_home) / "sessions"
    if not folder.is_dir():
        return live
    for entry in folder.glob("*.json"):
        try:
            data = orjson.loads(entry.read_bytes())
            pid = int(data.get("pid") or entry.stem)
        except (OSError, ValueError, TypeError, AttributeError):
            continue
        sid, cwd = data.get("sessionId"), data.get("cwd")
        if isinstance(sid, str) and pid_alive(pid):
            live[sid] = (pid, cwd if isinstance(cwd, str) else None)
    return live


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
