"""The new content of a rewritten file, as a list of segments of the source.

A segment ``(start, end, new)`` covers the source bytes ``[start, end)``; ``new is None`` means
"copy them unchanged", otherwise they are replaced by ``new`` (a patch, a transformed appended
tail, or a whole new content). One function, :func:`segments`, defines what "post" means; the
expected hashes (precheck, :func:`digest`) and the temp-file writer (:func:`write_segments`) both
walk it, so they always agree. (A ``.jsonl.zst`` is rewritten by :mod:`histmig.apply.zstdfill`:
its patches address the decompressed bytes.)

Speed: a Claude transcript has one patch per line, so segments are many and small. They are served
from a 1 MiB window read with one ``pread`` (:class:`Window`), gathered into one buffer and written
with one ``write`` per MiB; only long unchanged ranges bypass Python (``copy_file_range``).
"""
from __future__ import annotations

import errno
import hashlib
import os
from typing import Iterator

from histmig.apply import fsio
from histmig.apply.options import ApplyOptions, Prepared

Segment = tuple[int, int, bytes | None]
WINDOW = 1 << 20
COPY_MIN = 64 << 10  # unchanged ranges this long go through copy_file_range; shorter ones ride in the buffer


class Window:
    """Random access to a file through one reused buffer (most reads are sequential). ``view``
    returns a memoryview valid until the next call (no copy: hashing and buffering take it as is);
    ``read`` returns bytes."""

    def __init__(self, fd: int, size: int = WINDOW, *, file_size: int | None = None):
        if file_size is not None:   # a small file gets a small buffer
            size = max(4096, min(size, file_size))
        self.fd, self.size, self.start, self.len = fd, size, 0, 0
        self.buf = bytearray(size)
        self.mv = memoryview(self.buf)

    def view(self, start: int, end: int) -> memoryview:
        if not (self.start <= start and end <= self.start + self.len):
            if end - start > self.size:
                return memoryview(_pread_all(self.fd, start, end))
            self.start, self.len = start, os.preadv(self.fd, [self.mv], start)
            if self.len < end - start:
                raise OSError(errno.EIO, "file shrank while reading")
        return self.mv[start - self.start:end - self.start]

    def read(self, start: int, end: int) -> bytes:
        return bytes(self.view(start, end))

    def chunks(self, start: int, end: int) -> Iterator[memoryview]:
        for pos in range(start, end, self.size):
            yield self.view(pos, min(end, pos + self.size))


def _pread_all(fd: int, start: int, end: int) -> bytes:
    out = bytearray()
    while start + len(out) < end:
        chunk = os.pread(fd, end - start - len(out), start + len(out))
        if not chunk:
            raise OSError(errno.EIO, "file shrank while reading")
        out += chunk
    return bytes(out)


def segments(prep: Prepared, win: Window, cur_size: int, opts: ApplyOptions, *, stale=OSError) -> Iterator[Segment]:
    """The new content as segments of the source; checks each patch's old bytes on the way."""
    if prep.content is not None:
        yield 0, prep.base_size, prep.content
    else:
        pos = 0
        for offset, old, new in prep.patches.rows():
            end = offset + len(old)
            if end > prep.base_size:
                raise stale(f"{prep.op.paths()[0]}: patch at offset {offset} beyond the planned size")
            if offset > pos:
                yield pos, offset, None
            if win.read(offset, end) != old:
                raise stale(_changed(prep, offset))
            yield offset, end, new
            pos = end
        if prep.base_size > pos:
            yield pos, prep.base_size, None
    if cur_size > prep.base_size:
        tail = win.read(prep.base_size, cur_size)
        yield prep.base_size, cur_size, opts.transform_tail(prep.op, tail)


def _changed(prep: Prepared, offset: int) -> str:
    return f"{prep.op.paths()[0]}: content changed since plan (bytes at offset {offset})"


def digest(prep: Prepared, src: int, cur_size: int, opts: ApplyOptions, *, stale=OSError) -> tuple[str, str, int]:
    """One read of the source: (sha256 of the source, sha256 and size of the new content)."""
    win, pre, post, size = Window(src, file_size=cur_size), hashlib.sha256(), hashlib.sha256(), 0
    pos = 0
    for start, end, new in segments(prep, win, cur_size, opts, stale=stale):
        for chunk in win.chunks(start, end):
            pre.update(chunk)
            if new is None:
                post.update(chunk)
                size += len(chunk)
        if new is not None:
            post.update(new)
            size += len(new)
        pos = end
    if pos != cur_size:   # a whole-content replacement covers base_size; no tail read above
        for chunk in win.chunks(pos, cur_size):
            pre.update(chunk)
    return pre.hexdigest(), post.hexdigest(), size


_NO_COPY = (errno.EXDEV, errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP, errno.EBADF)


def write_segments(fs: fsio.FS, prep: Prepared, src: int, tmp: int, cur_size: int,
                   opts: ApplyOptions, label: str) -> int:
    """Stream the new content into ``tmp``; returns its size. Not hashed here: the caller verifies
    by re-reading the durable temp against the hash computed in precheck."""
    win, buf, size = Window(src, file_size=cur_size), bytearray(), 0
    for start, end, new in segments(prep, win, cur_size, opts):
        if new is None and end - start >= COPY_MIN:
            buf = _flush(fs, tmp, buf, label)
            _copy(fs, src, tmp, start, end, label)
            size += end - start
            continue
        piece = win.view(start, end) if new is None else new
        buf += piece
        size += len(piece)
        if len(buf) >= WINDOW:
            buf = _flush(fs, tmp, buf, label)
    _flush(fs, tmp, buf, label)
    return size


