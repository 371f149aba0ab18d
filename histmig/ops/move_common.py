"""Shared pieces of the ``move`` planners: the path map, the streaming file scan, surgical edits.

The scan is built for speed on large histories: a line is parsed only when it contains the bytes of
an old path (in any spelling a writer could have used), and the value edits locate their span with a
plain byte search when that is unambiguous, falling back to the JSON scanner of ``jsonedit``. Every
edited line is re-parsed and compared with what we meant to produce.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

import orjson

from histmig import jsonl
from histmig.diagnostics import HistmigInputError, UsageError, Warning
from histmig.jsonedit import EditError, encode_value, find_span
from histmig.paths import is_under, rebase
from histmig.plan import Fingerprint, Patch, WriteFile, compact

JsonPath = tuple
FieldEdit = tuple[JsonPath, str, str]          # (path in the record, old value, new value)


# ---- the path map ---------------------------------------------------------------------------

@dataclass(frozen=True)
class PathMap:
    """OLD spellings (given and realpath) and the NEW path they all map to.

    Both Claude Code and Codex record ``getcwd()`` (symlinks resolved), so every old spelling maps
    to the realpath of NEW: that is what either client will record when started in NEW.
    """

    olds: tuple[str, ...]
    new: str

    def rebase(self, path: Any) -> str | None:
        if not isinstance(path, str):
            return None
        for old in self.olds:
            out = rebase(path, old, self.new)
            if out is not None:
                return out
        return None

    def covers(self, path: Any) -> bool:
        return isinstance(path, str) and any(is_under(path, o) for o in self.olds)

    @property
    def needles(self) -> tuple[bytes, ...]:
        return _needles(self.olds)


def _needles(olds: Iterable[str]) -> tuple[bytes, ...]:
    """Byte forms an old path can take inside a JSON line: raw UTF-8 (JSON.stringify, serde),
    JSON-escaped (quotes, backslashes), ASCII-escaped (Python's json default) and ``\\/``."""
    out: list[bytes] = []
    for old in olds:
        forms = {old.encode("utf-8", "surrogatepass"), orjson.dumps(old)[1:-1],
                 json.dumps(old)[1:-1].encode(), json.dumps(old)[1:-1].replace("/", "\\/").encode()}
        out.extend(f for f in forms if f not in out)
    return tuple(out)


def make_pathmap(old: str, new: str) -> tuple[PathMap, list[Warning]]:
    """Validate OLD/NEW and build the map. Raises UsageError for moves that make no sense."""
    for name, value in (("OLD_PATH", old), ("NEW_PATH", new)):
        if not value or "\x00" in value or "\n" in value:
            raise UsageError(f"{name} is not a usable path: {value!r}")
    old_abs = os.path.normpath(os.path.abspath(os.path.expanduser(old)))
    new_abs = os.path.normpath(os.path.abspath(os.path.expanduser(new)))
    olds = [old_abs]
    real_old = os.path.realpath(old_abs)
    if real_old not in olds:
        olds.append(real_old)
    new_real = os.path.realpath(new_abs)
    if "/" in olds:
        raise UsageError("refusing to move '/': every path is under it")
    for o in olds:
        if new_real == o or new_abs == o:
            raise UsageError(f"OLD_PATH and NEW_PATH are the same path ({o})")
        if is_under(new_real, o):
            raise UsageError(f"NEW_PATH {new_real} is inside OLD_PATH {o}; a second run would move it again")
    warnings: list[Warning] = []
    if not os.path.exists(old_abs) and not os.path.exists(new_abs):
        warnings.append(Warning("paths-missing", f"neither {old_abs} nor {new_abs} exists; "
                                "moving history for a folder that is in neither place", path=old_abs))
    olds.sort(key=len, reverse=True)
    return PathMap(tuple(olds), new_real), warnings


# ---- streaming scan -------------------------------------------------------------------------

class _HashingReader:
    """Wrap a raw file so the scan computes the sha256 of the exact bytes it reads."""

    def __init__(self, fh):
        self.fh, self.h, self.n = fh, hashlib.sha256(), 0

    def read(self, size: int = -1) -> bytes:
        data = self.fh.read(size)
        self.h.update(data)
        self.n += len(data)
        return data


@dataclass
class FileScan:
    """What the scan of one file found. ``skip`` set means: leave the file alone, say why."""

    path: str
    patches: list[Patch] = field(default_factory=list)
    fields: int = 0                 # structured values rewritten
    content: int = 0                # text replacements (--rewrite-content)
    lines: int = 0                  # lines edited
    fingerprint: Fingerprint | None = None
    compressed: bool = False
    skip: str | None = None
    warnings: list[Warning] = field(default_factory=list)
    first: dict[str, Any] = field(default_factory=dict)   # facts the caller asked to remember

    @property
    def deltas(self) -> list[tuple[int, int]]:
        """``(offset in the original, length delta)`` per patch, for byte-offset shifting."""
        return [(p.offset, p.delta) for p in self.patches if p.delta]


FieldsFn = Callable[[Any, PathMap], list[FieldEdit]]


def scan_file(path: str, pm: PathMap, fields_fn: FieldsFn, *, rewrite_content: bool = False,
              max_line_bytes: int = jsonl.DEFAULT_MAX_LINE_BYTES,
              remember: Callable[[Any, FileScan], None] | None = None) -> FileScan:
    """Stream a JSONL (or ``.jsonl.zst``) file and compute the patches that move it.

    ``fields_fn(record, pm)`` names the structured values to rewrite; ``remember`` sees every parsed
    record (only lines that mention an old path are parsed) to note facts such as the thread id.
    """
    res = FileScan(path=path, compressed=jsonl.is_zst(path))
    needles = pm.needles
    try:
        st0 = os.lstat(path)
        if res.compressed:
            res.fingerprint = Fingerprint.of(path)
            stream = jsonl.open_stream(path)
            reader, hasher = stream, None
        else:
            stream = jsonl.open_regular(path)
            reader = hasher = _HashingReader(stream)
        with stream:
            for line in jsonl.iter_lines(reader, max_line_bytes=max_line_bytes):
                _scan_line(line, pm, needles, fields_fn, rewrite_content, remember, res)
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
                                      mtime_ns=st0.st_mtime_ns, sha256=hasher.h.hexdigest())
    return res


