"""The scan index: a cache of listing entries in the state dir, so a repeat ``scan`` (or ``show``'s look-up)
is one folder walk and one ``stat`` per session file (docs/scan-show.md, "The scan index").

One record per session file, keyed by its path and checked against ``(device, inode, size,
mtime_ns)`` and the walk's own facts about it (``ctx``: archived, a shadowed twin, ...). A record holds
the listing fields the format computed from the file (never conversation text beyond the title) and,
for a file the listing did not read to its end in one head, where its count stopped (``resume``) and a
hash of its first 4 KiB: a file that only grew (same inode, larger, same first 4 KiB) is read again from
there only.

It is a cache: deleting the file loses nothing, a corrupt or foreign one is ignored and rewritten, and
a failure to write it (read-only state dir, full disk) never fails the listing. It is written whole to a
temporary file and renamed over the old one, so two scans at once leave one of their indexes intact.
Generic: the formats decide what goes in ``fields`` and ``resume``; this module names no tool.
"""
from __future__ import annotations

import os
from typing import Any, Callable

import orjson

FILE_NAME = "scan-index.json"
VERSION = 2                   # 1: one JSON document (read as corrupt: the next listing rewrites it)
HEAD_HASH_BYTES = 4096


def key_of(st: os.stat_result) -> list[int]:
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns]


def head_hash(first: bytes) -> str:
    """The check that a grown file is the same file: a hash of its first 4 KiB."""
    import hashlib
    return hashlib.blake2b(first[:HEAD_HASH_BYTES], digest_size=16).hexdigest()


def fields_of(ref: Any, names: tuple[str, ...]) -> dict:
    """The listing fields of a ref to store (lists and dicts copied: the caller may extend the ref)."""
    return {k: _copy(getattr(ref, k)) for k in names}


def fill(ref: Any, fields: dict) -> Any:
    """A ref given its stored fields, as :meth:`ScanIndex.hit` returns them (copied: the index keeps its
    own; of those only ``state``, a list, and ``extra``, a dict, are not immutable scalars)."""
    own = getattr(ref, "__dict__", None)
    if own is None:                 # a slotted ref: one setattr per field
        for k, v in fields.items():
            setattr(ref, k, dict(v) if isinstance(v, dict) else list(v) if isinstance(v, list) else v)
        return ref
    own.update(fields)              # (one C call: a warm scan fills every field of every ref)
    if "state" in fields:
        own["state"] = list(fields["state"])
    if "extra" in fields:
        own["extra"] = dict(fields["extra"])
    return ref


def indexed(index: Any, path: Any, cwd: str | None, names: tuple[str, ...],
            make: Callable[[os.stat_result, dict], Any]) -> tuple[Any, os.stat_result | None]:
    """A listing row of ``path`` from the index: ``(make(st, fields), st)`` when the file is unchanged
    since its stored ``fields`` were stored (``make`` gives the ref of both, the stored fields winning:
    ``core.model.stored_ref``; the stored id replaces the file name's, which is not parsed);
    ``(None, st)`` on a miss; ``(None, None)`` when the stat fails (the caller states the file again,
    where the error becomes the row's). One ``stat`` either way."""
    try:
        st = os.stat(path)
    except OSError:
        return None, None
    hit = index.hit(str(path), st, cwd, names)
    return (None, st) if hit is None else (make(st, hit), st)


def _sound(name: str, value: Any) -> bool:
    """A stored field of the type a ref holds (``state``: a list of strings, ``extra``: an object, the
    rest scalars)."""
    if name == "state":
        return isinstance(value, list) and all(isinstance(x, str) for x in value)
    if name == "extra":
        return isinstance(value, dict)
    return value is None or isinstance(value, (str, int, float))


# the exact types of a sound scalar field (a subclass, ``bool``, goes through :func:`_sound`)
_SCALARS = frozenset({str, int, float, type(None)})


def _all_sound(fields: dict) -> bool:
    """Every field :func:`_sound` (one loop, one set look-up per scalar: a warm scan checks every ref's)."""
    for k, v in fields.items():
        if type(v) in _SCALARS:
            if k == "state" or k == "extra":
                return False
        elif k == "state" and type(v) is list:     # (most often empty: no call, no generator)
            for x in v:
                if not isinstance(x, str):
                    return False
        elif not _sound(k, v):
            return False
    return True


