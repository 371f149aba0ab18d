"""Streaming JSONL: exact bytes per line, lazy parsing, bounded memory.

Every line keeps its exact bytes (terminator, a leading BOM on line 1, CRLF) and its byte offset,
so a writer can reproduce the file byte for byte and an editor can patch one value in place.
A line that does not parse (truncated tail, spliced records, NUL runs, invalid UTF-8, deep nesting,
duplicate keys, ...) is *opaque*: it is kept and counted, never repaired.
"""
from __future__ import annotations

import json
import os
from typing import Any, BinaryIO, Iterable, Iterator

import orjson

from histmig.core.diagnostics import HistmigInputError
from histmig.jsonio.regular import open_regular, open_regular_fd  # noqa: F401 (re-exported: the readers' one import)

BOM = b"\xef\xbb\xbf"
DEFAULT_MAX_LINE_BYTES = 64 * 1024 * 1024
# The most one record may hold when a reader builds the model from it (show, convert): a line of
# N bytes costs up to about 10 N while it is split, parsed and rendered, so 16 MiB keeps such a
# reader under 200 MB. A longer line is refused there with its file and line number; flip and move
# read lines up to DEFAULT_MAX_LINE_BYTES and copy longer ones by offset.
RECORD_MAX_BYTES = 16 * 1024 * 1024
CHUNK = 1 << 20


class _Unparsed:
    __slots__ = ()


_UNPARSED = _Unparsed()


class Line:
    """One line of a JSONL stream. ``raw`` is None only for an over-limit line (``oversize``),
    which is never held in memory: writers copy it from the source by ``offset``/``length``."""

    __slots__ = ("number", "offset", "raw", "length", "_obj", "_error")

    def __init__(self, number: int, offset: int, raw: bytes | None, length: int | None = None):
        self.number = number
        self.offset = offset
        self.raw = raw
        self.length = len(raw) if raw is not None else length
        self._obj: Any = _UNPARSED
        self._error: str | None = None

    @property
    def oversize(self) -> bool:
        return self.raw is None

    @property
    def complete(self) -> bool:
        return self.raw is None or self.raw.endswith(b"\n")

    @property
    def has_bom(self) -> bool:
        return self.number == 1 and self.raw is not None and self.raw.startswith(BOM)

    @property
    def terminator(self) -> bytes:
        if self.raw is None or not self.raw.endswith(b"\n"):
            return b""
        return b"\r\n" if self.raw.endswith(b"\r\n") else b"\n"

    @property
    def body_start(self) -> int:
        """Offset of the JSON text inside ``raw`` (3 after a BOM, else 0)."""
        return 3 if self.has_bom else 0

    @property
    def body(self) -> bytes:
        """The JSON text: ``raw`` without BOM and terminator."""
        if self.raw is None:
            return b""
        end = len(self.raw) - len(self.terminator)
        return self.raw[self.body_start:end]

    @property
    def blank(self) -> bool:
        if self.raw is None or self.raw[:1] == b"{":     # a record: said without copying its body
            return False
        return not self.body.strip()

    def _parse(self) -> None:
        if self._obj is not _UNPARSED or self._error is not None:
            return
        if self.raw is None:
            self._error = "line exceeds the size limit"
            return
        self._obj, self._error = parse_json(self.body)
        if self._error is None and not self.complete:
            # a parseable final line without "\n" is still a record; callers may warn
            pass

    @property
    def obj(self) -> Any:
        """The parsed value, or None when the line is opaque (see ``error``)."""
        self._parse()
        return None if self._error else self._obj

    @property
    def error(self) -> str | None:
        """Why the line is opaque, or None when it parsed."""
        self._parse()
        return self._error

    @property
    def opaque(self) -> bool:
        return self.error is not None and not self.blank

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return f"Line({self.number}, off={self.offset}, len={self.length})"


class _DuplicateKey(ValueError):
    pass


def _no_duplicates(pairs):
    d = {}
    for k, v in pairs:
        if k in d:
            raise _DuplicateKey(k)
        d[k] = v
    return d


MAX_DEPTH = 256   # deeper lines are opaque: serde_json (Codex) refuses past 128, Python recursion past ~1000


def _too_deep(value: Any) -> bool:
    stack = [(value, 1)]
    while stack:
        v, d = stack.pop()
        if d > MAX_DEPTH:
            return True
        if isinstance(v, dict):
            stack.extend((c, d + 1) for c in v.values())
        elif isinstance(v, list):
            stack.extend((c, d + 1) for c in v)
    return False


def _canonical(value: Any, body: bytes) -> bool:
    """True when ``body`` is exactly orjson's compact encoding of ``value`` (what serde_json and
    JSON.stringify write). Such a line cannot hold a duplicate key (the dropped pair would be
    missing from the re-encoding) and is at most orjson's encoding depth (254) deep, so the slow
    checks can be skipped; any other line gets them."""
    try:
        return orjson.dumps(value) == body
    except orjson.JSONEncodeError:
        return False