def _scan_line(line, pm, needles, fields_fn, rewrite_content, remember, res: FileScan) -> None:
    if line.oversize:
        res.warnings.append(Warning("oversize-line", f"line {line.number} ({line.length} bytes) is over the "
                                    "size limit and was not examined", path=res.path, line=line.number))
        return
    raw = line.raw
    if not any(n in raw for n in needles):
        return
    try:   # orjson alone: a duplicated target key shows up in the verification, not here
        obj = orjson.loads(line.body)
    except orjson.JSONDecodeError:
        obj = None
    if obj is None:
        if not line.blank:
            res.warnings.append(Warning("unparseable-line", f"line {line.number} is not valid JSON "
                                        f"({line.error}) and still mentions the old path; left as is",
                                        path=res.path, line=line.number))
        return
    if remember:
        remember(obj, res)
    edits = fields_fn(obj, pm)
    n_fields = len(edits)
    if rewrite_content:
        edits = edits + content_edits(obj, pm, {e[0] for e in edits})
    if not edits:
        return
    try:
        patches = line_patches(line.body, obj, edits, line.offset + line.body_start)
    except EditError as e:
        res.skip = f"line {line.number}: {e}"
        return
    res.patches.extend(patches)
    res.fields += n_fields
    res.content += len(edits) - n_fields
    res.lines += 1


# ---- surgical edits of one line --------------------------------------------------------------

def _set(obj: Any, path: Sequence, value: Any) -> Any:
    if not path:
        return value
    head, rest = path[0], path[1:]
    out = dict(obj) if isinstance(obj, dict) else list(obj)
    out[head] = _set(obj[head], rest, value)
    return out


