"""The archive's object store: one zstd file per unique chunk of content, named by its sha256.

``<archive>/objects/ab/cdef….zst`` holds the chunk whose sha256 is ``abcdef…``. An object is written to a
temp file beside it, fsynced and renamed into place, so a run killed half-way leaves at most a temp file
(removed by the next run) and never a half-written object under its final name (docs/archive.md).
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Iterator

import zstandard

LEVEL = 3
READ = 1 << 20


class Store:
    def __init__(self, root: Path):
        self.root = Path(root)
        self.objects = self.root / "objects"
        self.new_objects = 0
        self.new_bytes = 0        # compressed bytes this run added to objects/
        self._cctx = zstandard.ZstdCompressor(level=LEVEL)

    def path(self, digest: str) -> Path:
        return self.objects / digest[:2] / f"{digest[2:]}.zst"

    def has(self, digest: str) -> bool:
        return self.path(digest).exists()

    def put(self, data: bytes, digest: str | None = None) -> str:
        """Store one chunk (at most a few MiB: callers cut files into bounded chunks); its sha256."""
        digest = digest or hashlib.sha256(data).hexdigest()
        final = self.path(digest)
        if final.exists():
            return digest
        final.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        packed = self._cctx.compress(data)
        import tempfile  # noqa: PLC0415 (doctor reads the archive and never stores: tempfile costs it ~3 ms)
        fd, tmp = tempfile.mkstemp(dir=final.parent, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(packed)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, final)      # same bytes whoever wins: content-addressed
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
        self.new_objects += 1
        self.new_bytes += len(packed)
        return digest

    def read(self, digest: str) -> bytes:
        """One chunk's bytes, checked against its name."""
        from histmig.core.diagnostics import RefusedError
        try:
            data = zstandard.ZstdDecompressor().decompress(self.path(digest).read_bytes())
        except (OSError, zstandard.ZstdError) as e:
            raise RefusedError(f"archive object unreadable: {e}", path=str(self.path(digest))) from None
        if hashlib.sha256(data).hexdigest() != digest:
            raise RefusedError("archive object does not match its name (damaged)", path=str(self.path(digest)))
        return data

    def stream(self, chunks: list[list]) -> Iterator[bytes]:
        """A file's bytes, one chunk at a time (memory: one chunk)."""
        for digest, _size in chunks:
            yield self.read(digest)

    def sweep_temps(self) -> None:
        """Temp files a killed run left (never an object: those are only ever renamed into place)."""
        if not self.objects.is_dir():
            return
        for sub in self.objects.iterdir():
            if sub.is_dir():
                for f in sub.glob(".tmp-*"):
                    try:
                        f.unlink()
                    except OSError:
                        pass
