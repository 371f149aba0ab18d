"""Reading a byte range of an open file, whole or as its sha256: the bottom of the write path, shared by
the checks, the writers, rollback and undo (its own module so that none of them imports another for it)."""
from __future__ import annotations

import errno
import hashlib
import os


def sha_range(fd: int, start: int, end: int) -> str:
    h = hashlib.sha256()
    for chunk in read_range(fd, start, end):
        h.update(chunk)
    return h.hexdigest()


def read_range(fd: int, start: int, end: int, step: int = 1 << 20):
    pos = start
    while pos < end:
        chunk = os.pread(fd, min(step, end - pos), pos)
        if not chunk:
            raise OSError(errno.EIO, "file shrank while reading")
        yield chunk
        pos += len(chunk)


def prefix_intact(op, src: int, size: int) -> bool:
    """The first ``size`` bytes are still what the plan read: its whole-file hash, or for a plan
    applied directly (``Fingerprint.spans``: no whole-file hash) each patch's old bytes."""
    if op.expect.sha256:
        return sha_range(src, 0, size) == op.expect.sha256
    return bool(op.patches) and all(p.offset + len(p.old) <= size and os.pread(src, len(p.old), p.offset) == p.old
                                    for p in op.patches)