def parse_json(body: bytes) -> tuple[Any, str | None]:
    """Strict parse: orjson (UTF-8, depth, NaN, int range), then a duplicate-key check.

    Returns ``(value, None)`` or ``(None, reason)``; never raises.
    """
    if body[:1] != b"{" and not body.strip():      # (a record is never blank: no copy to say so)
        return None, "blank line"
    if b"\x00" in body:
        return None, "NUL bytes"
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError as e:
        msg = str(e)
        if "utf-8" in msg.lower() or "surrogate" in msg.lower():
            return None, "invalid UTF-8"
        if "recursion" in msg.lower() or "depth" in msg.lower():
            return None, "nesting too deep"
        return None, "not valid JSON"
    if not isinstance(value, (dict, list)) or _canonical(value, body):
        return value, None
    if (body.count(b"[") + body.count(b"{")) > MAX_DEPTH and _too_deep(value):
        return None, "nesting too deep"
    if isinstance(value, dict) and body.count(b'":') > 1:
        try:
            json.loads(body, object_pairs_hook=_no_duplicates)
        except _DuplicateKey as e:
            return None, f"duplicate key {e.args[0]!r}"
        except (ValueError, RecursionError):
            return None, "not valid JSON"
    return value, None


def bodies(data: bytes) -> Iterator[bytes | None]:
    """The JSON text of each line of ``data`` (a file's bytes read whole), split and judged as
    ``iter_lines`` and ``Line`` do it: the first line's BOM and each terminator left out; None for a
    blank line (``Line.blank``); ``b""`` for a line over ``DEFAULT_MAX_LINE_BYTES`` (``Line.oversize``:
    not copied, and ``parse_json`` finds no record in it, so it is opaque as its Line is)."""
    pos, size, find = 0, len(data), data.find
    while pos < size:
        nl = find(b"\n", pos)
        end = size if nl < 0 else nl + 1
        if end - pos > DEFAULT_MAX_LINE_BYTES:
            yield b""
        else:
            start = pos + 3 if pos == 0 and data.startswith(BOM) else pos
            stop = end - (2 if data[end - 2:end] == b"\r\n" else 1) if nl >= 0 else end
            body = data[start:stop]
            yield None if data[pos:pos + 1] != b"{" and not body.strip() else body
        pos = end


def parsed_lines(data: bytes) -> Iterator[tuple[Any, str | None] | None]:
    """``parse_json`` of each of ``bodies(data)`` (None for a blank line), in order. A file whose every
    line is the compact canonical encoding of its value (what the clients write) is parsed in one
    ``orjson`` call (:func:`canonical_values`), not one call and one Python frame per line."""
    values = canonical_values(data)
    if values is not None:
        for value in values:
            yield value, None
        return
    for body in bodies(data):
        yield None if body is None else parse_json(body)


def canonical_values(data: bytes) -> list[Any] | None:
    """The value of every line of ``data`` when each line (``\n``-terminated, the last one may be
    unterminated) is exactly ``orjson.dumps`` of its value; None otherwise. For such a line
    ``parse_json`` gives ``(value, None)`` and ``bodies`` the line itself: no BOM, CR, blank, NUL,
    duplicate key or over-deep line survives the byte comparison (nor a line that only parses
    joined to its neighbours: each is compared alone), so any other file takes the per-line path."""
    if not data or data[:3] == BOM or len(data) > DEFAULT_MAX_LINE_BYTES:
        return None
    lines = (data[:-1] if data[-1:] == b"\n" else data).split(b"\n")
    try:
        values = orjson.loads(b"[" + b",".join(lines) + b"]")
        if len(values) != len(lines):
            return None
        dumps = orjson.dumps
        for value, line in zip(values, lines):
            if dumps(value) != line:
                return None
    except (orjson.JSONDecodeError, TypeError):      # (orjson.JSONEncodeError is a TypeError)
        return None
    return values


def iter_lines(fp: BinaryIO, *, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
               chunk_size: int = CHUNK, start_offset: int = 0, start_number: int = 1) -> Iterator[Line]:
    """Yield every line of a binary stream with its exact bytes and byte offset.

    Memory stays bounded by ``max_line_bytes + chunk_size``: a longer line is yielded as an
    ``oversize`` Line without its bytes.
    """
    buf = bytearray()
    buf_offset = start_offset          # stream offset of buf[0]
    number = start_number
    skipping: int | None = None        # length so far of an oversize line being skipped
    skip_start = 0
    while True:
        data = fp.read(chunk_size)
        if not data:
            break
        if skipping is not None:
            nl = data.find(b"\n")
            if nl < 0:
                skipping += len(data)
                continue
            yield Line(number, skip_start, None, skipping + nl + 1)
            number += 1
            buf_offset = skip_start + skipping + nl + 1
            skipping = None
            data = data[nl + 1:]
        buf += data
        start = 0
        while True:
            nl = buf.find(b"\n", start)
            if nl < 0:
                break
            length = nl + 1 - start
            if length > max_line_bytes:
                yield Line(number, buf_offset + start, None, length)
            elif length > CHUNK:    # one copy, not two (a bytearray slice, then bytes of it)
                with memoryview(buf) as view:
                    raw = bytes(view[start:nl + 1])
                yield Line(number, buf_offset + start, raw)
                del raw
            else:
                yield Line(number, buf_offset + start, bytes(buf[start:nl + 1]))
            number += 1
            start = nl + 1
        del buf[:start]
        buf_offset += start
        if len(buf) > max_line_bytes:
            skipping, skip_start = len(buf), buf_offset
            buf.clear()
    if skipping is not None:
        yield Line(number, skip_start, None, skipping)
    elif buf:
        if len(buf) > max_line_bytes:
            yield Line(number, buf_offset, None, len(buf))
        else:
            yield Line(number, buf_offset, bytes(buf))


