"""Plans: what a mutating command would do, as data.

A planner (``histmig/verbs/*``, with each tool's hooks in ``histmig/tools/<tool>/``) reads the disk and
returns a :class:`Plan`: a list of small,
fingerprinted operations. Nothing is written until ``histmig.apply.apply_plan`` executes the plan
through the one file-system facade; every operation carries what it expects to find so that apply can
refuse (naming the file) when the world changed since planning.

Byte edits of existing files are :class:`Patch` lists (offset, old bytes, new bytes) rather than
whole new contents: apply streams the untouched ranges (``os.copy_file_range``) and writes only the
patched spans, so flipping one value in a 500 MB file costs a copy, never a parse.
"""
from __future__ import annotations

import dataclasses
import os
from dataclasses import field
from pathlib import Path
from typing import Any, ClassVar, Iterable

import orjson

from histmig.core.diagnostics import RefusedError, Skip, Warning
from histmig.core.patches import (Patch, PatchList, ShiftEdits, b64, compact, patch_list,  # noqa: F401 (re-exported)
                                  unb64)
from histmig.core.valueclass import FACTORY, set_fields, value

PLAN_SCHEMA = "histmig-plan/1"


_set = object.__setattr__      # a frozen instance's own fields, set once by its __init__


@value(frozen=True)
class Fingerprint:
    """What a path held at planning time. ``absent=True`` means "must not exist"."""

    # slots (one per file of a plan): the defaults are __init__'s, a slot cannot have a class-level one
    __slots__ = ("absent", "dev", "ino", "size", "mtime_ns", "sha256", "ctime_ns", "spans")
    absent: bool
    dev: int | None
    ino: int | None
    size: int | None
    mtime_ns: int | None
    sha256: str | None
    # ctime cannot be set from user space and moves on every write or utime: equal ctime means the
    # hashed content is still there, so apply may hash while it writes instead of re-reading first
    ctime_ns: int | None
    # a plan applied by the process that made it (never written out): no whole-file hash was taken;
    # apply trusts identity, size, mtime, ctime and each patch's old bytes (docs/safety.md,
    # "Plans applied directly"). Not serialised: a plan written with --plan-out hashes whole files.
    spans: bool

    def __init__(self, absent: bool = False, dev: int | None = None, ino: int | None = None, size: int | None = None,
                 mtime_ns: int | None = None, sha256: str | None = None, ctime_ns: int | None = None,
                 spans: bool = False) -> None:
        _set(self, "absent", absent)
        _set(self, "dev", dev)
        _set(self, "ino", ino)
        _set(self, "size", size)
        _set(self, "mtime_ns", mtime_ns)
        _set(self, "sha256", sha256)
        _set(self, "ctime_ns", ctime_ns)
        _set(self, "spans", spans)

    @classmethod
    def of(cls, path: str | os.PathLike, *, with_hash: bool = True) -> "Fingerprint":
        """Fingerprint a path as it is now (lstat: a symlink is fingerprinted as itself)."""
        p = Path(path)
        try:
            st = p.lstat()
        except FileNotFoundError:
            return cls(absent=True)
        digest = None
        if with_hash and p.is_file() and not p.is_symlink():
            from histmig.core.fsread import open_read  # O_NOATIME where allowed: fingerprinting must not bump atime
            import hashlib  # noqa: PLC0415 (lazy: a dry run never hashes)
            h = hashlib.sha256()
            with os.fdopen(open_read(p), "rb") as fh:
                for chunk in iter(lambda: fh.read(1 << 20), b""):
                    h.update(chunk)
            digest = h.hexdigest()
        return cls(dev=st.st_dev, ino=st.st_ino, size=st.st_size, mtime_ns=st.st_mtime_ns, sha256=digest,
                   ctime_ns=st.st_ctime_ns if digest else None)

    def to_dict(self) -> dict[str, Any]:
        if self.absent:
            return {"absent": True}
        return {k: v for k in ("dev", "ino", "size", "mtime_ns", "sha256", "ctime_ns") if (v := getattr(self, k)) is not None}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Fingerprint":
        return cls(**d)


