"""Columns of numbers kept in a temporary file instead of memory, read back a slice at a time.

A move's plan holds one patch per line it edits (a Claude transcript has a ``cwd`` on every line):
12 bytes a line as :class:`~histmig.core.patches.PatchList` columns, 48 MB for 4 million lines, held
from planning to the commit, and as much again in undo's inverse plan (docs/move.md, "Memory"). A
finished column of at least :data:`SPILL_MIN` numbers is written to this process's spool, an
unlinked temporary file, and read back with ``pread`` when it is used: the write path reads a
file's patches a window at a time, so a plan's memory no longer grows with the lines it edits.

The spool belongs to the process that made it: a forked worker reads columns through the file it
inherited but never writes one (its own columns stay in memory; what it sends back is pickled as
the numbers). A spool that cannot be written (a full temporary folder) is not an error: the column
stays in memory, as before. Nothing is left on disk: the file has no name from the start. The file is
made in histmig's state dir when the CLI named it (:meth:`_Spool.prefer`), else in the system's
temporary folder.
"""
from __future__ import annotations

import os
import threading
from array import array
from typing import Any, Iterator

SPILL_MIN = 1024            # numbers (8 KB of offsets): a shorter column stays in memory
READ_ITEMS = 1 << 16        # numbers read at a time when a column is iterated


class _Spool:
    """One unlinked temporary file per process, appended to under a lock (apply's threads may seal
    columns while others read; reads use ``pread`` at their own offsets)."""

    def __init__(self) -> None:
        self.fd = -1
        self.pid = 0
        self.end = 0
        self.lock = threading.Lock()
        self.folder: str | None = None

    def prefer(self, folder: str | os.PathLike) -> None:
        """Make the file in ``folder`` (the CLI names histmig's state dir: a disk beside the
        histories, where the system's temporary folder may be a tmpfs, memory by another name)."""
        self.folder = os.fspath(folder)

    def _open(self) -> Any:
        import tempfile  # noqa: PLC0415 (lazy: only a plan with a long column makes the file)
        if self.folder is not None:
            try:
                return tempfile.TemporaryFile(prefix="histmig-spool-", dir=self.folder)
            except OSError:
                pass            # (a dry run before the state dir exists, a read-only one)
        return tempfile.TemporaryFile(prefix="histmig-spool-")

    def put(self, data: bytes) -> int | None:
        """Where ``data`` was written, or None when it stays in memory (a forked worker, a write error)."""
        with self.lock:
            if self.fd < 0:
                try:
                    fh = self._open()
                except OSError:
                    return None
                self.fd, self.pid, self.end = os.dup(fh.fileno()), os.getpid(), 0
                fh.close()
            if self.pid != os.getpid():          # a forked worker: the parent owns the file and its end
                return None
            at = self.end
            try:
                written = os.pwrite(self.fd, data, at)
            except OSError:
                return None
            if written != len(data):
                return None
            self.end += len(data)
            return at

    def get(self, at: int, size: int) -> bytes:
        data = os.pread(self.fd, size, at)
        if len(data) != size:
            raise OSError(f"histmig's spool file returned {len(data)} of {size} bytes")
        return data


SPOOL = _Spool()


def _after_fork_in_child() -> None:
    """A fresh lock in a forked child: the parent's may have been held by another of its threads at
    the fork, and would stay held in the child for good."""
    SPOOL.lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


class Column:
    """A sequence of numbers of one array ``typecode``: in memory while it is built (``append``,
    ``extend``), then, :meth:`spill`-ed, in the spool. Indexing, slicing (to an ``array``), ``len``,
    iteration and ``bisect`` work either way; appending to a spilled column reads it back first."""

    __slots__ = ("typecode", "_mem", "_at", "_len")

    def __init__(self, typecode: str, items: Any = ()) -> None:
        self.typecode = typecode
        self._mem: array | None = items if isinstance(items, array) and items.typecode == typecode \
            else array(typecode, items)
        self._at = -1
        self._len = 0

    @property
    def spilled(self) -> bool:
        return self._mem is None

    def spill(self) -> "Column":
        """Move the numbers to the spool when there are at least :data:`SPILL_MIN` of them (kept in
        memory when the spool cannot take them)."""
        mem = self._mem
        if mem is not None and len(mem) >= SPILL_MIN:
            at = SPOOL.put(mem.tobytes())
            if at is not None:
                self._at, self._len, self._mem = at, len(mem), None
        return self

    def array(self) -> array:
        """Every number, in memory (a copy when spilled)."""
        if self._mem is not None:
            return self._mem
        return self._read(0, self._len)

    def _read(self, i: int, j: int) -> array:
        out = array(self.typecode)
        if j > i:
            size = out.itemsize
            out.frombytes(SPOOL.get(self._at + i * size, (j - i) * size))
        return out

    def _unspill(self) -> array:
        if self._mem is None:
            self._mem, self._at, self._len = self._read(0, self._len), -1, 0
        return self._mem

    # ---- building ------------------------------------------------------------------------------

    def append(self, x: int) -> None:
        self._unspill().append(x)

    def extend(self, xs: Any) -> None:
        self._unspill().extend(xs)

    # ---- reading -------------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._mem) if self._mem is not None else self._len

    def __getitem__(self, k: Any) -> Any:
        if self._mem is not None:
            return self._mem[k]
        n = self._len
        if isinstance(k, slice):
            start, stop, step = k.indices(n)
            if step != 1:
                return self._read(0, n)[k]
            return self._read(start, max(start, stop))
        if k < 0:
            k += n
        if not 0 <= k < n:
            raise IndexError("column index out of range")
        return self._read(k, k + 1)[0]

    def __iter__(self) -> Iterator[int]:
        if self._mem is not None:
            return iter(self._mem)
        return self._chunks()

    def _chunks(self) -> Iterator[int]:
        for i in range(0, self._len, READ_ITEMS):
            yield from self._read(i, min(self._len, i + READ_ITEMS))

    def __eq__(self, other: Any) -> bool:
        if isinstance(other, Column):
            other = other.array()
        if isinstance(other, (list, tuple)):
            return self.array().tolist() == list(other)
        return self.array() == other

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        where = "spilled" if self._mem is None else "in memory"
        return f"Column({self.typecode!r}, {len(self)} numbers, {where})"

    def __reduce__(self) -> tuple:
        # the numbers themselves: a worker's columns cross a pipe as bytes; a spool offset means
        # nothing in another process
        return Column, (self.typecode, self.array())


def spill(numbers: "array | Column") -> "array | Column":
    """``numbers`` in the spool (a spilled :class:`Column`) when there are at least :data:`SPILL_MIN`
    of them and the spool takes them; else ``numbers`` as it is. Short columns stay plain arrays: a
    flip's two patches a file would otherwise pay a Column's bookkeeping for nothing."""
    if isinstance(numbers, array) and len(numbers) >= SPILL_MIN:
        col = Column(numbers.typecode, numbers).spill()
        return col if col.spilled else numbers
    return numbers


def in_memory(numbers: "array | Column") -> array:
    """The numbers as an array: an array as it is, a Column's read back."""
    return numbers if isinstance(numbers, array) else numbers.array()
