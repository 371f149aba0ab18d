"""Shared pieces of the ``move`` planners: the path map, what each tool's planner returns, and the
whole-document scan. The streaming JSONL scan lives in ``move_scan``, the per-line field finders
and verified edits in ``move_lines`` (both re-exported here).
"""
from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Iterable

import orjson

from histmig.jsonio import jsonl
from histmig.core.diagnostics import HistmigInputError, UsageError, Warning
from histmig.jsonio.jsonedit import EditError
from histmig.toolkit.move.lines import (FieldEdit, JsonPath, content_edits, content_regex, field_at,
                                    line_patches, path_strings)
from histmig.toolkit.move.scan import FieldsFn, FileScan, scan_file
from histmig.core.paths import is_under, rebase, valid_cwd
from histmig.core.plan import Fingerprint, WriteFile, patch_list
from histmig.core.valueclass import FACTORY
from histmig.core.valueclass import value as valueclass   # (``value`` is a loop variable below)

# the planners import the line and scan helpers from here
__all__ = ["FieldEdit", "FieldsFn", "FileScan", "JsonPath", "PathMap", "ToolPlan", "content_edits", "content_regex",
           "dir_fingerprint", "field_at", "line_patches", "make_pathmap", "path_strings", "scan_file",
           "scan_json_file", "write_op"]


# ---- the path map ---------------------------------------------------------------------------

def cwd_problem(path: str) -> str | None:
    """Why a rebased path may not be written as a folder (docs/specs safety §6), or None: a value
    read from a history file (``OLD/../../x``, 5000 bytes, a NUL) must not become a folder name."""
    if not valid_cwd(path):
        return "would not be an absolute path of at most 4096 bytes without NUL or newline under NEW"
    if ".." in path.split("/"):
        return "has a '..' component"
    return None


def shown(value: str, limit: int = 160) -> str:
    """A recorded value as a message shows it: whole when short, else its start and end and its size
    (a 5000-byte cwd would bury the line it is named on)."""
    text = value if value.isprintable() else "".join(c if c.isprintable() else repr(c)[1:-1] for c in value)
    if len(text) <= limit:
        return text
    half = limit // 2 - 1
    return f"{text[:half]}…{text[-half:]} ({len(value.encode('utf-8', 'surrogatepass'))} bytes)"


def where_text(where: Any) -> str | None:
    """``line 3`` for a line number, a label as it is, None when not known."""
    if callable(where):
        where = where()
    if where is None:
        return None
    return f"line {where}" if isinstance(where, int) else str(where)


