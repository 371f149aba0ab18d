"""``histmig gc``: remove the backups of old, finished transactions (issue 12: "the state dir stays
small"). Backups keep old bytes for ever otherwise: 659 MB after flipping an 815 MB tree.

What goes: ``<state dir>/tx/<txid>/b/`` (backups) and ``t/`` (temps a crash left behind) of a
transaction that is committed, partly undone, undone or rolled back, whose journal was last written
more than ``older_than`` seconds ago. What stays: the journal (``log`` still lists the transaction),
every unfinished transaction (``recover`` needs its backups), every younger one, and
``<state dir>/trash/`` (bytes a user asked to set aside, not backups).

Order (crash-safe): a ``gc`` record is appended to the journal and fsynced *before* anything is
removed, so a transaction never lacks backups without saying so; an interrupted gc is finished by
the next one (a transaction marked ``gc`` that still has a ``b/`` or ``t/`` is taken again whatever
its age). ``undo`` of a collected transaction is refused with "backups removed by gc".

Pure library: returns data, raises typed errors; ``histmig/cli/tx.py`` prints.
"""
from __future__ import annotations

import os
import re
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from histmig.apply import fsio
from histmig.core.diagnostics import RefusedError, UsageError
from histmig.apply.journal import JOURNAL, Journal, tx_op, tx_root, tx_state
from histmig.core.locks import GlobalLock

DEFAULT_OLDER_THAN = "30d"
GC_RECORD = "gc"
FINISHED = ("committed", "partly-undone", "undone", "rolled-back")
UNDOABLE = ("committed", "partly-undone")    # these lose their undo; the others lose nothing
BACKUP_DIRS = ("b", "t")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_age(text: str) -> int:
    """``30d``, ``12h``, ``90m``, ``45s``, ``2w`` or ``0`` → seconds; anything else is a usage error
    (a bare ``30`` is refused: days or seconds would both be a surprise to someone)."""
    m = re.fullmatch(r"\s*(\d+)\s*([smhdw]?)\s*", str(text))
    if not m or (not m.group(2) and int(m.group(1)) != 0):
        raise UsageError(f"--older-than {text!r}: give a number and a unit (s, m, h, d, w), e.g. 30d or 12h, or 0")
    return int(m.group(1)) * _UNITS.get(m.group(2) or "s", 1)


@dataclass
class Backups:
    """What a transaction's backup folders hold: bytes (each inode once) and files."""
    bytes: int = 0
    files: int = 0


@dataclass
class GcEntry:
    txid: str
    state: str
    op: str
    last_write_ns: int          # the journal's mtime: when the transaction last changed state
    backups: Backups
    collected_before: bool = False     # a gc record exists already (an interrupted gc is finished)

    @property
    def loses_undo(self) -> bool:
        # an undo transaction cannot itself be undone (verbs/undo refuses it), so gc takes nothing from it
        return self.state in UNDOABLE and self.op != "undo" and not self.collected_before

    def to_dict(self) -> dict[str, Any]:
        return {"txid": self.txid, "state": self.state, "op": self.op, "last_write_ns": self.last_write_ns,
                "backup_bytes": self.backups.bytes, "backup_files": self.backups.files,
                "loses_undo": self.loses_undo, "finishing_earlier_gc": self.collected_before}


@dataclass
class GcResult:
    applied: bool
    older_than_s: int
    entries: list[GcEntry] = field(default_factory=list)
    kept_unfinished: list[str] = field(default_factory=list)   # never touched: recover needs them
    kept_younger: int = 0

    @property
    def total_bytes(self) -> int:
        return sum(e.backups.bytes for e in self.entries)

    def to_dict(self) -> dict[str, Any]:
        return {"applied": self.applied, "older_than_s": self.older_than_s, "total_bytes": self.total_bytes,
                "transactions": [e.to_dict() for e in self.entries], "kept_unfinished": self.kept_unfinished,
                "kept_younger": self.kept_younger}


# ---- reading a transaction ------------------------------------------------------------------