def line_patches(body: bytes, obj: Any, edits: Sequence[FieldEdit], base: int) -> list[Patch]:
    """Patches (offsets relative to the file) replacing each value's bytes; verified by re-parsing.

    Fast path: the same old value always maps to the same new value, so when the encoded old string
    (quotes included) occurs in the line exactly as often as there are edits of it, every occurrence
    is a target. In a valid JSON text an unescaped quote only occurs as structure, so a miscount can
    only come from unusual escaping; the re-parse catches it and we redo the edit with the scanner.
    """
    expected = obj
    for path, _, new in edits:
        expected = _set(expected, path, new)
    try:
        return _verified(body, _fast_spans(body, edits), expected, base)
    except EditError:
        spans = [(*find_span(body, path), encode_value(new)) for path, _, new in edits]
        return _verified(body, spans, expected, base)


def _fast_spans(body: bytes, edits: Sequence[FieldEdit]) -> list[tuple[int, int, bytes]]:
    groups: dict[str, list[FieldEdit]] = {}
    for e in edits:
        groups.setdefault(e[1], []).append(e)
    spans = []
    for old, group in groups.items():
        enc, new = orjson.dumps(old), encode_value(group[0][2])
        if body.count(enc) == len(group):
            i = body.find(enc)
            while i >= 0:
                spans.append((i, i + len(enc), new))
                i = body.find(enc, i + len(enc))
        else:
            spans += [(*find_span(body, path), encode_value(n)) for path, _, n in group]
    return spans


def _verified(body: bytes, spans: list[tuple[int, int, bytes]], expected: Any, base: int) -> list[Patch]:
    spans.sort()
    for (s1, e1, _), (s2, _, _) in zip(spans, spans[1:]):
        if s2 < e1:
            raise EditError("overlapping edits")
    out, pos = bytearray(), 0
    for s, e, new in spans:
        out += body[pos:s]
        out += new
        pos = e
    out += body[pos:]
    try:
        if orjson.loads(bytes(out)) != expected:
            raise EditError("edit did not verify")
    except orjson.JSONDecodeError:
        raise EditError("edit did not verify") from None
    return [Patch(base + s, compact(body[s:e]), compact(new)) for s, e, new in spans]


# ---- field finders ---------------------------------------------------------------------------

def path_strings(value: Any, pm: PathMap, prefix: JsonPath = ()) -> list[FieldEdit]:
    """Every string in ``value`` that *is* a path under OLD (not text that mentions one)."""
    out: list[FieldEdit] = []
    if isinstance(value, str):
        new = pm.rebase(value)
        if new is not None and new != value:
            out.append((prefix, value, new))
    elif isinstance(value, dict):
        for k, v in value.items():
            out.extend(path_strings(v, pm, prefix + (k,)))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out.extend(path_strings(v, pm, prefix + (i,)))
    return out


def field_at(obj: Any, path: JsonPath, pm: PathMap) -> list[FieldEdit]:
    """The edit for one named field, if it holds a path under OLD."""
    cur = obj
    for step in path:
        if isinstance(cur, dict) and isinstance(step, str) and step in cur:
            cur = cur[step]
        else:
            return []
    new = pm.rebase(cur)
    return [(path, cur, new)] if new is not None and new != cur else []


_CONTENT_CACHE: dict[PathMap, re.Pattern] = {}


def content_regex(pm: PathMap) -> re.Pattern:
    if pm not in _CONTENT_CACHE:
        alts = "|".join(re.escape(o) for o in pm.olds)
        # OLD preceded by no path character, followed by '/', or by anything that cannot continue
        # a file name: "/a/app/x", "/a/app." and "(/a/app)" match; "/a/app2" and "/x/a/app" do not.
        _CONTENT_CACHE[pm] = re.compile(rf"(?<![\w.\-/])(?:{alts})(?![\w\-]|\.\w)")
    return _CONTENT_CACHE[pm]