# a dataclass still: toolkit/winpath.py's WindowsPathMap is a frozen dataclass built on it
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
        memo = self._memo
        if path in memo:
            out = memo[path]
            if out is None and self.refused and path in self.refused:
                self._seen(path)
            return out
        out = None
        for old, bare in self._bare:
            # a path ``rebase`` maps starts with OLD without its trailing '/': a cheap first test
            if path.startswith(bare) and (out := rebase(path, old, self.new)) is not None:
                break
        if out is not None and (why := cwd_problem(out)):
            self.refused.setdefault(path, why)       # reported as a skip per file (verbs/move), never written
            self._seen(path)
            out = None
        if len(path) <= 1024:     # recurring values (one cwd per session); text is not kept
            if len(memo) >= 4096:
                memo.clear()
            memo[path] = out
        return out

    def covers(self, path: Any) -> bool:
        if not (isinstance(path, str) and any(is_under(path, o) for o in self.olds)):
            return False
        if path in self.refused:
            self._seen(path)
            return False
        return self.rebase(path) is not None

    @cached_property
    def refused(self) -> dict[str, str]:
        """Recorded paths under OLD that are not moved, and why (:func:`cwd_problem`)."""
        return {}

    @cached_property
    def refused_at(self) -> dict[str, dict[str | None, Any]]:
        """Where each refused value was read: value -> {file: where in it} (the first place in each
        file; ``None`` for a value met while no file was being read). The ``bad-cwd`` skips."""
        return {}

    @contextlib.contextmanager
    def reading(self, file: str, where: Any = None):
        """Values rebased inside the block were read from ``file`` (at ``where``: a line number, a label
        such as ``session ses_1``, or a callable giving one, asked only when a value is refused)."""
        w = self._where
        prev = w[:]
        w[:] = [file, where]
        try:
            yield
        finally:
            w[:] = prev

    def at(self, where: Any) -> None:
        """Inside :meth:`reading`: the values rebased next were read at ``where`` in the same file."""
        self._where[1] = where

    def refuse(self, value: str, why: str, file: str | None, where: Any = None) -> None:
        """Record a refusal found elsewhere (a forked scan worker's, ``toolkit/move/parallel``)."""
        self.refused.setdefault(value, why)
        self.refused_at.setdefault(value, {}).setdefault(file, where)

    def refusals_in(self, file: str) -> list[tuple[str, str, Any]]:
        """``(value, why, where)`` of every value refused in ``file`` (where as text, or None)."""
        return [(v, self.refused[v], where_text(places[file])) for v, places in self.refused_at.items()
                if file in places]

    def _seen(self, value: str) -> None:
        file, where = self._where
        places = self.refused_at.setdefault(value, {})
        if places.get(file) is None:      # the first place in the file, or a line where none was known
            where = where_text(where)     # resolved now: the scan moves on
            if where is not None or file not in places:
                places[file] = where

    @cached_property
    def _where(self) -> list[Any]:
        return [None, None]

    @cached_property
    def needles(self) -> tuple[bytes, ...]:
        return _needles(self.olds)

    @cached_property
    def _bare(self) -> tuple[tuple[str, str], ...]:
        return tuple((o, o.rstrip("/") or "/") for o in self.olds)

    @cached_property
    def _memo(self) -> dict[str, str | None]:
        return {}


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
    # a spelling that already is NEW (OLD a symlink to NEW) has nothing to move; the others still do
    olds = [o for o in olds if o not in (new_real, new_abs)]
    if not olds:
        raise UsageError(f"OLD_PATH and NEW_PATH are the same path ({new_real})")
    for o in olds:
        if is_under(new_real, o):
            raise UsageError(f"NEW_PATH {new_real} is inside OLD_PATH {o}; a second run would move it again")
    warnings: list[Warning] = []
    if not os.path.exists(old_abs) and not os.path.exists(new_abs):
        warnings.append(Warning("paths-missing", f"neither {old_abs} nor {new_abs} exists; "
                                "moving history for a folder that is in neither place", path=old_abs))
    olds.sort(key=len, reverse=True)
    return PathMap(tuple(olds), new_real), warnings


def write_op(scan: FileScan, *, session: dict[str, str] | None, reason: str) -> WriteFile:
    patches = patch_list(scan.patches)
    return WriteFile(path=scan.path, expect=scan.fingerprint, patches=patches,
                     compression="zstd" if scan.compressed else None, in_place_ok=patches.same_length(),
                     session=session, reason=reason)


def dir_fingerprint(path: str) -> Fingerprint:
    """Identity of a folder: dev and inode only (its mtime changes when files inside are rewritten
    earlier in the same plan)."""
    st = os.lstat(path)
    return Fingerprint(dev=st.st_dev, ino=st.st_ino)


# ---- what each tool's planner returns --------------------------------------------------------

@valueclass
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
    waiting: dict[str, str] = field(default_factory=dict)   # project folder left whole -> skip code

    def __init__(self, tool: str, writes: list = FACTORY, renames: list = FACTORY, other: list = FACTORY,
                 cleanup: list = FACTORY, warnings: list = FACTORY, skips: list = FACTORY,
                 counts: dict[str, int] = FACTORY, waiting: dict[str, str] = FACTORY) -> None:
        self.tool = tool
        self.writes = [] if writes is FACTORY else writes
        self.renames = [] if renames is FACTORY else renames
        self.other = [] if other is FACTORY else other
        self.cleanup = [] if cleanup is FACTORY else cleanup
        self.warnings = [] if warnings is FACTORY else warnings
        self.skips = [] if skips is FACTORY else skips
        self.counts = {} if counts is FACTORY else counts
        self.waiting = {} if waiting is FACTORY else waiting

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
    """Like :func:`scan_file` for a whole (possibly pretty-printed) JSON document (one record: a
    refused value is named with the file, no line)."""
    with pm.reading(path):
        res = _scan_json_file(path, pm, fields_fn, rewrite_content, max_bytes)
    res.refused = pm.refusals_in(path)
    return res


def _scan_json_file(path: str, pm: PathMap, fields_fn: FieldsFn, rewrite_content: bool, max_bytes: int) -> FileScan:
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
