"""The streaming scan of one JSONL (or ``.jsonl.zst``) file for a move.

Built for speed on large histories, with the exact results of a line-by-line walk: the file is read
in 1 MiB chunks (hashed as read) and searched with ``bytes.find`` for the old path in every spelling
a writer could use, so only lines that mention it become Python objects; each of those is parsed
once, its edits are computed and verified (``move_lines``). Lines over the size limit are reported,
never examined, and never held in memory. Line numbers are only needed for warnings, so they are
counted only then.
"""
from __future__ import annotations

import contextlib
import contextvars
import functools
import hashlib
import os
from dataclasses import field
from typing import Any, Callable, Iterable

import orjson

from histmig.jsonio import jsonl
from histmig.core.diagnostics import HistmigInputError, Warning
from histmig.jsonio.jsonedit import EditError
from histmig.toolkit.move.lines import content_edits, line_patches
from histmig.core.plan import Fingerprint, Patch, PatchList, ShiftEdits, patch_list
from histmig.core.valueclass import FACTORY, value

FieldsFn = Callable[[Any, Any], list]
CHUNK = jsonl.CHUNK
BOM = jsonl.BOM
_loads, _JSONError = orjson.loads, orjson.JSONDecodeError

# False while planning a move that this process applies itself and never writes out: files are not
# hashed whole (``Fingerprint.spans``, docs/safety.md "Plans applied directly"); the apply hashes
# each file while it writes it. Forked scan workers inherit the value.
_HASH_FILES: contextvars.ContextVar[bool] = contextvars.ContextVar("hash_files", default=True)


@contextlib.contextmanager
def hashing(on: bool):
    """Plan with (``on``, the default) or without whole-file hashes, for the duration of the block."""
    token = _HASH_FILES.set(on)
    try:
        yield
    finally:
        _HASH_FILES.reset(token)


@value
class FileScan:
    """What the scan of one file found. ``skip`` set means: leave the file alone, say why."""

    path: str
    patches: PatchList = field(default_factory=PatchList)     # (a list of Patch when one line's)
    fields: int = 0                 # structured values rewritten
    content: int = 0                # text replacements (--rewrite-content)
    lines: int = 0                  # lines edited
    fingerprint: Fingerprint | None = None
    compressed: bool = False
    skip: str | None = None
    warnings: list[Warning] = field(default_factory=list)
    first: dict[str, Any] = field(default_factory=dict)   # facts the caller asked to remember
    # recorded paths under OLD left as they are (``PathMap.refused``): (value, why, "line N")
    refused: list[tuple[str, str, str | None]] = field(default_factory=list)

    def __init__(self, path: str, patches: Iterable[Patch] = FACTORY, fields: int = 0, content: int = 0, lines: int = 0,
                 fingerprint: Fingerprint | None = None, compressed: bool = False, skip: str | None = None,
                 warnings: list[Warning] = FACTORY, first: dict[str, Any] = FACTORY,
                 refused: list[tuple[str, str, str | None]] = FACTORY) -> None:
        self.path = path
        self.patches = PatchList() if patches is FACTORY else patches
        self.fields = fields
        self.content = content
        self.lines = lines
        self.fingerprint = fingerprint
        self.compressed = compressed
        self.skip = skip
        self.warnings = [] if warnings is FACTORY else warnings
        self.first = {} if first is FACTORY else first
        self.refused = [] if refused is FACTORY else refused

    @property
    def deltas(self) -> ShiftEdits:
        """``(offset in the original, length delta)`` of each patch that changes a length, for
        byte-offset shifting (16 bytes an edit: a move edits every line holding the path)."""
        return ShiftEdits(patch_list(self.patches).deltas())


class _HashingReader:
    """Wrap a raw file so the scan computes the sha256 of the exact bytes it reads. (Hashing on a
    worker thread was measured slower: the worker waits for the GIL the parser holds.)"""

    def __init__(self, fh):
        self.fh, self.h, self.n = fh, hashlib.sha256(), 0

    def read(self, size: int = -1) -> bytes:
        data = self.fh.read(size)
        self.h.update(data)
        self.n += len(data)
        return data

    def hexdigest(self) -> str:
        return self.h.hexdigest()


