"""Bounded zstd reading for ``.jsonl.zst`` rollouts.

``zstandard``'s stream reader returns short data without raising on a truncated frame, and one
decompress call can expand 32 KB into 1 GiB. So before decompressing we walk the frame and block
headers (cheap: headers only) to learn the frame count, each frame's window size and declared content
size, and whether every frame is complete; then we decompress through ``stream_reader`` in bounded
reads, counting output against a cap.
"""
from __future__ import annotations

import io
import os
import struct
from typing import BinaryIO

import zstandard

from histmig.core.diagnostics import HistmigInputError
from histmig.core.valueclass import value
from histmig.jsonio.regular import open_regular

MAGIC = 0xFD2FB528
MAX_WINDOW = 1 << 27                        # 128 MiB, Codex's own limit is lower
DEFAULT_MAX_OUTPUT = 2 * 1024 * 1024 * 1024  # 2 GiB
RATIO_CAP = 50                               # or 50 x the compressed size, whichever is larger ...
MIN_CAP = 256 * 1024 * 1024                  # ... but never below 256 MiB


@value
class FrameInfo:
    frames: int
    window_max: int
    content_size: int | None  # sum of declared sizes, None when any frame does not declare one

    def __init__(self, frames: int, window_max: int, content_size: int | None) -> None:
        self.frames, self.window_max, self.content_size = frames, window_max, content_size


def _window_size(fhd: int, wd: int | None, fcs: int | None) -> int:
    if wd is None:  # single segment: the window is the content size
        return fcs or 0
    exponent, mantissa = wd >> 3, wd & 7
    base = 1 << (10 + exponent)
    return base + (base // 8) * mantissa


def inspect_frames(fh: BinaryIO, path: str) -> FrameInfo:
    """Walk frame and block headers; raise HistmigInputError for truncation or garbage."""
    size = os.fstat(fh.fileno()).st_size
    pos, frames, window_max, total, known = 0, 0, 0, 0, True

    def read(n: int) -> bytes:
        nonlocal pos
        fh.seek(pos)
        data = fh.read(n)
        if len(data) != n:
            raise HistmigInputError("truncated zstd frame", path=path)
        pos += n
        return data

    while pos < size:
        magic = struct.unpack("<I", read(4))[0]
        if 0x184D2A50 <= magic <= 0x184D2A5F:       # skippable frame
            skip = struct.unpack("<I", read(4))[0]   # not ``pos += ...``: read() moves pos first
            pos += skip
            if pos > size:
                raise HistmigInputError("truncated zstd frame", path=path)
            continue
        if magic != MAGIC:
            raise HistmigInputError("not a zstd stream (bad magic number)", path=path)
        fhd = read(1)[0]
        fcs_flag, single, checksum, dict_flag = fhd >> 6, (fhd >> 5) & 1, (fhd >> 2) & 1, fhd & 3
        wd = None if single else read(1)[0]
        pos += (0, 1, 2, 4)[dict_flag]
        fcs_len = (1 if single else 0, 2, 4, 8)[fcs_flag]
        fcs = None
        if fcs_len:
            raw = read(fcs_len)
            fcs = int.from_bytes(raw, "little") + (256 if fcs_len == 2 else 0)
        window_max = max(window_max, _window_size(fhd, wd, fcs))
        if fcs is None:
            known = False
        else:
            total += fcs
        while True:
            hdr = int.from_bytes(read(3), "little")
            last, btype, bsize = hdr & 1, (hdr >> 1) & 3, hdr >> 3
            if btype == 3:
                raise HistmigInputError("corrupt zstd block (reserved type)", path=path)
            pos += 1 if btype == 1 else bsize
            if pos > size:
                raise HistmigInputError("truncated zstd frame", path=path)
            if last:
                break
        if checksum:
            read(4)
        frames += 1
    if frames == 0:
        raise HistmigInputError("empty zstd file", path=path)
    return FrameInfo(frames, window_max, total if known else None)


def output_cap(compressed_size: int, max_output: int | None) -> int:
    if max_output is not None:
        return max_output
    return min(DEFAULT_MAX_OUTPUT, max(MIN_CAP, RATIO_CAP * compressed_size))


class BoundedZstdReader(io.RawIOBase):
    """A read-only binary stream of the decompressed content, refusing bombs and truncation."""

    def __init__(self, fh: BinaryIO, *, path: str, max_output: int | None = None):
        super().__init__()
        self._fh = fh
        self._path = path
        info = inspect_frames(fh, path)
        if info.window_max > MAX_WINDOW:
            fh.close()
            raise HistmigInputError(
                f"zstd window of {info.window_max} bytes needs too much memory (limit {MAX_WINDOW})", path=path)
        self._cap = output_cap(os.fstat(fh.fileno()).st_size, max_output)
        if info.content_size is not None and info.content_size > self._cap:
            fh.close()
            raise HistmigInputError(
                f"decompressed size exceeds limit ({info.content_size} > {self._cap} bytes)", path=path)
        self.frames = info.frames
        fh.seek(0)
        dctx = zstandard.ZstdDecompressor(max_window_size=MAX_WINDOW)
        self._reader = dctx.stream_reader(fh, read_across_frames=True, read_size=1 << 17)
        self._out = 0

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        want = min(len(b), 1 << 20)
        try:
            data = self._reader.read(want)
        except zstandard.ZstdError as e:
            raise HistmigInputError(f"corrupt zstd data ({e})", path=self._path) from None
        self._out += len(data)
        if self._out > self._cap:
            raise HistmigInputError(f"decompressed size exceeds limit ({self._cap} bytes)", path=self._path)
        n = len(data)
        b[:n] = data
        return n

    def close(self) -> None:
        if not self.closed:
            try:
                self._reader.close()
            finally:
                self._fh.close()
        super().close()


def compress(data: bytes, level: int = 3) -> bytes:
    """One zstd frame of ``data`` with its content size (what Codex's compressor writes: level 3)."""
    return zstandard.ZstdCompressor(level=level, write_content_size=True).compress(data)


def decompress_all(path: str | os.PathLike, *, max_output: int | None = None) -> bytes:
    """The whole decompressed content (for small files and tests)."""
    with BoundedZstdReader(open_regular(path), path=os.fspath(path), max_output=max_output) as r:
        return r.read()