@value(frozen=True, slots=True)
class Op:
    """Base of every operation. ``session`` names the session the op belongs to
    (``{"tool": "codex", "id": "<thread id>"}``) so apply can check that tool's live-session
    locks for exactly the sessions a plan touches. A move's Claude, manifest and mini-cc operations
    also name their project folder (``"folder": <path>``, with or without ``id``): apply skips a
    session, and a folder, completely or not at all."""

    kind: ClassVar[str] = "op"

    def describe(self) -> str:  # pragma: no cover - overridden
        raise NotImplementedError

    def to_dict(self) -> dict[str, Any]:
        """``{"kind", <every field>}`` in field order; bytes as base64, fingerprints and patches as
        dicts. Optional fields added later are left out while unset, so older plans keep their bytes."""
        d: dict[str, Any] = {"kind": self.kind}
        for f in dataclasses.fields(self):
            if f.name in _IN_PROCESS:
                continue
            value = getattr(self, f.name)
            if value is None and f.name in _OMIT_WHEN_UNSET:
                continue
            d[f.name] = _encode(value)
        return d

    def paths(self) -> list[str]:
        """Paths this operation writes (for root confinement checks): its file, or its database."""
        return [getattr(self, "path", None) or self.db]


_OMIT_WHEN_UNSET = {"new_bytes", "dir_mode", "mtime_ns", "data_path", "sha256", "size"}
_IN_PROCESS = {"restore_from"}     # hints of the process that planned: never written to a plan file


def _encode(value: Any) -> Any:
    if isinstance(value, (Fingerprint, Patch)):
        return value.to_dict()
    if isinstance(value, bytes):
        return b64(value)
    if isinstance(value, PatchList):
        return [{"offset": o, "old": b64(a), "new": b64(b)} for o, a, b in value.rows()]
    if isinstance(value, tuple):
        return [_encode(v) for v in value]
    if isinstance(value, ShiftEdits):
        return [[at, delta] for at, delta in value]
    return value


@value(frozen=True, slots=True)
class WriteFile(Op):
    """Rewrite an existing file: apply ``patches`` (preferred) or replace with ``new_bytes``.

    ``compression="zstd"`` means the file on disk is zstd and patches address the decompressed
    bytes; apply decompresses, patches, recompresses at ``level`` and verifies. ``in_place_ok`` lets
    apply use the same-length pwrite path (inode kept) when every patch keeps its length.
    """

    kind: ClassVar[str] = "write"
    path: str
    expect: Fingerprint
    patches: PatchList = ()      # any iterable of Patch given: held as a PatchList, a long one spilled (core/patches.py)
    new_bytes: bytes | None = None
    compression: str | None = None
    level: int = 3
    in_place_ok: bool = False
    session: dict[str, str] | None = None
    reason: str = ""
    mtime_ns: int | None = None     # set this mtime (undo puts the old one back); None: keep the file's
    # ``(path, sha256, size)``: a file in the state dir's transactions that holds exactly the patched
    # result (undo: the undone apply's hard-link backup, the original inode); apply may rename it into
    # place instead of writing the result (histmig/apply/batch.py, "Putting an inode back"). This
    # process's only: never in a plan file.
    restore_from: tuple[str, str, int] | None = None

    def __init__(self, path: str, expect: Fingerprint, patches: Iterable[Patch] = (), new_bytes: bytes | None = None,
                 compression: str | None = None, level: int = 3, in_place_ok: bool = False,
                 session: dict[str, str] | None = None, reason: str = "", mtime_ns: int | None = None,
                 restore_from: tuple[str, str, int] | None = None) -> None:
        set_fields(self, path=path, expect=expect, patches=patch_list(patches).spill(), new_bytes=new_bytes,
                   compression=compression, level=level, in_place_ok=in_place_ok, session=session, reason=reason,
                   mtime_ns=mtime_ns, restore_from=restore_from)

    def describe(self) -> str:
        what = f"{len(self.patches)} edit(s)" if self.new_bytes is None else f"{len(self.new_bytes)} bytes"
        return f"rewrite {self.path} ({what}{', ' + self.reason if self.reason else ''})"


