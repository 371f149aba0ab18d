"""The bundle format (docs/pack.md, "The bundle"): a tar stream (PAX) inside one zstd stream.

``histmig-bundle/2`` (written since the streaming pack): each session's files ``files/<tool>/<path inside
the tool's home>`` (byte for byte), then its entry ``sessions/<n>.json`` (the session, its rows and its
files' sha256s), session after session; then ``index.jsonl`` (one line per member before it: name,
size, sha256), ``manifest.json`` (the source homes, versions, totals and the index's sha256) and
``manifest.sha256`` (the manifest's own sha256, so a changed byte anywhere is caught). Nothing grows
with the number of sessions while writing: the index is spooled to a temporary file as it goes.
``histmig-bundle/1`` bundles (one ``manifest.json`` with every session and file) are still read.
Writing and reading both stream: a few chunks of one file in memory at a time.
"""
from __future__ import annotations

import hashlib
import os
import tarfile
import tempfile
import threading
import time
from collections import deque
from concurrent.futures import Future, TimeoutError as FutureTimeout
from dataclasses import dataclass
from pathlib import Path
from queue import SimpleQueue
from typing import Any, BinaryIO, Callable, Iterator

import orjson
import zstandard

from histmig.core.diagnostics import HistmigInputError, RefusedError, UsageError

SCHEMA = "histmig-bundle/2"
OLD_SCHEMAS = ("histmig-bundle/1",)
MANIFEST = "manifest.json"
SEAL = "manifest.sha256"
INDEX = "index.jsonl"
SESSIONS = "sessions/"
CHUNK = 1 << 20      # reading a bundle
BLOCK = 4 << 20      # writing: the tar stream is assembled in blocks of this size
BLOCKS = 3           # one being filled, one with the worker, one spare


@dataclass
class Added:
    """A file in the bundle: its sha256 (a future, set by the worker thread), size, first bytes."""

    sha256: Any
    size: int
    head: bytes = b""


class _Worker:
    """The thread that hashes and compresses each block, in order. A failure is kept and raised on the
    main thread at its next :meth:`check`; later blocks are only given back."""

    def __init__(self, run: Callable[..., None], release: Callable[[int], None], *, inline: bool = False):
        self.q: SimpleQueue = SimpleQueue()
        self.error: BaseException | None = None
        self.run, self.release = run, release
        self.thread = None if inline else threading.Thread(target=self._loop, name="histmig-pack", daemon=True)
        if self.thread is not None:
            self.thread.start()

    def _loop(self) -> None:
        while (item := self.q.get()) is not None:
            self._one(item)

    def _one(self, item: tuple) -> None:
        try:
            if self.error is None:
                self.run(*item)
        except BaseException as e:      # noqa: BLE001 - raised on the main thread by check()
            self.error = e
        finally:
            self.release(item[0])

    def put(self, *item: Any) -> None:
        if self.thread is None:
            self._one(item)
        else:
            self.q.put(item)

    def check(self) -> None:
        if self.error is not None:
            raise self.error

    def close(self) -> None:
        if self.thread is not None:
            self.q.put(None)
            self.thread.join()
            self.thread = None


