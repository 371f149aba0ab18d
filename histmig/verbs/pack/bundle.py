"""The bundle format (docs/pack.md, "The bundle"): a tar stream (PAX) inside one zstd stream.

Members, in order: ``files/<tool>/<path inside the tool's home>`` (the native files, byte for byte),
then ``manifest.json`` (every file's sha256, the sessions, their rows, the source homes and versions),
then ``manifest.sha256`` (the manifest's own sha256, so a changed byte anywhere is caught). Writing and
reading both stream: one chunk of one file in memory at a time.
"""
from __future__ import annotations

import hashlib
import io
import os
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Callable, Iterator

import orjson
import zstandard

from histmig.core.diagnostics import HistmigInputError, RefusedError, UsageError

SCHEMA = "histmig-bundle/1"
MANIFEST = "manifest.json"
SEAL = "manifest.sha256"
CHUNK = 1 << 20


@dataclass
class Added:
    """A file in the bundle: its sha256 (a future of the hash thread when there is one), size, first bytes."""

    sha256: Any
    size: int
    head: bytes = b""


class Writer:
    """``with Writer(path) as w: w.add_file(name, src, st); ...; w.finish(manifest)``; the bundle is
    written to ``<path>.part`` and renamed over nothing when finished (a failed pack leaves no bundle).
    ``threads=-1``: zstd compresses on worker threads (one per core) while this thread reads and hashes;
    memory stays bounded (a few MiB per worker); the sha256s are computed on a thread of their own, one
    chunk behind the reading (two buffers)."""

    def __init__(self, path: str | os.PathLike, *, level: int = 3, threads: int = -1):
        self.path = Path(path)
        self.part = self.path.with_name(self.path.name + ".part")
        try:
            fd = os.open(self.part, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        except FileExistsError:
            raise UsageError(f"{self.part.name} exists beside it (another pack writing, or one that was killed: "
                             "remove it)", path=self.part) from None
        self.raw = os.fdopen(fd, "wb")
        # write_checksum: each frame carries a checksum of its content, so a changed byte of the compressed
        # stream fails in the decompressor, at the member being read, not later as a garbled header
        self.zw = zstandard.ZstdCompressor(level=level, threads=threads, write_checksum=True).stream_writer(
            self.raw, closefd=False)
        # mode "w" on the compressor itself (it only needs write and tell): tarfile's "w|" stream
        # re-buffers every byte in a bytes object that is re-sliced on every write
        self.tar = tarfile.TarFile(fileobj=self.zw, mode="w", format=tarfile.PAX_FORMAT, copybufsize=CHUNK)
        # two buffers: the hash thread reads one while the next chunk is read into the other
        self.views = [memoryview(bytearray(CHUNK)), memoryview(bytearray(CHUNK))]
        self.turn, self.pending = 0, [None, None]
        self.pool = None
        if threads != 0:
            from concurrent.futures import ThreadPoolExecutor  # noqa: PLC0415
            self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="histmig-hash")
        self.done = False

    def __enter__(self) -> "Writer":
        return self

    def __exit__(self, *exc: Any) -> None:
        if not self.done:
            closers = (self.tar.close, self.zw.close, self.raw.close)
            if self.pool is not None:
                closers += (self.pool.shutdown,)
            for closer in closers:
                try:
                    closer()
                except Exception:     # noqa: BLE001 - already failing: the partial bundle is removed
                    pass
            self.part.unlink(missing_ok=True)

    def _buffer(self) -> memoryview:
        """The next buffer, once the hash thread is done with what it held."""
        self.turn ^= 1
        if self.pending[self.turn] is not None:
            self.pending[self.turn].result()
            self.pending[self.turn] = None
        return self.views[self.turn]

    def _hash(self, h: Any, data: memoryview) -> None:
        """On the hash thread (hashlib lets go of the GIL; one thread keeps each file's chunks in order)."""
        if self.pool is None:
            h.update(data)
        else:
            self.pending[self.turn] = self.pool.submit(h.update, data)

    def _digest(self, h: Any) -> Any:
        return h.hexdigest() if self.pool is None else self.pool.submit(h.hexdigest)

    def add_file(self, name: str, src: Path, st: os.stat_result, *, head: int = 0) -> Added:
        """Copy ``src`` as member ``name``, hashing as it goes; refuses a file that changed size while it
        was read. The header goes through tarfile; the bytes are read into one reused buffer (a fresh
        1 MiB ``bytes`` per read costs a page fault per 4 KiB) and padded to tar's 512-byte blocks here.
        ``head``: keep up to that many first bytes (``Added.head``: the tools read versions from it)."""
        size = st.st_size
        # whole seconds: a fractional mtime costs a PAX header per file; the manifest keeps mtime_ns
        self.tar.addfile(_info(name, size, st.st_mode & 0o7777, int(st.st_mtime)))
        h, n, first = hashlib.sha256(), 0, b""
        with open(src, "rb", buffering=0) as fh:
            while n < size:
                view = self._buffer()
                k = fh.readinto(view[:min(CHUNK, size - n)])
                if not k:
                    break
                self._hash(h, view[:k])
                self.zw.write(view[:k])
                if n == 0 and head:
                    first = bytes(view[:min(k, head)])
                n += k
        if n != size or os.stat(src).st_size != size:
            raise RefusedError("changed while being packed (is a client writing to it?); nothing written", path=src)
        pad = -size % tarfile.BLOCKSIZE
        if pad:
            self.zw.write(tarfile.NUL * pad)
        self.tar.offset += size + pad          # what tarfile.addfile counts for the data it copies itself
        return Added(self._digest(h), n, first)

    def finish(self, manifest: dict[str, Any]) -> None:
        """The manifest (its sha256s may still be futures of the hash thread: resolved here) and its seal,
        then the bundle is synced and given its name."""
        for f in manifest.get("files", []):
            if not isinstance(f["sha256"], str):
                f["sha256"] = f["sha256"].result()
        if self.pool is not None:
            self.pool.shutdown()
        body = orjson.dumps(manifest, option=orjson.OPT_INDENT_2) + b"\n"
        self._add_bytes(MANIFEST, body)
        self._add_bytes(SEAL, hashlib.sha256(body).hexdigest().encode() + b"\n")
        self.tar.close()
        self.zw.close()
        self.raw.flush()
        os.fsync(self.raw.fileno())
        self.raw.close()
        os.link(self.part, self.path)        # never replaces a file: -o names a new file
        self.part.unlink()
        self.done = True

    def _add_bytes(self, name: str, data: bytes) -> None:
        import time  # noqa: PLC0415
        self.tar.addfile(_info(name, len(data), 0o600, int(time.time())), io.BytesIO(data))