def content_edits(obj: Any, pm: PathMap, done: set) -> list[FieldEdit]:
    """``--rewrite-content``: every string value mentioning OLD, with OLD replaced by NEW."""
    rx = content_regex(pm)
    out: list[FieldEdit] = []

    def walk(value: Any, prefix: JsonPath) -> None:
        if prefix in done:
            return
        if isinstance(value, str):
            if any(o in value for o in pm.olds):
                new = rx.sub(lambda m: pm.new, value)
                if new != value:
                    out.append((prefix, value, new))
        elif isinstance(value, dict):
            for k, v in value.items():
                walk(v, prefix + (k,))
        elif isinstance(value, list):
            for i, v in enumerate(value):
                walk(v, prefix + (i,))

    walk(obj, ())
    return out


def write_op(scan: FileScan, *, session: dict[str, str] | None, reason: str) -> WriteFile:
    same_length = all(len(p.old) == len(p.new) for p in scan.patches)
    return WriteFile(path=scan.path, expect=scan.fingerprint, patches=tuple(scan.patches),
                     compression="zstd" if scan.compressed else None, in_place_ok=same_length,
                     session=session, reason=reason)


def dir_fingerprint(path: str) -> Fingerprint:
    """Identity of a folder: dev and inode only (its mtime changes when files inside are rewritten
    earlier in the same plan)."""
    st = os.lstat(path)
    return Fingerprint(dev=st.st_dev, ino=st.st_ino)


# ---- what each tool's planner returns --------------------------------------------------------

@dataclass
class ToolPlan:
    """One tool's part of a move: file edits first, then renames (ops run in order, and the edits
    address files at their old paths), plus database and config operations."""

    tool: str
    writes: list = field(default_factory=list)
    renames: list = field(default_factory=list)
    other: list = field(default_factory=list)       # SqlUpdate and config WriteFiles
    cleanup: list = field(default_factory=list)     # RmDir of folders the renames empty (run last)
    warnings: list = field(default_factory=list)
    skips: list = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)

    def count(self, key: str, n: int = 1) -> None:
        self.counts[key] = self.counts.get(key, 0) + n

    def add_scan(self, scan: FileScan, *, session: dict[str, str] | None, reason: str) -> None:
        """Record a scanned file: its edit (if any) and its warnings."""
        self.warnings.extend(scan.warnings)
        if scan.patches:
            self.writes.append(write_op(scan, session=session, reason=reason))
            self.count("files")
            self.count("fields", scan.fields)
            if scan.content:
                self.count("content", scan.content)
                self.warnings.append(Warning("content-rewritten", f"{scan.content} text value(s) rewritten",
                                             path=scan.path))


def scan_json_file(path: str, pm: PathMap, fields_fn: FieldsFn, *, rewrite_content: bool = False,
                   max_bytes: int = 16 * 1024 * 1024) -> FileScan:
    """Like :func:`scan_file` for a whole (possibly pretty-printed) JSON document."""
    res = FileScan(path=path)
    try:
        with jsonl.open_regular(path) as fh:
            raw = fh.read(max_bytes + 1)
    except HistmigInputError as e:
        res.skip = str(e)
        return res
    if len(raw) > max_bytes:
        res.skip = f"larger than {max_bytes} bytes"
        return res
    if not any(n in raw for n in pm.needles):
        return res
    obj, err = jsonl.parse_json(raw)
    if err:
        res.warnings.append(Warning("unparseable-file", f"not valid JSON ({err}); left as is", path=path))
        return res
    edits = fields_fn(obj, pm)
    n_fields = len(edits)
    if rewrite_content:
        edits = edits + content_edits(obj, pm, {e[0] for e in edits})
    if edits:
        try:
            res.patches = line_patches(raw, obj, edits, 0)
        except EditError as e:
            res.skip = str(e)
            return res
        res.fields, res.content, res.lines = n_fields, len(edits) - n_fields, 1
        res.fingerprint = Fingerprint.of(path)
    return res
