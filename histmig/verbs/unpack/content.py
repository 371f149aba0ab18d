"""One packed file made ready for this machine: copied out of the bundle into a spool file, then
re-homed by the tool's move field rule (its ``fields`` hook, the one ``move`` applies to every line:
histmig/toolkit/move/scan.py), one ``--rehome`` at a time. Streams: one chunk in memory."""
from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path
from typing import Any, BinaryIO

import zstandard

from histmig.core.diagnostics import RefusedError
from histmig.jsonio import jsonl
from histmig.toolkit.move.common import scan_file, scan_json_file

CHUNK = 1 << 20
SMALL = 1 << 20      # a file a "patch" rule reads whole (workspace.yaml, a marker)


def spool_member(fh: BinaryIO, folder: str, suffix: str) -> str:
    """The member's bytes into a new spool file (its suffix kept: ``.jsonl.zst`` is read as zstd)."""
    fd, path = tempfile.mkstemp(dir=folder, suffix=suffix)
    with os.fdopen(fd, "wb") as out:
        while chunk := fh.read(CHUNK):
            out.write(chunk)
    return path


def suffix_of(rel: str) -> str:
    name = rel.rsplit("/", 1)[-1]
    return "".join(Path(name).suffixes[-2:]) if name.endswith(".zst") else Path(name).suffix


def rehome(path: str, pms: list[Any], rule: Any, folder: str, suffix: str,
           edits: list[list[tuple[int, int]]] | None = None) -> tuple[str, int]:
    """Apply each path map's edits to the spooled file by the tool's ``rule`` (histmig/toolkit/pack.py:
    ``("lines" | "json", fields_fn)`` or ``("patch", fn)``); returns the final spool file and how many
    values were re-homed. A file the scan cannot read whole (a line over the limit, bad zstd) is refused.
    ``edits`` gets one list per pass that changed the file: ``(offset in that pass's input, length
    delta)`` of each patch, what a tool needs to shift byte offsets it stores (Codex: docs/specs/codex.md §10)."""
    fields = 0
    if rule is None:
        return path, 0
    kind, fn = rule
    for pm in pms:
        if kind == "patch":
            with open(path, "rb") as fh:
                patches, n = fn(fh.read(SMALL), pm), 1
        else:
            scan = (scan_json_file if kind == "json" else scan_file)(path, pm, fn)
            if scan.skip:
                raise RefusedError(f"cannot re-home it ({scan.skip}); nothing written", path=path)
            patches, n = scan.patches, scan.fields
        if not patches:
            continue
        if edits is not None:
            edits.append([(p.offset, p.delta) for p in patches if p.delta])
        fd, out = tempfile.mkstemp(dir=folder, suffix=suffix)
        os.close(fd)
        _patched_copy(path, out, patches, compressed=jsonl.is_zst(path))
        os.unlink(path)
        path, fields = out, fields + n
    return path, fields


def _patched_copy(src: str, dst: str, patches: list[Any], *, compressed: bool) -> None:
    """``src`` with ``patches`` (offsets in the decompressed bytes) written to ``dst``, streaming."""
    with jsonl.open_stream(src) as reader, open(dst, "wb") as raw:
        writer: Any = zstandard.ZstdCompressor(level=3).stream_writer(raw, closefd=False) if compressed else raw
        pos = 0
        for p in sorted(patches, key=lambda p: p.offset):
            _copy(reader, writer, p.offset - pos)
            if _read_exact(reader, len(p.old)) != p.old:
                raise RefusedError("changed while being re-homed; nothing written", path=src)
            writer.write(p.new)
            pos = p.offset + len(p.old)
        _copy(reader, writer, -1)
        if compressed:
            writer.close()


def _read_exact(reader: BinaryIO, n: int) -> bytes:
    parts, got = [], 0
    while got < n and (chunk := reader.read(n - got)):
        parts.append(chunk)
        got += len(chunk)
    return b"".join(parts)


def _copy(reader: BinaryIO, writer: Any, n: int) -> None:
    while n != 0:
        chunk = reader.read(CHUNK if n < 0 else min(n, CHUNK))
        if not chunk:
            return
        writer.write(chunk)
        if n > 0:
            n -= len(chunk)


def sha_of(path: str | os.PathLike) -> tuple[str, int]:
    h, n = hashlib.sha256(), 0
    with open(path, "rb") as fh:
        while chunk := fh.read(CHUNK):
            h.update(chunk)
            n += len(chunk)
    return h.hexdigest(), n
