"""The archive's catalog: one zstd-compressed JSONL file per run, ``catalog/<UTC time>-<run>.jsonl.zst``.

Line 1 is the run (``{"archive": "histmig-archive/1", "run", "time", "histmig"}``); then one line per
session that existed at that run (``{"tool", "id", "cwd", "title", "files": [{"path", "size",
"mtime_ns", "mode", "sha256", "chunks": [[sha256, length], ...]}]}``); the last line sums the run up
(``{"end": true, "sessions", "files", "read", "new_objects", "new_bytes"}``). A catalog without its end
line was cut short and is ignored. The file is written to a temp and renamed, so readers never see half
of one (docs/archive.md, "Catalog").
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Iterator

import orjson
import zstandard

SCHEMA = "histmig-archive/1"
SUFFIX = ".jsonl.zst"


class CatalogWriter:
    def __init__(self, root: Path, run: str, header: dict[str, Any]):
        self.folder = Path(root) / "catalog"
        self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.final = self.folder / f"{run}{SUFFIX}"
        import tempfile  # noqa: PLC0415 (doctor reads catalogs and never writes one: tempfile costs it ~3 ms)
        fd, self.tmp = tempfile.mkstemp(dir=self.folder, prefix=".tmp-")
        self._raw = os.fdopen(fd, "wb")
        self._z = zstandard.ZstdCompressor(level=3).stream_writer(self._raw, closefd=False)
        self.line({"archive": SCHEMA, "run": run, **header})

    def line(self, obj: dict[str, Any]) -> None:
        self._z.write(orjson.dumps(obj) + b"\n")

    def commit(self, end: dict[str, Any]) -> Path:
        self.line({"end": True, **end})
        self._z.close()
        self._raw.flush()
        os.fsync(self._raw.fileno())
        self._raw.close()
        os.replace(self.tmp, self.final)
        dfd = os.open(self.folder, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
        return self.final

    def abort(self) -> None:
        try:
            self._z.close()
            self._raw.close()
        except (OSError, ValueError):
            pass
        try:
            os.unlink(self.tmp)
        except OSError:
            pass


def runs(root: Path) -> list[Path]:
    """Every finished catalog, oldest first (names sort by time)."""
    folder = Path(root) / "catalog"
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.name.endswith(SUFFIX) and not p.name.startswith("."))


def read(path: Path) -> list[dict[str, Any]] | None:
    """The session lines of one catalog (each with ``run``); None when it has no end line (cut short)."""
    head, sessions, ended = None, [], False
    for obj in _lines(path):
        if head is None:
            head = obj
        elif obj.get("end"):
            ended = True
        else:
            sessions.append(obj)
    if head is None or not ended:
        return None
    return [{**s, "run": head.get("run")} for s in sessions]


def _lines(path: Path) -> Iterator[dict[str, Any]]:
    try:
        with open(path, "rb") as fh:
            reader = zstandard.ZstdDecompressor().stream_reader(fh)
            buf = b""
            while True:
                block = reader.read(1 << 20)
                if not block:
                    break
                buf += block
                *whole, buf = buf.split(b"\n")
                for ln in whole:
                    if ln.strip():
                        yield orjson.loads(ln)
            if buf.strip():
                yield orjson.loads(buf)
    except (OSError, zstandard.ZstdError, orjson.JSONDecodeError):
        return


def latest_files(root: Path) -> dict[str, dict[str, Any]]:
    """path -> its newest archived entry, from the newest finished catalog (each lists every session
    that existed at its run): what the next run compares against."""
    for path in reversed(runs(root)):
        found = read(path)
        if found is not None:
            return {f["path"]: f for s in found for f in s.get("files", ())}
    return {}


def sessions(root: Path) -> dict[tuple[str, str], dict[str, Any]]:
    """(tool, id) -> the newest archived entry of every session any run saw (``run`` names the run)."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for path in runs(root):
        for s in read(path) or ():
            out[(s["tool"], s["id"])] = s
    return out
