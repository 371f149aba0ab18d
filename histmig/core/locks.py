"""Locks: histmig's own global flock, and the flock probe the tools' own lock readers use.

* Global: ``fcntl.flock(LOCK_EX | LOCK_NB)`` on ``<state dir>/lock``; the kernel drops it when the
  process dies, so a SIGKILLed run leaves no stale lock (docs/specs/safety.md §3.3). The holder writes its pid
  into the file so a second run can say who holds it.
* Each client's own locks and live-session registries are read in that tool's folder
  (histmig/tools/codex/locks.py, tools/claude_family/live.py, tools/claude_code/json_lock.py over core/lockdir.py) and
  handed to the write path as its guards (histmig/apply/guards.py).
"""
from __future__ import annotations

import errno
import fcntl
import os
from pathlib import Path


from histmig.core.diagnostics import LockedError


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