def stream_segments(fs: fsio.FS, prep: Prepared, src: int, tmp: int, cur_size: int,
                    opts: ApplyOptions, label: str, *, pre_sha: str | None = None) -> tuple[str, str, int]:
    """Write the new content into ``tmp`` in one sequential read of the source, hashing both sides
    on the way: ``(sha256 of the source, sha256 of what was written, its size)``. The rewrite's fast
    path (precheck did not read the file): the caller compares the source hash with the plan's
    before the temp may replace anything, and journals the written hash before the rename.
    ``pre_sha``: the source's hash, already known (``ApplyOptions.trust_plan_hash``): returned as
    it is, the source is not hashed again (one sha256 pass instead of two)."""
    if prep.content is None and cur_size == prep.base_size and _patches_inside(prep.patches, cur_size):
        return _stream_patched(fs, prep, src, tmp, cur_size, label, pre_sha)
    win, buf, size = Window(src, file_size=cur_size), bytearray(), 0
    pre, post = (_NoHash(pre_sha) if pre_sha else hashlib.sha256()), hashlib.sha256()
    pos = 0
    for start, end, new in segments(prep, win, cur_size, opts):
        if new is None:
            for chunk in win.chunks(start, end):
                pre.update(chunk)
                post.update(chunk)
                if len(chunk) >= COPY_MIN:      # long unchanged run: written from the window itself
                    buf = _flush(fs, tmp, buf, label)
                    fs.write(tmp, chunk, label)
                    continue
                buf += chunk
                if len(buf) >= WINDOW:
                    buf = _flush(fs, tmp, buf, label)
            size += end - start
        else:
            pre.update(win.view(start, end))
            post.update(new)
            buf += new
            size += len(new)
        pos = end
    if pos != cur_size:
        raise OSError(errno.EIO, "segments do not cover the source")
    _flush(fs, tmp, buf, label)
    return pre.hexdigest(), post.hexdigest(), size


def _patches_inside(patches, size: int) -> bool:
    """Every patch replaces bytes that lie before ``size`` (an insertion at the very end, or a
    patch past it, takes the general path, which reports it). Patches are sorted and do not
    overlap (``validate_plan``): the last one tells."""
    return not patches or (patches.offsets[-1] < size and patches.old_end(len(patches) - 1) <= size)


def _stream_patched(fs: fsio.FS, prep: Prepared, src: int, tmp: int, size: int, label: str,
                    pre_sha: str | None) -> tuple[str, str, int]:
    """:func:`stream_segments` for the common rewrite (patches only, no appended tail), window by
    window instead of segment by segment: a Claude transcript has a patch on every line, and
    hashing, buffering and writing each short run between two patches cost Python calls per line
    (a ``move`` apply spent more time in them than in the hashes). Each window of the source is
    read with one ``preadv``, hashed with one call, its patches' old bytes compared in place, and
    its new bytes joined, hashed and written with one call each. A window ends before a patch
    that would cross its end (a patch longer than a window is read whole), so every patch is
    checked and replaced within one buffer. Same bytes, same hashes, same checks and messages as
    the segment walk."""
    patches, i = prep.patches, 0
    pre, post = (_NoHash(pre_sha) if pre_sha else hashlib.sha256()), hashlib.sha256()
    win = Window(src, file_size=size)
    pos, written = 0, 0
    while pos < size:
        end = min(size, pos + WINDOW)
        j = patches.first_at(end, i)             # the patches that start before the window's end
        if j > i and patches.old_end(j - 1) > end:   # crosses the end
            if patches.offsets[j - 1] > pos:
                j -= 1
                end = patches.offsets[j]
            else:
                end = patches.old_end(j - 1)
        data = win.view(pos, end)      # one preadv; a patch longer than the window is read whole
        pre.update(data)
        if j == i:
            out = data
        else:
            pieces, cur = [], pos
            for offset, old, new in patches.rows(i, j):
                stop = offset + len(old)
                if data[offset - pos:stop - pos] != old:
                    raise OSError(_changed(prep, offset))
                pieces += (data[cur - pos:offset - pos], new)
                cur = stop
            pieces.append(data[cur - pos:])
            out = b"".join(pieces)
        post.update(out)
        fs.write(tmp, out, label)
        written += len(out)
        pos, i = end, j
    return pre.hexdigest(), post.hexdigest(), written


class _NoHash:
    """Stands in for the source's sha256 when it is known already (see :func:`stream_segments`)."""

    def __init__(self, known: str):
        self.known = known

    def update(self, _data) -> None:
        pass

    def hexdigest(self) -> str:
        return self.known


def _flush(fs: fsio.FS, tmp: int, buf: bytearray, label: str) -> bytearray:
    if buf:
        fs.write(tmp, buf, label)
        return bytearray()
    return buf


def _copy(fs: fsio.FS, src: int, tmp: int, start: int, end: int, label: str) -> None:
    """Copy an unchanged range in the kernel (``copy_file_range``), else read/write it."""
    pos = start
    while pos < end:
        try:
            n = fs.copy_range(src, tmp, end - pos, pos, label)
        except OSError as e:
            if e.errno not in _NO_COPY:
                raise
            n = 0
        if n == 0:  # not supported here: plain read/write for the rest
            win = Window(src, file_size=end - pos)
            for chunk in win.chunks(pos, end):
                fs.write(tmp, chunk, label)
            break
        pos += n