class Writer:
    """``with Writer(path) as w: w.add_file(name, src, st); ...; w.add_session(entry); ...; w.finish(manifest)``;
    the bundle is written to ``<path>.part`` and renamed over nothing when finished (a failed pack leaves no
    bundle). This thread assembles the tar stream in ``BLOCK``-sized reused buffers (headers, and each file
    read straight into the block, many small files to a block); one worker thread hashes each file's
    spans of a finished block and compresses the block (hashlib and zstd let go of the GIL). One hand-off
    per block, not per file: every hand-off between Python threads waits for the GIL, and on a busy
    machine for the other thread to be scheduled (cProfile of a 2,000-session pack, docs/bench.md).
    Memory is ``BLOCKS`` blocks and zstd's window, whatever the number or size of the files.
    ``worker=False``: all on this thread (the same bytes); ``threads``: zstd's own worker threads (0: none)."""

    def __init__(self, path: str | os.PathLike, *, level: int = 3, threads: int = 0, worker: bool = True):
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
        self.offset = 0             # bytes of the tar stream so far
        self.views = [memoryview(bytearray(BLOCK)) for _ in range(BLOCKS)]
        self.free: SimpleQueue = SimpleQueue()
        for i in range(BLOCKS):
            self.free.put(i)
        self.cur: int | None = None     # the block being filled, how far, and its hash work
        self.pos = 0
        self.spans: list[tuple] = []
        self.worker = _Worker(self._drain, self.free.put, inline=not worker)
        # the index: one line per member, spooled beside the bundle (a pack of any size keeps it on disk)
        self.index = tempfile.TemporaryFile(dir=self.part.parent, prefix=".histmig-index-")
        self.index_sha = hashlib.sha256()
        self.members = 0
        self.sessions = 0
        self.pending: deque[dict[str, Any]] = deque()     # session entries waiting for their files' digests
        self.done = False

    def __enter__(self) -> "Writer":
        return self

    def __exit__(self, *exc: Any) -> None:
        if not self.done:
            for closer in (self.worker.close, self.zw.close, self.raw.close, self.index.close):
                try:
                    closer()
                except Exception:     # noqa: BLE001 - already failing: the partial bundle is removed
                    pass
            self.part.unlink(missing_ok=True)

    # ---- blocks ----

    def _drain(self, i: int, used: int, spans: list[tuple]) -> None:
        """On the worker: each span's bytes into its file's sha256 (or a finished file's digest), then the
        block into the compressor."""
        view = self.views[i]
        for span in spans:
            if len(span) == 3:
                span[0].update(view[span[1]:span[2]])
            else:
                span[0].set_result(span[1].hexdigest())
        self.zw.write(view[:used])

    def _room(self) -> memoryview:
        """The current block (a free one taken when none is being filled), with room in it."""
        if self.cur is not None and self.pos == BLOCK:
            self._flush()
        if self.cur is None:
            self.cur, self.pos, self.spans = self.free.get(), 0, []
            self.worker.check()
        return self.views[self.cur]

    def _flush(self) -> None:
        if self.cur is not None:
            self.worker.put(self.cur, self.pos, self.spans)
            self.cur = None

    def _write(self, data: bytes) -> None:
        """Bytes of the tar stream (headers, padding, small members), after everything before them."""
        data = memoryview(data)
        while data:
            view = self._room()
            k = min(len(data), BLOCK - self.pos)
            view[self.pos:self.pos + k] = data[:k]
            self.pos += k
            data = data[k:]
        self.offset += len(data.obj)

    def _header(self, name: str, size: int, mode: int, mtime: int) -> None:
        if (fast := ustar_header(name, size, mode, mtime)) is not None:
            self._write(fast)
            return
        info = tarfile.TarInfo(name)
        info.size, info.mode, info.mtime, info.type = size, mode, mtime, tarfile.REGTYPE
        info.uname = info.gname = ""
        if name.isascii():
            try:        # one 512-byte block (a long name split into ustar's prefix): half the cost of PAX's three
                self._write(info.tobuf(tarfile.USTAR_FORMAT, "ascii", "strict"))
                return
            except ValueError:      # a name ustar cannot hold, a size over 8 GiB
                pass
        self._write(info.tobuf(tarfile.PAX_FORMAT, "utf-8", "surrogateescape"))

    def _pad(self, size: int) -> None:
        if pad := -size % tarfile.BLOCKSIZE:
            self._write(tarfile.NUL * pad)

    def add_file(self, name: str, src: Path, st: os.stat_result, *, head: int = 0) -> Added:
        """Copy ``src`` as member ``name``, hashing as it goes; refuses a file that changed size while it
        was read. ``head``: keep up to that many first bytes (``Added.head``: the tools read versions from it)."""
        size = st.st_size
        # whole seconds: a fractional mtime costs a PAX header per file; the session entry keeps mtime_ns
        self._header(name, size, st.st_mode & 0o7777, int(st.st_mtime))
        h, n, first = hashlib.sha256(), 0, b""
        with open(src, "rb", buffering=0) as fh:
            while n < size:
                view = self._room()
                k = fh.readinto(view[self.pos:self.pos + min(BLOCK - self.pos, size - n)])
                if not k:
                    break
                if n == 0 and head:
                    first = bytes(view[self.pos:self.pos + min(k, head)])
                self.spans.append((h, self.pos, self.pos + k))
                self.pos += k
                n += k
        if n != size or os.stat(src).st_size != size:
            raise RefusedError("changed while being packed (is a client writing to it?); nothing written", path=src)
        self.offset += size
        self._pad(size)
        digest: Future = Future()
        self._room()
        self.spans.append((digest, h))
        return Added(digest, n, first)

    def add_session(self, entry: dict[str, Any]) -> None:
        """A session's entry (``{"session": ..., "files": [...]}``, its files' sha256s futures of the worker),
        written once the worker has hashed its files: the reading never waits for the hashing. The
        entries waiting are those of the files in the blocks not yet drained (bounded by ``BLOCKS``)."""
        self.pending.append(entry)
        while self.pending and all(_ready(f["sha256"]) for f in self.pending[0]["files"]):
            self._session(self.pending.popleft())

    def _session(self, entry: dict[str, Any]) -> None:
        for f in entry["files"]:
            if not isinstance(f["sha256"], str):
                f["sha256"] = _result(f["sha256"], self)
            self._indexed(f["name"], f["size"], f["sha256"])
        self.sessions += 1
        self._add_bytes(f"{SESSIONS}{self.sessions:06d}.json", orjson.dumps(entry) + b"\n", indexed=True)

    def _indexed(self, name: str, size: int, sha: str) -> None:
        line = orjson.dumps({"name": name, "size": size, "sha256": sha}) + b"\n"
        self.index.write(line)
        self.index_sha.update(line)
        self.members += 1

    def finish(self, manifest: dict[str, Any]) -> None:
        """The last session's entry, the index, the manifest (``manifest["index"]`` filled in here) and its
        seal; then the bundle is synced and given its name."""
        while self.pending:
            self._session(self.pending.popleft())
        size = self.index.tell()
        self.index.seek(0)
        self._header(INDEX, size, 0o600, int(time.time()))
        while chunk := self.index.read(CHUNK):
            self._write(chunk)
        self._pad(size)
        self.index.close()
        manifest["index"] = {"name": INDEX, "size": size, "sha256": self.index_sha.hexdigest(),
                             "members": self.members, "sessions": self.sessions}
        body = orjson.dumps(manifest, option=orjson.OPT_INDENT_2) + b"\n"
        self._add_bytes(MANIFEST, body)
        self._add_bytes(SEAL, hashlib.sha256(body).hexdigest().encode() + b"\n")
        # the end of a tar stream: two zero blocks, padded to a whole record (as tarfile writes it)
        self._write(tarfile.NUL * (2 * tarfile.BLOCKSIZE))
        self._pad_record()
        self._flush()
        self.worker.close()
        self.worker.check()
        self.zw.close()
        self.raw.flush()
        os.fsync(self.raw.fileno())
        self.raw.close()
        os.link(self.part, self.path)        # never replaces a file: -o names a new file
        self.part.unlink()
        self.done = True

    def _pad_record(self) -> None:
        if rest := self.offset % tarfile.RECORDSIZE:
            self._write(tarfile.NUL * (tarfile.RECORDSIZE - rest))

    def _add_bytes(self, name: str, data: bytes, *, indexed: bool = False) -> None:
        self._header(name, len(data), 0o600, int(time.time()))
        self._write(data)
        self._pad(len(data))
        if indexed:
            self._indexed(name, len(data), hashlib.sha256(data).hexdigest())


