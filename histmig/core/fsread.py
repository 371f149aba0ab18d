"""Opening a file for reading the way histmig always reads: no symlink followed, no blocking on a FIFO,
atime untouched where the kernel allows it. In core because planning (fingerprints) reads too;
the write path (histmig/apply/fsio.py) re-exports it."""
from __future__ import annotations

import os

NOATIME = getattr(os, "O_NOATIME", 0)


def open_read(name, *, dir_fd: int | None = None) -> int:
    """Open for reading without following a symlink, without blocking on a FIFO and, where the
    kernel allows it (our own files, or root), without touching atime — we keep atime exact."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        return os.open(name, flags | NOATIME, dir_fd=dir_fd)
    except PermissionError:
        return os.open(name, flags, dir_fd=dir_fd)


def read_full(fh, n: int) -> bytes:
    """Up to ``n`` bytes from a stream, fewer only at its end (a decompressing reader may return less
    than asked before it)."""
    parts, got = [], 0
    while got < n:
        part = fh.read(n - got)
        if not part:
            break
        parts.append(part)
        got += len(part)
    return parts[0] if len(parts) == 1 else b"".join(parts)