@value(frozen=True, slots=True)
class CreateFile(Op):
    """Create a new file (parents created as needed, recorded so undo removes them).
    Refuses if the path exists. ``mtime_ns`` None means "now". ``dir_mode`` is the mode of the
    folders apply creates for it (None: 0777 minus the umask, like the agents' own folders).
    A big converted session is not held in memory: ``data`` is empty and ``data_path`` names a spool
    file under the state dir with the planned ``sha256`` and ``size``, which apply copies in chunks
    and verifies before the rename. A spooled op only lives inside one process (never in a plan file)."""

    kind: ClassVar[str] = "create"
    path: str
    data: bytes
    mode: int = 0o600
    mtime_ns: int | None = None
    session: dict[str, str] | None = None
    reason: str = ""
    dir_mode: int | None = None
    data_path: str | None = None
    sha256: str | None = None
    size: int | None = None

    def __init__(self, path: str, data: bytes, mode: int = 0o600, mtime_ns: int | None = None,
                 session: dict[str, str] | None = None, reason: str = "", dir_mode: int | None = None,
                 data_path: str | None = None, sha256: str | None = None, size: int | None = None) -> None:
        set_fields(self, path=path, data=data, mode=mode, mtime_ns=mtime_ns, session=session, reason=reason,
                         dir_mode=dir_mode, data_path=data_path, sha256=sha256, size=size)

    @property
    def nbytes(self) -> int:
        return len(self.data) if self.size is None else self.size

    def digest(self) -> str:
        import hashlib  # noqa: PLC0415 (lazy: OpenSSL's start costs every dry run ~3 ms)
        return hashlib.sha256(self.data).hexdigest() if self.sha256 is None else self.sha256

    def describe(self) -> str:
        return f"create {self.path} ({self.nbytes} bytes{', ' + self.reason if self.reason else ''})"


@value(frozen=True, slots=True)
class Rename(Op):
    """Rename a file or folder. Never replaces anything: an existing target (even an empty
    folder) makes apply refuse."""

    kind: ClassVar[str] = "rename"
    src: str
    dst: str
    expect: Fingerprint
    session: dict[str, str] | None = None
    reason: str = ""

    def __init__(self, src: str, dst: str, expect: Fingerprint, session: dict[str, str] | None = None,
                 reason: str = "") -> None:
        set_fields(self, src=src, dst=dst, expect=expect, session=session, reason=reason)

    def describe(self) -> str:
        return f"rename {self.src} -> {self.dst}"

    def paths(self) -> list[str]:
        return [self.src, self.dst]


@value(frozen=True, slots=True)
class Delete(Op):
    """Delete a file (apply keeps a copy: undo puts it back)."""

    kind: ClassVar[str] = "delete"
    path: str
    expect: Fingerprint
    session: dict[str, str] | None = None
    reason: str = ""

    def __init__(self, path: str, expect: Fingerprint, session: dict[str, str] | None = None, reason: str = "") -> None:
        set_fields(self, path=path, expect=expect, session=session, reason=reason)

    def describe(self) -> str:
        return f"delete {self.path}"


@value(frozen=True, slots=True)
class RmDir(Op):
    """Remove a folder that is empty when the operation runs (a project folder emptied by the
    renames before it). A folder that is not empty then is left alone and reported, never
    removed; undo recreates it with its mode and times."""

    kind: ClassVar[str] = "rmdir"
    path: str
    expect: Fingerprint
    session: dict[str, str] | None = None
    reason: str = ""

    def __init__(self, path: str, expect: Fingerprint, session: dict[str, str] | None = None, reason: str = "") -> None:
        set_fields(self, path=path, expect=expect, session=session, reason=reason)

    def describe(self) -> str:
        return f"remove empty folder {self.path}"


@value(frozen=True, slots=True)
class MkDir(Op):
    """Create a folder with exactly ``mode``; its times are set once the whole plan ran (moving
    entries into it would bump them). Undo's inverse of :class:`RmDir`. Refused if the path exists."""

    kind: ClassVar[str] = "mkdir"
    path: str
    mode: int = 0o700
    mtime_ns: int | None = None
    atime_ns: int | None = None
    session: dict[str, str] | None = None
    reason: str = ""

    def __init__(self, path: str, mode: int = 0o700, mtime_ns: int | None = None, atime_ns: int | None = None,
                 session: dict[str, str] | None = None, reason: str = "") -> None:
        set_fields(self, path=path, mode=mode, mtime_ns=mtime_ns, atime_ns=atime_ns, session=session,
                         reason=reason)

    def describe(self) -> str:
        return f"create folder {self.path}"