def scan_file(path: str, pm, fields_fn: FieldsFn, *, rewrite_content: bool = False,
              max_line_bytes: int = jsonl.DEFAULT_MAX_LINE_BYTES,
              remember: Callable[[Any, FileScan], None] | None = None) -> FileScan:
    """Stream a JSONL (or ``.jsonl.zst``) file and compute the patches that move it.

    ``fields_fn(record, pm)`` names the structured values to rewrite; ``remember`` sees every parsed
    record (only lines that mention an old path are parsed) to note facts such as the thread id.
    A recorded path ``pm`` refuses is named with this file and its line (``res.refused``).
    """
    with pm.reading(path):
        res = _scan_file(path, pm, fields_fn, rewrite_content, max_line_bytes, remember)
    res.refused = pm.refusals_in(path)
    return res


def _scan_file(path: str, pm, fields_fn: FieldsFn, rewrite_content: bool, max_line_bytes: int,
               remember: Callable[[Any, FileScan], None] | None) -> FileScan:
    res = FileScan(path=path, compressed=jsonl.is_zst(path))
    try:
        st0 = os.lstat(path)
        if res.compressed:
            res.fingerprint = Fingerprint.of(path)
            stream = jsonl.open_stream(path)
            reader, hasher = stream, None
        elif not _HASH_FILES.get():
            stream = jsonl.open_regular(path)
            reader, hasher = stream, None
        else:
            stream = jsonl.open_regular(path)
            reader = hasher = _HashingReader(stream)
        with stream:
            _Lines(res, pm, fields_fn, rewrite_content, remember, max_line_bytes).run(reader)
            if res.skip:
                return res
        st1 = os.lstat(path)
    except HistmigInputError as e:
        res.skip = str(e)
        return res
    except OSError as e:
        res.skip = e.strerror or str(e)
        return res
    if (st0.st_ino, st0.st_size, st0.st_mtime_ns) != (st1.st_ino, st1.st_size, st1.st_mtime_ns):
        res.skip = "changed while being read (is a client writing to it?)"
    elif hasher is not None:
        res.fingerprint = Fingerprint(dev=st0.st_dev, ino=st0.st_ino, size=st0.st_size,
                                      mtime_ns=st0.st_mtime_ns, sha256=hasher.hexdigest(),
                                      ctime_ns=st0.st_ctime_ns if st1.st_ctime_ns == st0.st_ctime_ns else None)
    elif st1.st_ctime_ns != st0.st_ctime_ns:     # no hash to tell what changed: not planned
        res.skip = "changed while being read (is a client writing to it?)"
    elif not res.compressed:
        res.fingerprint = Fingerprint(dev=st0.st_dev, ino=st0.st_ino, size=st0.st_size, mtime_ns=st0.st_mtime_ns,
                                      ctime_ns=st0.st_ctime_ns, spans=True)
    return res


