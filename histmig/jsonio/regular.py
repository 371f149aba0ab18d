"""Opening a file to read it safely: no final symlink followed, no blocking on a FIFO, a regular file
only. The bottom of jsonio (jsonl and zst both open files with it)."""
from __future__ import annotations

import os
import stat
from typing import BinaryIO

from histmig.core import progress
from histmig.core.diagnostics import HistmigInputError


def open_regular(path: str | os.PathLike) -> BinaryIO:
    """Open a file for reading without following a final symlink and without blocking on a FIFO;
    refuse anything that is not a regular file."""
    fd = open_regular_fd(path)
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb", buffering=0)


def open_regular_fd(path: str | os.PathLike) -> int:
    """:func:`open_regular` as a bare fd (for a caller that reads once and closes: a dry run's
    line 1 of every rollout). It stays O_NONBLOCK, which has no effect on a regular file."""
    return open_regular_stat(path)[0]


def open_regular_stat(path: str | os.PathLike) -> tuple[int, os.stat_result]:
    """:func:`open_regular_fd` and the ``fstat`` it checked (a caller that needs the size or mtime
    too: no second ``fstat``)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        import errno
        if e.errno == errno.ELOOP:
            raise HistmigInputError("is a symlink; not followed", path=path) from None
        if e.errno in (errno.EACCES, errno.EPERM):
            raise HistmigInputError("permission denied", path=path) from None
        raise HistmigInputError(e.strerror or str(e), path=path) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise HistmigInputError("not a regular file", path=path)
    except BaseException:
        os.close(fd)
        raise
    progress.note("file", st.st_size)
    return fd, st


def open_or_stat(path: str | os.PathLike) -> tuple[int | None, os.stat_result]:
    """:func:`open_regular_stat` for a listing that reads the file next: the fd and its fstat, so
    the file costs one stat, not a ``stat`` and an ``fstat``. When it cannot be opened, no fd and
    ``os.stat(path)`` (its OSError raised), so what follows is what followed a stat before: the
    reader's own open raises the open's error."""
    try:
        return open_regular_stat(path)
    except HistmigInputError:
        return None, os.stat(path)


def read_regular(path: str | os.PathLike, limit: int = 64 << 20) -> bytes:
    """The bytes of a small file (settings, registry, marker) read whole: a symlink is followed (these
    are often dotfile links, and reading through one writes nothing), but a FIFO or device is refused
    without blocking, and a file over ``limit`` bytes is refused. HistmigInputError names it; OSError
    from the open passes (FileNotFoundError: absent)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise HistmigInputError("not a regular file", path=path)
        chunks, total = [], 0
        while total <= limit and (chunk := os.read(fd, 1 << 20)):   # no limit-sized buffer up front
            chunks.append(chunk)
            total += len(chunk)
    finally:
        os.close(fd)
    if total > limit:
        raise HistmigInputError(f"over {limit} bytes", path=path)
    return b"".join(chunks)
