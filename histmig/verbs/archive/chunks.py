"""Append-aware chunking: a file becomes a list of ``[sha256, length]`` chunks in the store.

Session files grow at the end (JSONL transcripts are appended to). So the chunk boundaries of the file's
previous archived version are tried first: every earlier chunk that still matches, in order, is reused
without being stored again, and only the bytes after the last matching one are cut into new chunks of at
most :data:`CHUNK` bytes. An appended session therefore stores just its tail; a rewritten one stores
what changed from the first differing chunk on (unchanged later chunks that line up are still found by
hash). Memory is one chunk, whatever the file's size.
"""
from __future__ import annotations

import hashlib
import os

from histmig.core.fsread import open_read, read_full
from histmig.verbs.archive.store import Store
from histmig.core.valueclass import value

CHUNK = 1 << 20


@value
class Chunked:
    size: int
    mtime_ns: int
    mode: int
    sha256: str
    chunks: list[list]
    read: bool            # False: size and mtime were unchanged, the earlier chunk list was kept

    def __init__(self, size: int, mtime_ns: int, mode: int, sha256: str, chunks: list[list], read: bool) -> None:
        self.size = size
        self.mtime_ns = mtime_ns
        self.mode = mode
        self.sha256 = sha256
        self.chunks = chunks
        self.read = read


def chunk_file(path: str, store: Store, prev: dict | None) -> Chunked | None:
    """Archive ``path`` (None when it vanished or is not a regular file)."""
    try:
        fd = open_read(path)
    except OSError:
        return None
    with os.fdopen(fd, "rb", buffering=0) as fh:
        st = os.fstat(fh.fileno())
        if not _regular(st.st_mode):
            return None
        if prev and prev.get("size") == st.st_size and prev.get("mtime_ns") == st.st_mtime_ns:
            return Chunked(st.st_size, st.st_mtime_ns, st.st_mode & 0o7777, prev["sha256"], prev["chunks"], False)
        whole = hashlib.sha256()
        chunks: list[list] = []
        left = st.st_size            # read what the file held when we looked; later appends go to the next run
        for digest, size in (prev or {}).get("chunks", ()):
            if size > left:
                break
            data = read_full(fh, size)
            if hashlib.sha256(data).hexdigest() != digest:
                fh.seek(-len(data), os.SEEK_CUR)
                break
            whole.update(data)
            chunks.append([digest, size])
            left -= size
        while left > 0:
            data = read_full(fh, min(CHUNK, left))
            if not data:
                break
            whole.update(data)
            chunks.append([store.put(data), len(data)])
            left -= len(data)
        size = sum(n for _, n in chunks)
    return Chunked(size, st.st_mtime_ns, st.st_mode & 0o7777, whole.hexdigest(), chunks, True)


def _regular(mode: int) -> bool:
    import stat
    return stat.S_ISREG(mode)


class _Lines:
    """``read(n)`` over an iterator of byte strings (a tool's rows as lines), with a push-back."""

    def __init__(self, lines):
        self.lines, self.buf = iter(lines), b""

    def read(self, n: int) -> bytes:
        while len(self.buf) < n:
            nxt = next(self.lines, None)
            if nxt is None:
                break
            self.buf += nxt
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def unread(self, data: bytes) -> None:
        self.buf = data + self.buf


def chunk_stream(lines, store: Store, prev: dict | None) -> tuple[int, str, list[list]]:
    """Archive a stream of bytes (a session kept as database rows) the same append-aware way:
    (size, sha256, chunks). Memory: one chunk plus one line."""
    src = _Lines(lines)
    whole = hashlib.sha256()
    chunks: list[list] = []
    for digest, size in (prev or {}).get("chunks", ()):
        data = src.read(size)
        if len(data) < size or hashlib.sha256(data).hexdigest() != digest:
            src.unread(data)
            break
        whole.update(data)
        chunks.append([digest, size])
    while True:
        data = src.read(CHUNK)
        if not data:
            break
        whole.update(data)
        chunks.append([store.put(data), len(data)])
    return sum(n for _, n in chunks), whole.hexdigest(), chunks