def _template() -> bytes:
    info = tarfile.TarInfo("")
    info.size, info.mode, info.mtime, info.type = 0, 0, 0, tarfile.REGTYPE
    info.uname = info.gname = ""
    return info.tobuf(tarfile.USTAR_FORMAT, "ascii", "strict")


_TEMPLATE = _template()
_OCTAL_11 = 8 ** 11


def ustar_header(name: str, size: int, mode: int, mtime: int) -> bytes | None:
    """The ustar header ``tarfile`` writes for a regular file, byte for byte, built from one template
    (``TarInfo.tobuf`` cost a sixth of a 2,000-session pack's main thread: docs/bench.md, "pack"); None
    when the name is not ASCII or ustar cannot hold it, or a number does not fit (``tarfile`` handles those)."""
    if not (name.isascii() and 0 <= size < _OCTAL_11 and 0 <= mtime < _OCTAL_11):
        return None
    prefix, rest = _split(name) if len(name) > 100 else ("", name)
    if rest is None:
        return None
    buf = bytearray(_TEMPLATE)
    buf[0:len(rest)] = rest.encode("ascii")
    buf[345:345 + len(prefix)] = prefix.encode("ascii")
    buf[100:108] = b"%07o\0" % (mode & 0o7777)
    buf[124:136] = b"%011o\0" % size
    buf[136:148] = b"%011o\0" % mtime
    buf[148:156] = b"        "            # the checksum counts its own field as spaces (POSIX ustar)
    buf[148:155] = b"%06o\0" % sum(buf)
    return bytes(buf)


