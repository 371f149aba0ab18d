"""A ``.jsonl.zst`` rewrite in bounded memory: decompress, patch, recompress, verify, streaming.

The patches address the decompressed bytes (sorted, not overlapping). Neither the old nor the new
content is ever held whole: a 20 KB file that inflates to 250 MB costs a few MiB of buffers plus the
zstd windows. Three bounded passes:

1. precheck (:func:`expect`): decompress (:class:`histmig.jsonio.zst.BoundedZstdReader`: window and
   output capped), check every patch's old bytes, hash the patched content: the sha256 and size
   the temp must decompress to;
2. fill (:func:`fill`): decompress again, patch, compress at the operation's level straight into
   the temp, hashing the compressed source as the decompressor reads it (the pre sha256, compared
   with precheck's by the caller) and the compressed bytes as they are written (the post sha256,
   journaled in ``ready`` before the rename), and the patched content again (must equal step 1);
3. verify (:func:`verify`): once the temp is durable, re-read it: its bytes must hash to the post
   sha256 and decompress to exactly the content of step 1 (the round trip check).
"""
from __future__ import annotations

import errno
import hashlib
import io
import os
from typing import Callable, Iterator

import zstandard

from histmig.apply import fsio
from histmig.jsonio import zst
from histmig.apply.files import VerifyError
from histmig.apply.options import ApplyOptions, Prepared
from histmig.core.diagnostics import HistmigInputError
from histmig.core.plan import WriteFile

CHUNK = 1 << 20


class HashingSource(io.RawIOBase):
    """A file descriptor as a seekable stream that is not closed with it, hashing the bytes read in
    order once :meth:`start` is called (after the reader's header walk, which seeks around)."""

    def __init__(self, fd: int):
        super().__init__()
        self.fd, self.pos, self.hashed, self.h, self.gap = fd, 0, -1, None, False

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self.fd

    def tell(self) -> int:
        return self.pos

    def seek(self, pos: int, whence: int = 0) -> int:
        self.pos = {0: pos, 1: self.pos + pos, 2: os.fstat(self.fd).st_size + pos}[whence]
        return self.pos

    def start(self) -> None:
        self.h, self.hashed = hashlib.sha256(), 0

    def readinto(self, b) -> int:
        n = os.preadv(self.fd, [b], self.pos)
        if self.h is not None and n:
            if self.pos > self.hashed:
                self.gap = True          # a byte was skipped: finish() refuses
            elif self.pos + n > self.hashed:
                self.h.update(memoryview(b)[self.hashed - self.pos:n])
                self.hashed = self.pos + n
        self.pos += n
        return n

    def finish(self, size: int) -> str:
        """sha256 of the first ``size`` bytes (what the reader left unread is read here)."""
        if self.gap or self.h is None:
            raise OSError(errno.EIO, "compressed source was not read in order")
        while self.hashed < size:
            chunk = os.pread(self.fd, min(CHUNK, size - self.hashed), self.hashed)
            if not chunk:
                raise OSError(errno.EIO, "file shrank while reading")
            self.h.update(chunk)
            self.hashed += len(chunk)
        return self.h.hexdigest()

    def close(self) -> None:     # the descriptor belongs to the caller
        super().close()


def patched(op: WriteFile, plain, stale: Callable[[str], Exception]) -> Iterator[bytes]:
    """The new decompressed content in pieces (at most about a MiB each): ``plain`` with each
    patch's old bytes (checked) replaced by its new ones. A whole-content write (``new_bytes``)
    still reads the source through, so a corrupt one is refused as before."""
    if op.new_bytes is not None and not op.patches:
        while plain.read(CHUNK):
            pass
        yield op.new_bytes
        return
    buf, base = bytearray(), 0     # buf holds the decompressed bytes [base, base + len(buf))
    for p in op.patches:
        if p.offset < base:
            raise stale(f"patches overlap or are out of order (offset {p.offset})")
        end = p.offset + len(p.old)
        while base + len(buf) < end:
            if base + len(buf) <= p.offset and buf:   # all before the patch: pass it on
                yield bytes(buf)
                base += len(buf)
                buf.clear()
            data = plain.read(CHUNK)
            if not data:
                raise stale(f"patch at decompressed offset {p.offset} beyond the end")
            buf += data
        cut = p.offset - base
        if buf[cut:cut + len(p.old)] != p.old:
            raise stale("content changed since plan (decompressed bytes differ)")
        if cut:
            yield bytes(buf[:cut])
        yield p.new
        del buf[:cut + len(p.old)]
        base = end
    if buf:
        yield bytes(buf)
    while data := plain.read(CHUNK):
        yield data