# the field names a caller passes, as a set (made once per tuple, not per look-up)
_NAME_SETS: dict[tuple[str, ...], frozenset[str]] = {}


def _copy(v: Any) -> Any:
    return dict(v) if isinstance(v, dict) else list(v) if isinstance(v, list) else v


class ScanIndex:
    """The records of one state dir, loaded once per listing and saved once at its end.

    The file is JSON Lines (``VERSION`` 2): a header line ``{"version": 2, "ids": {...}}``, then one
    line per record, its path as a JSON string, a tab, the record as a JSON array ``[key, ctx, fields,
    resume, head hash]``. Loading splits each line at its tab and keeps the record's bytes; a record is
    parsed when its file is looked up. Parsing the whole index at once held about 2 KB of objects a
    record (15 MB at 8,000 sessions) beside the parser's own buffers (~65 MB traced) for the listing's
    length; a record's bytes are ~500 (docs/scan-show.md, "The scan index"). JSON escapes a tab
    inside a string, so the first tab of a line always ends its path."""

    def __init__(self, file: str | None, records: dict[str, bytes] | None = None,
                 ids: dict[str, list] | None = None):
        self.file = file
        self.records = records or {}         # path -> the record's JSON line (parsed by ``record``)
        self.ids = ids or {}                 # tool -> every session id of its last complete listing
        self.changed = False
        self.touched: set[str] = set()       # paths looked up or stored by this listing

    @classmethod
    def load(cls, state_dir: str | os.PathLike | None, name: str = FILE_NAME) -> "ScanIndex":
        """The index of ``state_dir`` (empty when missing, unreadable, corrupt or of another version;
        a damaged line is left out); ``name``: another index kept the same way (doctor's,
        tools/codex/doctor_index.py)."""
        if state_dir is None:
            return cls(None)
        file = os.path.join(os.fspath(state_dir), name)
        try:
            with open(file, "rb") as fh:
                head = orjson.loads(fh.readline())
                if type(head) is not dict or head.get("version") != VERSION:
                    return cls(file)
                ids = head.get("ids")
                if not isinstance(ids, dict) or not all(isinstance(v, list) for v in ids.values()):
                    ids = {}
                return cls(file, _lines(fh), ids)
        except (OSError, ValueError):
            return cls(file)

    # ---- look-ups -----------------------------------------------------------------------------

    def record(self, path: str) -> Any:
        """The stored record of ``path`` parsed (None when there is none or it is not JSON)."""
        raw = self.records.get(path)
        if raw is None:
            return None
        try:
            return orjson.loads(raw)
        except ValueError:
            return None

    def hit(self, path: str, st: os.stat_result, ctx: Any = None, names: tuple[str, ...] | None = None) -> dict | None:
        """The stored fields of ``path`` when the file is unchanged since they were stored (and, with
        ``names``, they are exactly those fields, of the types a ref holds: a damaged record is a miss)."""
        self.touched.add(path)
        rec = self.record(path)             # (``key_of`` inlined: one call per warm ref)
        if type(rec) is not list or len(rec) != 5 or rec[1] != ctx:
            return None
        fields = rec[2]
        if rec[0] != [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns] or type(fields) is not dict:
            return None
        if names is not None:
            key = names if type(names) is tuple else tuple(names)
            wanted = _NAME_SETS.get(key) or _NAME_SETS.setdefault(key, frozenset(key))
            if fields.keys() != wanted or not _all_sound(fields):
                return None
        return fields

    def grown(self, path: str, st: os.stat_result, ctx: Any = None) -> tuple[dict, str] | None:
        """``(resume, head hash)`` of ``path`` when it may only have grown since it was stored: same
        device and inode, larger, and a resume point was stored. The caller compares the hash."""
        rec = self._record(path)
        if rec is None or rec[3] is None or rec[1] != ctx:
            return None
        dev, ino, size, _mtime = rec[0]
        if (dev, ino) != (st.st_dev, st.st_ino) or st.st_size <= size:
            return None
        return rec[3], rec[4]

    def _record(self, path: str) -> list | None:
        rec = self.record(path)
        if isinstance(rec, list) and len(rec) == 5 and isinstance(rec[0], list) and len(rec[0]) == 4 \
                and isinstance(rec[2], dict):
            return rec
        return None

    # ---- updates ------------------------------------------------------------------------------

    def store(self, path: str, st: os.stat_result, fields: dict, *, ctx: Any = None,
              resume: dict | None = None, first: bytes | None = None) -> None:
        """Remember the listing fields of ``path`` as of ``st`` (``resume`` needs ``first``, the file's
        first bytes, for the grow check)."""
        if self.file is None:
            return
        try:
            path.encode()                    # a name that is not UTF-8 cannot be a JSON key: not cached
        except UnicodeEncodeError:
            return
        self.touched.add(path)
        self.put(path, [key_of(st), ctx, fields, resume if first is not None else None,
                        head_hash(first) if resume is not None and first is not None else None])

    def put(self, path: str, rec: list) -> None:
        """Keep ``rec`` as the record of ``path`` (one that JSON cannot carry exactly, a name or a
        title that is not UTF-8, is dropped instead: its file is read again next time)."""
        try:                                 # an exact-size copy: ``orjson.dumps`` keeps its whole buffer
            raw = bytes(memoryview(orjson.dumps(rec, option=orjson.OPT_APPEND_NEWLINE)))
        except (TypeError, ValueError):
            self.forget(path)
            return
        if self.records.get(path) != raw:
            self.records[path] = raw
            self.changed = True

    def store_ids(self, tool: str, ids: list[str]) -> None:
        """Every session id a complete listing of ``tool`` found: what ``scan --tool X`` tells its short
        ids apart from (the other tools' sessions; docs/scan-show.md, "Short ids")."""
        if self.file is not None and self.ids.get(tool) != ids:
            self.ids[tool] = ids
            self.changed = True

    def forget(self, path: str) -> None:
        if self.records.pop(path, None) is not None:
            self.changed = True

    def save(self, keep: set[str] | None = None) -> bool:
        """Write the index (temporary file, then rename); with ``keep``, records of other paths (files
        gone since) are dropped. Never raises: a cache that cannot be written is simply not written."""
        if self.file is None:
            return False
        if keep is not None and set(self.records) - keep:
            self.records = {p: r for p, r in self.records.items() if p in keep}
            self.changed = True
        if not self.changed:
            return True
        tmp = f"{self.file}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
        try:                                 # folders 0700, files 0600, as the rest of the state dir (docs/safety.md)
            os.makedirs(os.path.dirname(self.file), mode=0o700, exist_ok=True)
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
            with os.fdopen(fd, "wb") as fh:
                _write(fh, self.records, self.ids)
            os.replace(tmp, self.file)
        except (OSError, TypeError, ValueError):
            try:
                os.unlink(tmp)
            except OSError:
                pass
            return False
        self.changed = False
        return True