def _info(name: str, size: int, mode: int, mtime: float) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime, info.type = size, mode, mtime, tarfile.REGTYPE
    info.uname = info.gname = ""
    return info


# ---- reading ------------------------------------------------------------------------------------

Member = tuple[str, Callable[[int], bytes]]


def members(path: str | os.PathLike) -> Iterator[tuple[tarfile.TarInfo, BinaryIO]]:
    """Each member of the bundle and a reader of its bytes (valid until the next member)."""
    try:
        fh = open(path, "rb")
    except OSError as e:
        raise HistmigInputError(f"cannot open the bundle ({e.strerror or e})", path=path) from None
    current = "the start of the bundle"
    with fh:
        reader = zstandard.ZstdDecompressor().stream_reader(fh, read_across_frames=True)
        try:
            with tarfile.open(fileobj=reader, mode="r|", copybufsize=CHUNK) as tar:
                for info in tar:
                    current = info.name
                    if not info.isreg():
                        raise RefusedError(f"the bundle holds {info.name!r}, which is not a file; nothing written",
                                           path=path)
                    yield info, tar.extractfile(info)
                    current = f"the member after {info.name}"
        except (tarfile.TarError, zstandard.ZstdError, EOFError, OSError) as e:
            raise RefusedError(f"the bundle is damaged at {current} ({e}); nothing written",
                               path=f"{path}:{current}") from None


def verify(path: str | os.PathLike) -> dict[str, Any]:
    """Hash every member and check it against the manifest (and the manifest against its seal) before
    anything is planned. Returns the manifest; raises ``RefusedError`` naming the first file that differs."""
    seen: dict[str, tuple[str, int]] = {}
    body = seal = None
    last = "its start"
    damaged: RefusedError | None = None
    try:
        for info, fh in members(path):
            last = info.name
            if info.name == MANIFEST:
                body = fh.read()
                continue
            if info.name == SEAL:
                seal = fh.read().strip().decode("ascii", "replace")
                continue
            h, n = hashlib.sha256(), 0
            while chunk := fh.read(CHUNK):
                h.update(chunk)
                n += len(chunk)
            seen[info.name] = (h.hexdigest(), n)
    except RefusedError as e:
        # zstd checks its checksum at the end of the stream: first name the file whose bytes changed
        damaged = e
    except (tarfile.TarError, zstandard.ZstdError, EOFError, OSError) as e:    # while reading a member's bytes
        damaged = RefusedError(f"the bundle is damaged at {last} ({e}); nothing written", path=f"{path}:{last}")
    if damaged is not None:
        if body is not None:
            _compare(path, body, seen, complete=False)
            if seal is not None and hashlib.sha256(body).hexdigest() != seal:
                raise RefusedError(f"{MANIFEST} does not match its checksum (the bundle was changed); nothing "
                                   "written", path=f"{path}:{MANIFEST}")
        raise damaged
    if body is None or seal is None:
        raise RefusedError(f"damaged after {last}, or not a histmig bundle (no {MANIFEST} at its end); "
                           "nothing written", path=path)
    if hashlib.sha256(body).hexdigest() != seal:
        raise RefusedError(f"{MANIFEST} does not match its checksum (the bundle was changed); nothing written",
                           path=f"{path}:{MANIFEST}")
    return _compare(path, body, seen, complete=True)


def _compare(path, body: bytes, seen: dict[str, tuple[str, int]], *, complete: bool) -> dict[str, Any]:
    """The manifest, once every member read matches it (``complete``: and none is missing)."""
    try:
        manifest = orjson.loads(body)
    except orjson.JSONDecodeError as e:
        raise RefusedError(f"{MANIFEST} is not JSON ({e}); nothing written", path=path) from None
    if manifest.get("schema") != SCHEMA:
        raise RefusedError(f"unknown bundle schema {manifest.get('schema')!r} (this histmig reads {SCHEMA})",
                           path=path)
    listed = {f["name"]: f for f in manifest.get("files", [])}
    for name, (sha, size) in seen.items():
        want = listed.get(name)
        if want is None:
            raise RefusedError(f"{name} is in the bundle but not in its manifest; nothing written", path=f"{path}:{name}")
        if want["sha256"] != sha or want["size"] != size:
            raise RefusedError(f"{name} does not match its checksum in the manifest (the bundle was changed or "
                               "damaged); nothing written", path=f"{path}:{name}")
    missing = sorted(set(listed) - set(seen))
    if complete and missing:
        raise RefusedError(f"{missing[0]} is in the manifest but missing from the bundle; nothing written",
                           path=f"{path}:{missing[0]}")
    return manifest