def batched(pieces: Iterator[bytes]) -> Iterator[bytes]:
    """Small pieces (one patch per line) gathered to about a MiB: one hash update and one
    compressor call each."""
    buf = bytearray()
    for piece in pieces:
        if not buf and len(piece) >= CHUNK:
            yield piece
            continue
        buf += piece
        if len(buf) >= CHUNK:
            yield bytes(buf)
            buf.clear()
    if buf:
        yield bytes(buf)


def _reader(fh, op: WriteFile, opts: ApplyOptions) -> zst.BoundedZstdReader:
    return zst.BoundedZstdReader(fh, path=op.path, max_output=opts.max_decompressed)


def expect(op: WriteFile, src: int, opts: ApplyOptions) -> tuple[str, int]:
    """Precheck: (sha256, size) of the patched decompressed content. Raises HistmigInputError for
    a bad stream or a patch whose old bytes are not there."""
    h, size = hashlib.sha256(), 0
    with _reader(HashingSource(src), op, opts) as plain:
        for piece in batched(patched(op, plain, lambda why: HistmigInputError(why, path=op.path))):
            h.update(piece)
            size += len(piece)
    return h.hexdigest(), size


def fill(fs: fsio.FS, prep: Prepared, src: int, tmp: int, src_size: int, opts: ApplyOptions,
         label: str) -> tuple[str, str, int]:
    """Write the recompressed new content into ``tmp``: ``(sha256 of the compressed source, sha256
    of the compressed bytes written, their size)``. Precheck read the same file (same dev, inode,
    size, mtime), so a stream or patch error here means it changed under us: an I/O error (the
    apply rolls back)."""
    op: WriteFile = prep.op
    source, post, size, plain = HashingSource(src), hashlib.sha256(), 0, hashlib.sha256()
    cobj = zstandard.ZstdCompressor(level=op.level, write_content_size=True).compressobj(size=prep.plain_size)

    def write(data: bytes) -> None:
        nonlocal size
        if data:
            post.update(data)
            fs.write(tmp, data, label)
            size += len(data)
    try:
        with _reader(source, op, opts) as reader:
            source.start()           # the header walk is over: from here the file is read in order
            n = 0
            for piece in batched(patched(op, reader, lambda why: VerifyError(errno.EIO, why, prep.path))):
                plain.update(piece)
                n += len(piece)
                write(cobj.compress(piece))
            write(cobj.flush())
    except (HistmigInputError, zstandard.ZstdError) as e:
        raise VerifyError(errno.EIO, f"zstd source changed during apply ({e})", prep.path) from None
    if (plain.hexdigest(), n) != (prep.plain_sha, prep.plain_size):
        raise VerifyError(errno.EIO, "new content differs from the planned result", prep.path)
    return source.finish(src_size), post.hexdigest(), size


def verify(dfd: int, name: str, prep: Prepared, label: str) -> None:
    """Re-read the durable temp once: its bytes hash to the journaled post sha256 and size, and
    they decompress (bounded by the expected size) to exactly the patched content."""
    fd = fsio.open_read(name, dir_fd=dfd)
    try:
        size = os.fstat(fd).st_size
        source, plain, n = HashingSource(fd), hashlib.sha256(), 0
        try:
            with zst.BoundedZstdReader(source, path=label, max_output=prep.plain_size) as reader:
                source.start()
                while data := reader.read(CHUNK):
                    plain.update(data)
                    n += len(data)
            packed = source.finish(size)
        except HistmigInputError:
            packed = None
        if (packed, size, plain.hexdigest(), n) != (prep.post_sha, prep.post_size, prep.plain_sha, prep.plain_size):
            raise VerifyError(errno.EIO, "written file does not read back as written (zstd round trip)", label)
    finally:
        os.close(fd)