def is_zst(path: str | os.PathLike) -> bool:
    return os.fspath(path).endswith(".zst")


def open_stream(path: str | os.PathLike, *, max_decompressed: int | None = None) -> BinaryIO:
    """Open a JSONL file for streaming; ``.jsonl.zst`` is decompressed with the bounded reader."""
    fh = open_regular(path)
    if not is_zst(path):
        return fh
    from histmig.jsonio.zst import BoundedZstdReader
    return BoundedZstdReader(fh, path=os.fspath(path), max_output=max_decompressed)


def read_lines(path: str | os.PathLike, *, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
               max_decompressed: int | None = None) -> Iterator[Line]:
    """Every line of a ``.jsonl`` or ``.jsonl.zst`` file (streamed)."""
    with open_stream(path, max_decompressed=max_decompressed) as fh:
        yield from iter_lines(fh, max_line_bytes=max_line_bytes)


def record_lines(path: str | os.PathLike, *, limit: int | None = None) -> Iterator[Line]:
    """:func:`read_lines` for a reader that builds records it hands on (``adapter.stream``): a line
    over ``limit`` (default :data:`RECORD_MAX_BYTES`) is refused with the file and line, where
    ``read_lines`` would yield it opaque and never hold it."""
    limit = RECORD_MAX_BYTES if limit is None else limit
    for line in read_lines(path, max_line_bytes=limit):
        if line.oversize:
            raise record_too_big(path, line.number, line.length or 0, limit)
        yield line


def record_too_big(path: str | os.PathLike, number: int | None, size: int, limit: int) -> HistmigInputError:
    return HistmigInputError(f"record of {size} bytes is over the {limit // (1024 * 1024)} MiB limit for reading "
                             "one record into memory (flip and move still copy it byte for byte)",
                             path=path, line=number)


def head_lines(path: str | os.PathLike, *, max_lines: int = 50, max_bytes: int = 256 * 1024,
               max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> list[Line]:
    """The first lines of a file, reading at most about ``max_bytes`` (plus one whole line)."""
    out: list[Line] = []
    with open_stream(path) as fh:
        for line in iter_lines(fh, max_line_bytes=max_line_bytes, chunk_size=64 * 1024):
            out.append(line)
            if len(out) >= max_lines or line.offset + (line.length or 0) >= max_bytes:
                break
    return out


def tail_lines(path: str | os.PathLike, *, max_bytes: int = 64 * 1024) -> list[Line]:
    """Complete lines in the last ``max_bytes`` of a plain file (numbers are unknown: 0).
    For ``.zst`` files the whole stream is read (they are not seekable)."""
    if is_zst(path):
        window: list[Line] = []
        total = 0
        for line in read_lines(path):
            window.append(line)
            total += line.length or 0
            while window and total - (window[0].length or 0) >= max_bytes:
                total -= window.pop(0).length or 0
        return window
    with open_regular(path) as fh:
        size = os.fstat(fh.fileno()).st_size
        start = max(0, size - max_bytes)
        fh.seek(start)
        data = fh.read(size - start)
    if start > 0:
        nl = data.find(b"\n")
        if nl < 0:
            return []
        data, start = data[nl + 1:], start + nl + 1
    from io import BytesIO
    return list(iter_lines(BytesIO(data), start_offset=start, start_number=0))


def count_opaque(lines) -> int:
    return sum(1 for ln in lines if ln.opaque)


def lenient(lines: Iterable[Line]) -> Iterator[Line]:
    """``lines`` with each value parsed by ``orjson.loads`` alone: a listing's parse (docs/scan-show.md,
    "What broken means in a listing"). A line orjson cannot parse is opaque with ``parse_json``'s reason;
    the strict checks after it (duplicate keys, nesting over 256, the canonical re-encode that stands in
    for them) are left to doctor, ``show --format native`` and the writers, which parse lines themselves."""
    for ln in lines:
        raw = ln.raw
        if raw is not None and ln._obj is _UNPARSED and ln._error is None:
            try:             # the terminator is JSON whitespace: no copy without it (a BOM is not)
                ln._obj = orjson.loads(raw if ln.number != 1 or not raw.startswith(BOM) else ln.body)
            except orjson.JSONDecodeError:
                ln._obj, ln._error = parse_json(ln.body)
        yield ln