@value(frozen=True, slots=True)
class SqlUpdate(Op):
    """``UPDATE table SET <set> WHERE <key>``, refused unless the row still holds ``expect``
    (old values of every column in ``set``)."""

    kind: ClassVar[str] = "sql-update"
    db: str
    table: str
    key: dict[str, Any]
    set: dict[str, Any]
    expect: dict[str, Any]
    session: dict[str, str] | None = None
    reason: str = ""

    def __init__(self, db: str, table: str, key: dict[str, Any], set: dict[str, Any], expect: dict[str, Any],
                 session: dict[str, str] | None = None, reason: str = "") -> None:
        set_fields(self, db=db, table=table, key=key, set=set, expect=expect, session=session, reason=reason)

    def describe(self) -> str:
        cols = ", ".join(f"{k}={v!r}" for k, v in self.set.items())
        keys = ", ".join(f"{k}={v!r}" for k, v in self.key.items())
        return f"update {Path(self.db).name} {self.table} [{keys}]: {cols}"


@value(frozen=True, slots=True)
class SqlShift(Op):
    """Move the byte-offset ``columns`` of every row matching ``where`` by ``edits`` (histmig/core/shift.py:
    ``[(offset of the edit in the original file, length delta)]``), refused unless those rows still hold
    ``expect`` (``{"count", "digest"}`` over each row's ``order`` key columns and ``columns``). One
    operation per table and key (a thread), however many rows it moves: the plan, the journal and undo
    hold one entry, not one per row (docs/safety.md, "Shifted offsets")."""

    kind: ClassVar[str] = "sql-shift"
    db: str
    table: str
    where: dict[str, Any]
    order: tuple[str, ...]
    columns: tuple[str, ...]
    edits: ShiftEdits
    expect: dict[str, Any]
    session: dict[str, str] | None = None
    reason: str = ""

    def __init__(self, db: str, table: str, where: dict[str, Any], order: tuple[str, ...], columns: tuple[str, ...],
                 edits: Iterable[tuple[int, int]], expect: dict[str, Any], session: dict[str, str] | None = None,
                 reason: str = "") -> None:
        set_fields(self, db=db, table=table, where=where, order=tuple(order), columns=tuple(columns),
                         edits=ShiftEdits.of(edits).spill(), expect=expect, session=session,
                         reason=reason)

    @property
    def rows(self) -> int:
        return int(self.expect.get("count", 0))

    def describe(self) -> str:
        keys = ", ".join(f"{k}={v!r}" for k, v in self.where.items())
        return (f"shift {Path(self.db).name} {self.table} [{keys}]: {', '.join(self.columns)} of {self.rows} row(s) "
                f"by {len(self.edits)} edit(s)")


@value(frozen=True, slots=True)
class SqlInsert(Op):
    """Insert one row; refused if a row with the same ``key`` columns exists."""

    kind: ClassVar[str] = "sql-insert"
    db: str
    table: str
    row: dict[str, Any]
    key: tuple[str, ...] = ("id",)
    session: dict[str, str] | None = None
    reason: str = ""

    def __init__(self, db: str, table: str, row: dict[str, Any], key: tuple[str, ...] = ("id",),
                 session: dict[str, str] | None = None, reason: str = "") -> None:
        set_fields(self, db=db, table=table, row=row, key=key, session=session, reason=reason)

    def describe(self) -> str:
        return f"insert into {Path(self.db).name} {self.table} ({', '.join(f'{k}={self.row[k]!r}' for k in self.key)})"


@value(frozen=True, slots=True)
class SqlDelete(Op):
    """Delete the rows matching ``where`` (apply journals them so undo re-inserts them).
    ``expect_count`` guards against a changed table."""

    kind: ClassVar[str] = "sql-delete"
    db: str
    table: str
    where: dict[str, Any]
    expect_count: int
    session: dict[str, str] | None = None
    reason: str = ""

    def __init__(self, db: str, table: str, where: dict[str, Any], expect_count: int,
                 session: dict[str, str] | None = None, reason: str = "") -> None:
        set_fields(self, db=db, table=table, where=where, expect_count=expect_count, session=session,
                         reason=reason)

    def describe(self) -> str:
        keys = ", ".join(f"{k}={v!r}" for k, v in self.where.items())
        return f"delete {self.expect_count} row(s) from {Path(self.db).name} {self.table} [{keys}]"




OP_TYPES: dict[str, type[Op]] = {t.kind: t for t in (WriteFile, CreateFile, Rename, Delete, RmDir, MkDir, SqlUpdate, SqlInsert,
                                                      SqlDelete, SqlShift)}
SQL_OPS = (SqlUpdate, SqlInsert, SqlDelete, SqlShift)   # the operations on a database's rows