class _Lines:
    """The line walk of one file. Offsets are file offsets; ``buf`` holds the unfinished line."""

    def __init__(self, res: FileScan, pm, fields_fn, rewrite_content, remember, max_line_bytes):
        self.res, self.pm, self.fields_fn = res, pm, fields_fn
        self.rewrite_content, self.remember, self.max = rewrite_content, remember, max_line_bytes
        self.needles = pm.needles

    # -- reading ---------------------------------------------------------------------------------

    def run(self, reader) -> None:
        buf, buf_off = b"", 0          # buf: the unfinished line, starting at file offset buf_off
        skipping: int | None = None    # file offset of an over-limit line being skipped
        read_off = 0
        while not self.res.skip:
            data = reader.read(CHUNK)
            if not data:
                break
            data_off, read_off = read_off, read_off + len(data)
            if skipping is not None:
                nl = data.find(b"\n")
                if nl < 0:
                    continue
                self._oversize(skipping, data_off + nl + 1 - skipping)
                data, data_off, skipping = data[nl + 1:], data_off + nl + 1, None
                buf, buf_off = b"", data_off
            if buf:
                data = buf + data
                data_off = buf_off
            end = data.rfind(b"\n") + 1
            if end:
                self._region(data, data_off, end)
            buf, buf_off = data[end:], data_off + end
            if len(buf) > self.max:
                skipping, buf = buf_off, b""
        if self.res.skip:
            return
        if skipping is not None:
            self._oversize(skipping, read_off - skipping)
        elif buf:
            if len(buf) > self.max:
                self._oversize(buf_off, len(buf))
            elif any(n in buf for n in self.needles):
                self._line(buf, 0, len(buf), buf_off)

    def _region(self, data: bytes, data_off: int, end: int) -> None:
        """Complete lines ``data[:end]``. Only a region longer than the limit can hold an over-limit
        line; those are walked line by line, every other region by searching for the needles."""
        if end > self.max:
            start = 0
            while start < end and not self.res.skip:
                nl = data.find(b"\n", start, end)
                if nl + 1 - start > self.max:
                    self._oversize(data_off + start, nl + 1 - start)
                elif any(n in data[start:nl + 1] for n in self.needles):
                    self._line(data, start, nl + 1, data_off + start)
                start = nl + 1
            return
        needles = self.needles
        nexts = [data.find(n, 0, end) for n in needles]
        pos = 0
        while not self.res.skip:
            hit = -1
            for k, j in enumerate(nexts):
                if 0 <= j < pos:
                    j = nexts[k] = data.find(needles[k], pos, end)
                if j >= 0 and (hit < 0 or j < hit):
                    hit = j
            if hit < 0:
                return
            start = data.rfind(b"\n", pos, hit) + 1 or pos
            nl = data.find(b"\n", hit, end)
            self._line(data, start, nl + 1, data_off + start)
            pos = nl + 1

    # -- one line --------------------------------------------------------------------------------

    def _line(self, data: bytes, start: int, stop: int, offset: int) -> None:
        """The line ``data[start:stop]`` (terminator included) at file ``offset`` mentions an old path."""
        bs = 3 if offset == 0 and data.startswith(BOM, start, stop) else 0
        end = stop
        if data.endswith(b"\n", start, stop):
            end -= 2 if data.endswith(b"\r\n", start, stop) else 1
        body = data[start + bs:end] if start + bs < end else b""
        try:
            obj = _loads(body)
        except _JSONError:
            obj = None
        res = self.res
        if obj is None:
            if body.strip():
                number = self._number(offset)
                res.warnings.append(Warning("unparseable-line", f"line {number} is not valid JSON "
                                            f"({jsonl.parse_json(body)[1]}) and still mentions the old "
                                            "path; left as is", path=res.path, line=number))
            return
        if self.remember:
            self.remember(obj, res)
        self.pm.at(functools.partial(self._number, offset))     # asked only when a value is refused
        edits = self.fields_fn(obj, self.pm)
        n_fields = len(edits)
        if self.rewrite_content:
            edits = edits + content_edits(obj, self.pm, {e[0] for e in edits})
        if not edits:
            return
        try:
            patches = line_patches(body, obj, edits, offset + bs)
        except EditError as e:
            res.skip = f"line {self._number(offset)}: {e}"
            return
        res.patches.extend(patches)
        res.fields += n_fields
        res.content += len(edits) - n_fields
        res.lines += 1

    def _oversize(self, offset: int, length: int) -> None:
        number = self._number(offset)
        self.res.warnings.append(Warning("oversize-line", f"line {number} ({length} bytes) is over the "
                                         "size limit and was not examined", path=self.res.path, line=number))

    def _number(self, offset: int) -> int:
        """Line number of the line starting at ``offset``: rare (warnings and skips only), so the file
        is read again up to there rather than counting newlines in every chunk."""
        with jsonl.open_stream(self.res.path) as fh:
            n, left = 1, offset
            while left > 0:
                data = fh.read(min(CHUNK, left))
                if not data:
                    break
                n += data.count(b"\n")
                left -= len(data)
        return n