def backup_size(folder: Path) -> Backups:
    """Bytes and files under ``b/`` and ``t/`` (an inode counted once; symlinks not followed)."""
    out, seen = Backups(), set()
    stack = [str(Path(folder) / d) for d in BACKUP_DIRS]
    while stack:
        try:
            entries = list(os.scandir(stack.pop()))
        except (FileNotFoundError, NotADirectoryError):
            continue
        for e in entries:
            st = e.stat(follow_symlinks=False)
            if e.is_dir(follow_symlinks=False):
                stack.append(e.path)
            elif (st.st_dev, st.st_ino) not in seen:
                seen.add((st.st_dev, st.st_ino))
                out.bytes += st.st_size
                out.files += 1
    return out


def gc_record(folder: Path) -> dict | None:
    """The transaction's last ``gc`` record (when its backups were removed), or None. Read a line at a
    time, only lines starting with that kind parsed (``histmig log`` asks of every transaction; a
    journal can be tens of MB). A line without its newline is not one (a torn append)."""
    needle = b'{"kind":"' + GC_RECORD.encode() + b'"'
    found = None
    try:
        fh = open(Path(folder) / JOURNAL, "rb")
    except FileNotFoundError:
        return None
    with fh:
        for line in fh:
            if line.startswith(needle) and line.endswith(b"\n"):
                try:
                    found = orjson.loads(line)
                except orjson.JSONDecodeError:
                    pass
    return found


# ---- choosing and collecting ----------------------------------------------------------------

def plan_gc(homes, older_than_s: int, *, now_ns: int | None = None) -> GcResult:
    """What ``gc`` would remove (a dry run; reads only)."""
    now_ns = time.time_ns() if now_ns is None else now_ns
    res = GcResult(applied=False, older_than_s=older_than_s)
    root = tx_root(homes.state)
    if not root.is_dir():
        return res
    for folder in sorted(p for p in root.iterdir() if p.is_dir() and not p.is_symlink()):
        if not (folder / JOURNAL).is_file():
            continue
        state = tx_state(folder)
        if state not in FINISHED:
            if state in ("applying", "undoing"):
                res.kept_unfinished.append(folder.name)
            continue
        if not any((folder / d).is_dir() for d in BACKUP_DIRS):
            continue                     # nothing to remove: it stays as undoable as it was
        earlier = gc_record(folder) is not None
        last = os.stat(folder / JOURNAL).st_mtime_ns
        if not earlier and now_ns - last < older_than_s * 1_000_000_000:
            res.kept_younger += 1
            continue
        res.entries.append(GcEntry(folder.name, state, tx_op(folder), last, backup_size(folder), earlier))
    return res


def gc(homes, older_than_s: int, *, apply: bool = False, now_ns: int | None = None) -> GcResult:
    """Dry run by default; with ``apply`` remove the chosen backups under the global lock (the
    choice is made again inside it: another histmig may have finished or started a transaction)."""
    if not apply:
        return plan_gc(homes, older_than_s, now_ns=now_ns)
    with GlobalLock(homes.state):
        res = plan_gc(homes, older_than_s, now_ns=now_ns)
        res.applied = True
        fs = fsio.current()
        for entry in res.entries:
            _collect(fs, tx_root(homes.state) / entry.txid, entry)
    return res


def _collect(fs: fsio.FS, folder: Path, entry: GcEntry) -> None:
    if not entry.collected_before:
        journal = Journal.reopen(fs, folder)
        try:   # durable before the first removal: a collected transaction always says so
            journal.append(GC_RECORD, state=entry.state, backup_bytes=entry.backups.bytes,
                           backup_files=entry.backups.files)
        finally:
            journal.close()
    for name in BACKUP_DIRS:
        path = folder / name
        try:
            shutil.rmtree(path)
        except FileNotFoundError:
            continue
        except OSError as e:
            raise RefusedError(f"could not remove backups ({e.strerror}); the transaction is marked collected, "
                               "run `histmig gc --apply` again to finish", path=e.filename or path) from None