def _lines(fh: Any) -> dict[str, bytes]:
    """The record lines after the header: path -> the record's bytes (its newline kept)."""
    records: dict[str, bytes] = {}
    loads = orjson.loads
    for line in fh:
        key, tab, raw = line.partition(b"\t")
        if not tab:
            continue
        try:
            path = loads(key)
        except ValueError:
            continue
        if type(path) is str:
            records[path] = raw if raw.endswith(b"\n") else raw + b"\n"
    return records


def _write(fh: Any, records: dict[str, bytes], ids: dict[str, list]) -> None:
    fh.write(orjson.dumps({"version": VERSION, "ids": ids}, option=orjson.OPT_APPEND_NEWLINE))
    dumps = orjson.dumps
    for path, raw in records.items():
        fh.write(dumps(path) + b"\t" + raw)


def read_document(file: str | os.PathLike) -> dict:
    """An index file as one object, ``{"version", "ids", "records": {path: record}}`` (records that do
    not parse are left out): for tests and a reader's eye; a listing never parses the whole file."""
    with open(file, "rb") as fh:
        head = orjson.loads(fh.readline())
        records = {}
        for path, raw in _lines(fh).items():
            try:
                records[path] = orjson.loads(raw)
            except ValueError:
                pass
    return {**head, "records": records}


def write_document(file: str | os.PathLike, doc: dict) -> None:
    """Write ``doc`` (as :func:`read_document` gives it) in the index's own layout."""
    records = {p: orjson.dumps(r, option=orjson.OPT_APPEND_NEWLINE) for p, r in doc.get("records", {}).items()}
    with open(file, "wb") as fh:
        _write(fh, records, doc.get("ids", {}))