def op_from_dict(d: dict[str, Any]) -> Op:
    d = dict(d)
    cls = OP_TYPES.get(d.pop("kind", None))
    if cls is None:
        raise RefusedError("invalid plan: unknown operation kind")
    if "expect" in d and cls in (WriteFile, Rename, Delete, RmDir):
        d["expect"] = Fingerprint.from_dict(d["expect"])
    if cls is WriteFile:
        if "restore_from" in d:
            raise RefusedError("invalid plan: a write names a file to put in place instead of carrying its patches")
        d["patches"] = tuple(Patch.from_dict(p) for p in d.get("patches", ()))
        if "new_bytes" in d:
            d["new_bytes"] = unb64(d["new_bytes"])
    if cls is CreateFile:
        if {"data_path", "sha256", "size"} & d.keys():   # a spool file is this process's, never a plan's
            raise RefusedError("invalid plan: a create names a spool file instead of carrying its data")
        d["data"] = unb64(d["data"])
    if cls is SqlInsert:
        d["key"] = tuple(d.get("key", ("id",)))
    if cls is SqlShift and not _int_pairs(d.get("edits")):
        raise RefusedError("invalid plan: a shift's edits are not [offset, delta] pairs of integers")
    try:
        return cls(**d)
    except (TypeError, OverflowError) as e:      # (an offset past 2**63: a patch list holds 64-bit offsets)
        raise RefusedError(f"invalid plan: {e}") from None


def _int_pairs(edits: Any) -> bool:
    return isinstance(edits, list) and all(isinstance(e, list) and len(e) == 2 and all(
        v.__class__ is int for v in e) for e in edits)


@value
class Plan:
    """A mutating command's intent. ``summary`` is the planner's counts (for "would ..." output);
    ``warnings``/``skips`` are what it noticed; ``roots`` are the folders writes must stay under."""

    op: str
    args: dict[str, Any]
    roots: list[str]
    operations: list[Op] = field(default_factory=list)
    warnings: list[Warning] = field(default_factory=list)
    skips: list[Skip] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)

    def __init__(self, op: str, args: dict[str, Any], roots: list[str], operations: list[Op] = FACTORY,
                 warnings: list[Warning] = FACTORY, skips: list[Skip] = FACTORY,
                 summary: dict[str, Any] = FACTORY) -> None:
        self.op = op
        self.args = args
        self.roots = roots
        self.operations = [] if operations is FACTORY else operations
        self.warnings = [] if warnings is FACTORY else warnings
        self.skips = [] if skips is FACTORY else skips
        self.summary = {} if summary is FACTORY else summary

    @property
    def empty(self) -> bool:
        return not self.operations

    def to_dict(self) -> dict[str, Any]:
        from histmig import __version__
        body = {"schema": PLAN_SCHEMA, "histmig_version": __version__, "op": self.op, "args": self.args,
                "roots": self.roots, "operations": [o.to_dict() for o in self.operations],
                "warnings": [w.to_dict() for w in self.warnings],
                "skips": [s.to_dict() for s in self.skips], "summary": self.summary}
        import hashlib  # noqa: PLC0415
        return {**body, "sha256": hashlib.sha256(_canonical(body)).hexdigest()}

    def dumps(self) -> bytes:
        return orjson.dumps(self.to_dict(), option=orjson.OPT_INDENT_2)

    @classmethod
    def loads(cls, data: bytes) -> "Plan":
        try:
            d = orjson.loads(data)
            sha = d.pop("sha256")
        except Exception as e:
            raise RefusedError(f"invalid plan: {e}") from None
        if d.get("schema") != PLAN_SCHEMA:
            raise RefusedError("invalid plan: unknown schema")
        import hashlib  # noqa: PLC0415
        if hashlib.sha256(_canonical(d)).hexdigest() != sha:
            raise RefusedError("invalid plan: body hash mismatch (edited or corrupted)")
        return cls(op=d["op"], args=d["args"], roots=d["roots"],
                   operations=[op_from_dict(o) for o in d["operations"]],
                   warnings=[Warning(**w) for w in d.get("warnings", [])],
                   skips=[Skip(**s) for s in d.get("skips", [])], summary=d.get("summary", {}))


def _canonical(body: dict[str, Any]) -> bytes:
    return orjson.dumps(body, option=orjson.OPT_SORT_KEYS)
