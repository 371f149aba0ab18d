"""The new content of a rewritten file, as a stream of pieces.

A piece is either ``bytes`` (patch bytes, a transformed tail, a whole new content) or a
``(start, end)`` range of the source to copy unchanged. The same generator feeds the expected-hash
computation (precheck) and the temp-file writer, so both always agree on what "post" means.
"""
from __future__ import annotations

import errno
import hashlib
import os
from typing import Iterator

from histmig import fsio, zst
from histmig.apply.options import ApplyOptions, Prepared
from histmig.diagnostics import HistmigInputError
from histmig.plan import WriteFile

Piece = bytes | tuple[int, int]


def pieces(prep: Prepared, src: int, cur_size: int, opts: ApplyOptions, *, stale=OSError) -> Iterator[Piece]:
    if prep.content is not None:
        yield prep.content
    else:
        pos = 0
        for p in prep.patches:
            if p.offset + len(p.old) > prep.base_size:
                raise stale(f"{prep.op.paths()[0]}: patch at offset {p.offset} beyond the planned size")
            if os.pread(src, len(p.old), p.offset) != p.old:
                raise stale(f"{prep.op.paths()[0]}: content changed since plan (bytes at offset {p.offset})")
            if p.offset > pos:
                yield (pos, p.offset)
            if p.new:
                yield p.new
            pos = p.offset + len(p.old)
        if prep.base_size > pos:
            yield (pos, prep.base_size)
    if cur_size > prep.base_size:
        tail = os.pread(src, cur_size - prep.base_size, prep.base_size)
        yield opts.transform_tail(prep.op, tail)


def build_zstd(op: WriteFile, src: int, opts: ApplyOptions) -> bytes:
    """Decompress (bounded window and output), patch, recompress, and check the round trip."""
    with zst.BoundedZstdReader(os.fdopen(os.dup(src), "rb"), path=op.path,
                               max_output=opts.max_decompressed) as r:
        plain = r.read()
    out, pos = bytearray(), 0
    for p in op.patches:
        if plain[p.offset:p.offset + len(p.old)] != p.old:
            raise HistmigInputError("content changed since plan (decompressed bytes differ)", path=op.path)
        out += plain[pos:p.offset] + p.new
        pos = p.offset + len(p.old)
    out += plain[pos:]
    new = bytes(out) if op.patches or op.new_bytes is None else op.new_bytes
    packed = zst.compress(new, op.level)
    check = zst.zstandard.ZstdDecompressor(max_window_size=zst.MAX_WINDOW).decompress(packed)
    if check != new:  # pragma: no cover - the library would have to be broken
        raise HistmigInputError("zstd round trip differs", path=op.path)
    return packed


_NO_COPY = (errno.EXDEV, errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP, errno.EBADF)


COPY_MIN = 1 << 20   # ranges this big go through copy_file_range; smaller ones ride in the buffer


def write_pieces(fs: fsio.FS, prep: Prepared, src: int, tmp: int, cur_size: int,
                 opts: ApplyOptions, label: str) -> tuple[str, int]:
    """Stream the new content into ``tmp``; returns (sha256, size) of what was written.
    Patch bytes and short unchanged ranges are gathered into one buffer (one write for a small
    file); long unchanged ranges are copied in the kernel."""
    from histmig.apply.check import read_range
    h, size, buf = hashlib.sha256(), 0, bytearray()

    def flush() -> None:
        if buf:
            fs.write(tmp, bytes(buf), label)
            buf.clear()
    for piece in pieces(prep, src, cur_size, opts):
        if isinstance(piece, tuple) and piece[1] - piece[0] >= COPY_MIN:
            flush()
            _copy(fs, src, tmp, piece, label, h)
            size += piece[1] - piece[0]
            continue
        for chunk in (read_range(src, *piece) if isinstance(piece, tuple) else (piece,)):
            buf += chunk
            h.update(chunk)
            size += len(chunk)
        if len(buf) >= COPY_MIN:
            flush()
    flush()
    return h.hexdigest(), size


def _copy(fs: fsio.FS, src: int, tmp: int, rng: tuple[int, int], label: str, h) -> None:
    """Copy an unchanged range in the kernel (``copy_file_range``), hashing it from the page cache."""
    from histmig.apply.check import read_range
    start, end = rng
    pos = start
    while pos < end:
        try:
            n = fs.copy_range(src, tmp, end - pos, pos, label)
        except OSError as e:
            if e.errno not in _NO_COPY:
                raise
            n = 0
        if n == 0:  # not supported here: plain read/write for the rest
            for chunk in read_range(src, pos, end):
                fs.write(tmp, chunk, label)
            break
        pos += n
    for chunk in read_range(src, start, end):
        h.update(chunk)
