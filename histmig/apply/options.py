"""Options, results and the per-operation record that precheck hands to execution."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Callable

from histmig.core.diagnostics import EXIT_OK, EXIT_REFUSED, EXIT_SKIPPED, RefusedError, Skip, Warning
from histmig.core.plan import Op, PatchList


@dataclass
class ApplyOptions:
    follow_symlinks: bool = False      # rewrite a symlink's target (only inside the roots, owned by us)
    break_hardlinks: bool = False      # rewrite files with nlink > 1 (the other names keep the old bytes)
    allow_appended: bool = False       # a file that only grew since the plan is applied, tail kept
    quiet_seconds: float | None = None  # skip files modified less than this many seconds ago
    include_active: bool = False       # ... unless this is set
    max_line_bytes: int = 64 * 1024 * 1024  # for tail_transform implementations (apply itself never parses)
    max_decompressed: int | None = None     # zstd output cap (None: histmig.jsonio.zst default)
    # Transforms bytes appended after the plan was made (allow_appended, append races, salvage).
    # Must be deterministic: it runs once to compute the expected hash and once while writing.
    # Default: keep the appended bytes verbatim.
    tail_transform: Callable[[Op, bytes], bytes] | None = None
    on_commit: Callable[[str], None] | None = None   # called after each file is durably replaced
    # called for each file put back while the apply runs, after a later file of its session was
    # skipped (apply/takeback.py): a file ``on_commit`` named earlier holds its old bytes again
    on_take_back: Callable[[str], None] | None = None
    argv: list[str] | None = None
    append_retries: int = 3
    # The plan was made by this process moments ago from a whole-file read (undo's inverse plan:
    # its diff hashed every file it rewrites, stat taken before that read and checked after it). A
    # streamed rewrite whose ctime still equals the plan's then takes the plan's sha256 as the
    # source's instead of hashing the source again while writing (docs/safety.md "Streamed").
    trust_plan_hash: bool = False

    def transform_tail(self, op: Op, data: bytes) -> bytes:
        return self.tail_transform(op, data) if (self.tail_transform and data) else data


@dataclass
class ApplyResult:
    txid: str | None = None
    done: list[str] = field(default_factory=list)
    skips: list[Skip] = field(default_factory=list)
    warnings: list[Warning] = field(default_factory=list)
    salvaged: dict[str, int] = field(default_factory=dict)

    @property
    def exit_code(self) -> int:
        return EXIT_SKIPPED if self.skips else EXIT_OK

    def to_dict(self) -> dict[str, Any]:
        return {"txid": self.txid, "done": self.done, "skips": [s.to_dict() for s in self.skips],
                "warnings": [w.to_dict() for w in self.warnings], "salvaged": self.salvaged,
                "exit_code": self.exit_code}


@dataclass
class RecoverResult:
    txids: list[str] = field(default_factory=list)
    restored: list[str] = field(default_factory=list)
    warnings: list[Warning] = field(default_factory=list)
    incomplete: list[str] = field(default_factory=list)   # closed, but a file could not be put back

    @property
    def nothing(self) -> bool:
        return not self.txids

    @property
    def exit_code(self) -> int:
        return EXIT_REFUSED if self.incomplete else EXIT_OK

    def to_dict(self) -> dict[str, Any]:
        return {"txids": self.txids, "restored": self.restored, "incomplete": self.incomplete,
                "warnings": [w.to_dict() for w in self.warnings], "exit_code": self.exit_code}


# The patches of every operation that has none: one shared empty list, never added to (an operation's
# own are assigned from its WriteFile in precheck), not an empty PatchList for each of the tens of
# thousands of database operations of a large flip (~300 bytes each).
NO_PATCHES = PatchList()


class Stat:
    """The fields of an ``os.stat_result`` the write path reads, kept for every operation until the
    commit: an ``os.stat_result`` is ~650 bytes with its float times (~4.7 MB for a flip of 7,200
    files), this a third of that (docs/bench.md, "Scaling")."""

    __slots__ = ("st_mode", "st_ino", "st_dev", "st_nlink", "st_uid", "st_gid", "st_size",
                 "st_atime_ns", "st_mtime_ns", "st_ctime_ns")

    def __init__(self, st: os.stat_result) -> None:
        for name in Stat.__slots__:
            setattr(self, name, getattr(st, name))


@dataclass(slots=True)
class Prepared:
    """One operation after precheck: where it writes and what the file looked like."""

    n: int
    op: Op
    method: str                  # replace | inplace | create | rename | delete | sql
    path: str                    # the path written (a followed symlink's target)
    root: str = ""               # real path of the root it lies under
    st: Stat | None = None
    pre_sha: str | None = None
    base_size: int = 0           # bytes of the original the patches cover; beyond it: appended tail
    patches: PatchList = field(default_factory=lambda: NO_PATCHES)   # a file rewrite's are its op's (check.py)
    content: bytes | None = None  # whole new content (new_bytes)
    post_sha: str | None = None
    post_size: int | None = 0     # None: a recompressed .zst, whose size is known once written
    streamed: bool = False       # hashes computed while writing (content.stream_segments), not in precheck
    plain_sha: str | None = None  # a .zst rewrite: sha256 and size of the patched decompressed content
    plain_size: int = 0
    # folders to create (create / rename); never changed in place: one empty tuple for the rest
    dirs: list[str] | tuple[str, ...] = ()
    dst: str = ""                # rename target (real path)
    restore: tuple[str, str, int] | None = None   # op.restore_from, while apply may still use it (batch.py)
    skip: Skip | None = None

    @property
    def parts(self) -> list[str]:
        rel = os.path.relpath(os.path.dirname(self.path), self.root)
        return [] if rel == "." else rel.split(os.sep)

    @property
    def session(self) -> dict[str, str] | None:
        """The session the operation belongs to (journaled so undo treats a session as one unit)."""
        return getattr(self.op, "session", None)

    @property
    def name(self) -> str:
        return os.path.basename(self.path)


def key(st: os.stat_result) -> tuple[int, int, int, int]:
    """What "unchanged" means between two stats (Mercurial's idea, with ns and the inode)."""
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


class ApplyFailedError(RefusedError):
    """An operation failed mid-apply; everything done so far was rolled back."""