def _split(name: str) -> tuple[str, str | None]:
    """ustar's prefix (155 bytes) and name (100), cut at the first ``/`` that fits, as ``tarfile`` cuts."""
    parts = name.split("/")
    for i in range(1, len(parts)):
        prefix, rest = "/".join(parts[:i]), "/".join(parts[i:])
        if len(prefix) <= 155 and len(rest) <= 100:
            return prefix, rest
    return "", None


def _ready(sha: Any) -> bool:
    return isinstance(sha, str) or sha.done()


def _result(fut: Future, w: Writer) -> str:
    """A digest the worker sets; its block is handed over first when it is still being filled."""
    if not fut.done() and w.cur is not None:
        w._flush()
    while True:
        w.worker.check()        # a failed worker sets no more digests: its error, not a wait forever
        try:
            return fut.result(timeout=0.2)
        except FutureTimeout:
            continue


# ---- reading ------------------------------------------------------------------------------------

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
            current = "the end of the bundle"
            # tar stops at its end-of-archive blocks; the frame's checksum is checked only once the
            # decompressor reaches the frame's end, so the rest (the tar's padding) is read through
            while reader.read(CHUNK):
                pass
        except (tarfile.TarError, zstandard.ZstdError, EOFError, OSError) as e:
            raise RefusedError(f"the bundle is damaged at {current} ({e}); nothing written",
                               path=f"{path}:{current}") from None


@dataclass
class _Read:
    """What :func:`verify` collected: each member's (sha256, size), the manifest, its seal, the index and
    the session entries (kept: unpack plans from them)."""

    seen: dict[str, tuple[str, int]]
    body: bytes | None = None
    seal: str | None = None
    index: bytes | None = None
    entries: list[tuple[str, bytes]] | None = None


def verify(path: str | os.PathLike) -> dict[str, Any]:
    """Hash every member and check it against the index (the index against the manifest, the manifest
    against its seal) before anything is planned. Returns the manifest with ``sessions`` and ``files``
    (as ``histmig-bundle/1`` lists them); raises ``RefusedError`` naming the first member that differs."""
    got = _Read(seen={}, entries=[])
    last = "its start"
    damaged: RefusedError | None = None
    try:
        for info, fh in members(path):
            last = info.name
            if info.name == MANIFEST:
                got.body = fh.read()
                continue
            if info.name == SEAL:
                got.seal = fh.read().strip().decode("ascii", "replace")
                continue
            keep = info.name == INDEX or info.name.startswith(SESSIONS)
            h, n, parts = hashlib.sha256(), 0, []
            while chunk := fh.read(CHUNK):
                h.update(chunk)
                n += len(chunk)
                if keep:
                    parts.append(chunk)
            got.seen[info.name] = (h.hexdigest(), n)
            if info.name == INDEX:
                got.index = b"".join(parts)
            elif keep:
                got.entries.append((info.name, b"".join(parts)))
    except RefusedError as e:
        # zstd checks its checksum at the end of the stream: first name the file whose bytes changed
        damaged = e
    except (tarfile.TarError, zstandard.ZstdError, EOFError, OSError) as e:    # while reading a member's bytes
        damaged = RefusedError(f"the bundle is damaged at {last} ({e}); nothing written", path=f"{path}:{last}")
    if damaged is not None:
        if got.body is not None:
            _sealed(path, got)
            _compare(path, got, complete=False)
        raise damaged
    if got.body is None or got.seal is None:
        raise RefusedError(f"damaged after {last}, or not a histmig bundle (no {MANIFEST} at its end); "
                           "nothing written", path=path)
    _sealed(path, got)
    return _compare(path, got, complete=True)


def _sealed(path, got: _Read) -> None:
    if got.seal is not None and hashlib.sha256(got.body).hexdigest() != got.seal:
        raise RefusedError(f"{MANIFEST} does not match its checksum (the bundle was changed); nothing written",
                           path=f"{path}:{MANIFEST}")


def _changed(path, name: str) -> RefusedError:
    return RefusedError(f"{name} does not match its checksum in the manifest (the bundle was changed or "
                        "damaged); nothing written", path=f"{path}:{name}")


def _compare(path, got: _Read, *, complete: bool) -> dict[str, Any]:
    """The manifest, once every member read matches it (``complete``: and none is missing)."""
    try:
        manifest = orjson.loads(got.body)
    except orjson.JSONDecodeError as e:
        raise RefusedError(f"{MANIFEST} is not JSON ({e}); nothing written", path=path) from None
    schema = manifest.get("schema")
    if schema in OLD_SCHEMAS:
        listed = {f["name"]: f for f in manifest.get("files", [])}
    elif schema == SCHEMA:
        listed = _index(path, got, manifest, complete)
    else:
        raise RefusedError(f"unknown bundle schema {schema!r} (this histmig reads {SCHEMA} and "
                           f"{', '.join(OLD_SCHEMAS)}); nothing written", path=path)
    for name, (sha, size) in got.seen.items():
        if name == INDEX and schema == SCHEMA:
            continue
        want = listed.get(name)
        if want is None:
            raise RefusedError(f"{name} is in the bundle but not in its manifest; nothing written", path=f"{path}:{name}")
        if want["sha256"] != sha or want["size"] != size:
            raise _changed(path, name)
    missing = sorted(set(listed) - set(got.seen))
    if complete and missing:
        raise RefusedError(f"{missing[0]} is in the manifest but missing from the bundle; nothing written",
                           path=f"{path}:{missing[0]}")
    if schema == SCHEMA:
        _assemble(path, got, manifest, listed)
    return manifest


def _index(path, got: _Read, manifest: dict[str, Any], complete: bool) -> dict[str, dict[str, Any]]:
    """``index.jsonl`` checked against the manifest: name -> its line."""
    want = manifest.get("index") or {}
    if got.index is None:
        if complete:
            raise RefusedError(f"{INDEX} is in the manifest but missing from the bundle; nothing written",
                               path=f"{path}:{INDEX}")
        return {}
    if got.seen.get(INDEX) != (want.get("sha256"), want.get("size")):
        raise _changed(path, INDEX)
    try:
        return {x["name"]: x for x in map(orjson.loads, got.index.splitlines())}
    except (orjson.JSONDecodeError, KeyError, TypeError) as e:
        raise RefusedError(f"{INDEX} is not the index of a bundle ({e}); nothing written", path=path) from None


def _assemble(path, got: _Read, manifest: dict[str, Any], listed: dict[str, dict[str, Any]]) -> None:
    """``sessions`` and ``files`` from the session entries, as a ``histmig-bundle/1`` manifest has them."""
    sessions, files = [], []
    for name, raw in got.entries:
        try:
            entry = orjson.loads(raw)
            session, its = entry["session"], entry["files"]
        except (orjson.JSONDecodeError, KeyError, TypeError) as e:
            raise RefusedError(f"{name} is not a session entry ({e}); nothing written", path=f"{path}:{name}") from None
        for f in its:
            want = listed.get(f.get("name")) or {}
            if (f.get("sha256"), f.get("size")) != (want.get("sha256"), want.get("size")):
                raise _changed(path, f.get("name"))
        session["files"] = [f["name"] for f in its]
        sessions.append(session)
        files += its
    manifest["sessions"], manifest["files"] = sessions, files
