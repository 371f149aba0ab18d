"""Byte patches of one file: :class:`Patch` (offset, old bytes, new bytes) and :class:`PatchList`,
the form a plan holds them in.

A move or an undo of a transcript has one patch per line, and its values recur (one ``cwd`` per
session). As a tuple of ``Patch`` objects each line cost about 90 bytes (the object, its offset as an
int, a pointer), so a 400,000-line transcript held 35 MB of patches (docs/move.md, "Memory"). A
``PatchList`` keeps them as columns instead: the offsets in an ``array('q')`` and, per patch, the
index of its ``(old, new)`` pair in a table of the distinct pairs, 12 bytes a line. It is a sequence
of ``Patch`` (made when one is asked for); the write path reads its columns (``rows``, ``offsets``)
and asks it the facts it needs (``ordered``, ``same_length``, ``delta``) without making one. A
finished list of many patches (an operation's: :meth:`PatchList.spill`) keeps its columns in the
process's spool file (histmig/core/spool.py), so a plan holds no memory per edited line.
:class:`ShiftEdits` keeps the ``(offset, length change)`` of such patches, what a database's stored
byte offsets are moved by (histmig/core/shift.py), the same way.
"""
from __future__ import annotations

import functools
import sys
from array import array
from bisect import bisect_left
from collections import Counter
from operator import index
from typing import Any, Iterable, Iterator

from histmig.core.spool import in_memory, spill
from histmig.core.valueclass import value

_set = object.__setattr__      # a frozen instance's own fields, set once by its __init__


def b64(data: bytes) -> str:
    import base64  # noqa: PLC0415 (lazy: only a plan holding bytes writes or reads them; doctor's dry run never)
    return base64.b64encode(data).decode()


def unb64(text: str) -> bytes:
    import base64  # noqa: PLC0415
    return base64.b64decode(text.encode())


@functools.lru_cache(maxsize=4096)
def compact(data: bytes) -> bytes:
    """One shared, exact-size copy of a small byte string. Planners hold one patch per edited line
    and the same old/new values recur; ``orjson.dumps`` results also keep the whole buffer they were
    encoded into whatever their length (1 KiB when this was written, 4 KiB with orjson 3.13), so
    40,000 patches would otherwise cost 40 to 160 MB."""
    return bytes(memoryview(data))


@value(frozen=True)
class Patch:
    """Replace ``old`` at byte ``offset`` with ``new``. Offsets refer to the *original* content
    (for a ``.jsonl.zst`` file: the decompressed content). Patches of one file never overlap."""

    __slots__ = ("offset", "old", "new")
    offset: int
    old: bytes
    new: bytes

    def __init__(self, offset: int, old: bytes, new: bytes) -> None:
        _set(self, "offset", offset)
        _set(self, "old", old)
        _set(self, "new", new)

    def to_dict(self) -> dict[str, Any]:
        return {"offset": self.offset, "old": b64(self.old), "new": b64(self.new)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Patch":
        return cls(d["offset"], unb64(d["old"]), unb64(d["new"]))

    @property
    def delta(self) -> int:
        return len(self.new) - len(self.old)


class PatchList:
    """One file's patches as columns (module docstring). Built by ``append``/``extend`` (or from any
    iterable of ``Patch``), then read; equal to a tuple or list of the same patches."""

    __slots__ = ("offsets", "which", "pairs", "_ids")

    def __init__(self, patches: Iterable[Patch] = ()) -> None:
        self.offsets = array("q")                    # (a spilled Column once ``spill`` moved it)
        self.which = array("I")                      # per patch: its pair's index in ``pairs``
        self.pairs: list[tuple[bytes, bytes]] = []   # the distinct (old, new) pairs, in first use order
        self._ids: dict[tuple[bytes, bytes], int] | None = {}    # pair -> its index, while built
        self.extend(patches)

    def spill(self) -> "PatchList":
        """Keep the columns in the spool from now on (histmig/core/spool.py; a short list stays in
        memory) and let go of the look-up of pairs. For a finished list (a plan's: every WriteFile
        spills what it is given): appending reads them back and makes the look-up again. The
        look-up is a dict per list, 232 bytes for one pair: 1.7 MB of a flip's 7,207 files."""
        self.offsets, self.which = spill(self.offsets), spill(self.which)
        self._ids = None
        return self

    def _pair_ids(self) -> dict[tuple[bytes, bytes], int]:
        if self._ids is None:
            self._ids = {p: i for i, p in enumerate(self.pairs)}
        return self._ids

    def append(self, p: Patch) -> None:
        self.add(p.offset, p.old, p.new)

    def add(self, offset: int, old: bytes, new: bytes) -> None:
        key = (old, new)
        ids = self._pair_ids()
        w = ids.get(key)
        if w is None:
            w = ids[key] = len(self.pairs)
            self.pairs.append(key)
        offsets, which = self._growing()
        offsets.append(offset)
        which.append(w)

    def _growing(self) -> tuple[array, array]:
        """The columns in memory, to append to (a spilled list read back first)."""
        if type(self.offsets) is not array or type(self.which) is not array:
            self.offsets, self.which = in_memory(self.offsets), in_memory(self.which)
        return self.offsets, self.which

    def extend(self, patches: Iterable[Patch]) -> None:
        rows = patches.rows() if isinstance(patches, PatchList) else ((p.offset, p.old, p.new) for p in patches)
        ids, pairs = self._pair_ids(), self.pairs
        offsets, which = self._growing()
        for offset, old, new in rows:           # (``add`` inlined: a planner extends once per line)
            key = (old, new)
            w = ids.get(key)
            if w is None:
                w = ids[key] = len(pairs)
                pairs.append(key)
            offsets.append(offset)
            which.append(w)

    # ---- read without making a Patch ---------------------------------------------------------

    def rows(self, i: int = 0, j: int | None = None) -> Iterator[tuple[int, bytes, bytes]]:
        """``(offset, old, new)`` of patches ``i`` to ``j`` (not included)."""
        pairs = self.pairs
        for offset, w in zip(self.offsets[i:j], self.which[i:j]):
            old, new = pairs[w]
            yield offset, old, new

    def old_end(self, k: int) -> int:
        """Where patch ``k``'s old bytes end."""
        return self.offsets[k] + len(self.pairs[self.which[k]][0])

    def first_at(self, offset: int, lo: int = 0) -> int:
        """The index of the first patch at or after ``offset`` (from ``lo``; offsets are sorted)."""
        return bisect_left(self.offsets, offset, lo)

    def ordered(self) -> bool:
        """Sorted by offset, none overlapping the next."""
        lens = [len(old) for old, _ in self.pairs]
        end = 0
        for offset, w in zip(self.offsets, self.which):
            if offset < end:
                return False
            end = offset + lens[w]
        return True

    def same_length(self) -> bool:
        """Every patch keeps its length (the in-place path)."""
        return all(len(old) == len(new) for old, new in self.pairs)

    def delta(self) -> int:
        """What the patches add to the file's length."""
        if self.same_length():
            return 0
        pairs = self.pairs
        return sum(n * (len(pairs[w][1]) - len(pairs[w][0])) for w, n in Counter(self.which).items())

    def deltas(self) -> Iterator[tuple[int, int]]:
        """``(offset, length change)`` of each patch that changes the length."""
        change = [len(new) - len(old) for old, new in self.pairs]
        return ((offset, change[w]) for offset, w in zip(self.offsets, self.which) if change[w])

    # ---- a sequence of Patch -----------------------------------------------------------------

    def __len__(self) -> int:
        return len(self.offsets)

    def __getitem__(self, k: Any) -> Any:
        if isinstance(k, slice):
            return [Patch(o, a, b) for o, a, b in self.rows(*_bounds(k, len(self)))]
        old, new = self.pairs[self.which[k]]
        return Patch(self.offsets[k], old, new)

    def __iter__(self) -> Iterator[Patch]:
        return (Patch(o, a, b) for o, a, b in self.rows())

    def __add__(self, other: Iterable[Patch]) -> "PatchList":
        out = PatchList(self)
        out.extend(other)
        return out

    def __iadd__(self, other: Iterable[Patch]) -> "PatchList":
        self.extend(other)
        return self

    def __eq__(self, other: Any) -> bool:
        if isinstance(other, PatchList):
            return len(self) == len(other) and all(a == b for a, b in zip(self.rows(), other.rows()))
        if isinstance(other, (tuple, list)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"PatchList({list(self)!r})"

    def __reduce__(self) -> tuple:
        # the columns as they are (arrays pickle as their bytes): a worker's patches cross a pipe
        # at memory speed (histmig/core/forkmap.py)
        return _rebuild, (in_memory(self.offsets), in_memory(self.which), self.pairs)


def _bounds(k: slice, n: int) -> tuple[int, int]:
    start, stop, step = k.indices(n)
    if step != 1:
        raise ValueError("a PatchList slice has no step")
    return start, max(start, stop)


def _rebuild(offsets: array, which: array, pairs: list) -> PatchList:
    out = PatchList()
    out.offsets, out.which, out.pairs = offsets, which, [tuple(p) for p in pairs]
    out._ids = None                  # (made when something is appended)
    return out


class ShiftEdits:
    """A shift's edits as one column of 64-bit ints (offset, delta, offset, delta, ...): a sequence of
    ``(offset, delta)`` tuples, equal to a tuple or list of the same pairs. A move edits every line
    that holds the folder's path, so a Codex thread's offset rows are moved by one edit per line: as a
    tuple of pairs each cost 64 bytes (the pair and its two ints), 16 bytes here, and the plan of a
    move no longer grows by 48 bytes for every line it edits (docs/bench.md, "Memory and line count")."""

    __slots__ = ("_flat",)

    def __init__(self, edits: Iterable[tuple[int, int]] = ()) -> None:
        flat = array("q")
        for at, delta in edits:
            flat.append(index(at))      # an int, never a float or text (TypeError)
            flat.append(index(delta))
        self._flat: array | Any = flat               # (a spilled Column once ``spill`` moved it)

    def spill(self) -> "ShiftEdits":
        """Keep the numbers in the spool (histmig/core/spool.py; a short list stays in memory)."""
        self._flat = spill(self._flat)
        return self

    @classmethod
    def of(cls, edits: Iterable[tuple[int, int]]) -> "ShiftEdits":
        return edits if isinstance(edits, ShiftEdits) else cls(edits)

    def __len__(self) -> int:
        return len(self._flat) // 2

    def __iter__(self) -> Iterator[tuple[int, int]]:
        it = iter(self._flat)
        return zip(it, it)

    def __getitem__(self, k: int) -> tuple[int, int]:
        if isinstance(k, slice):
            return tuple(self)[k]
        k = range(len(self))[k]
        at, delta = self._flat[2 * k:2 * k + 2]
        return at, delta

    def __eq__(self, other: Any) -> bool:
        if isinstance(other, ShiftEdits):
            return in_memory(self._flat) == in_memory(other._flat)
        if isinstance(other, (tuple, list)):
            return len(other) == len(self) and all(tuple(a) == b for a, b in zip(other, self))
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"ShiftEdits({list(self)!r})"

    def b64(self) -> str:
        """The edits as a journal's shift row holds them (``edits_b64``): base64 of little-endian
        64-bit integers, offset then delta for each edit. Read back as one string, not a list per
        edit (a Codex thread a move edits on 200,000 lines: 4.3 MB of text instead of ~25 MB of
        lists while undo, ``recover`` or ``log`` read the row)."""
        import base64  # noqa: PLC0415
        flat = in_memory(self._flat)
        if sys.byteorder != "little":
            flat = array("q", flat)
            flat.byteswap()
        return base64.b64encode(flat.tobytes()).decode()

    @classmethod
    def from_flat(cls, flat: array) -> "ShiftEdits":
        """Edits from an ``array('q')`` of offset, delta, offset, delta, ... (taken, not copied)."""
        out = cls()
        out._flat = flat
        return out

    @classmethod
    def from_b64(cls, text: str) -> "ShiftEdits":
        """:meth:`b64` read back (``ValueError`` when it is not such text)."""
        import base64  # noqa: PLC0415
        data = base64.b64decode(text.encode(), validate=True)
        if len(data) % 16:
            raise ValueError("shift edits are 16 bytes each")
        flat = array("q")
        flat.frombytes(data)
        if sys.byteorder != "little":
            flat.byteswap()
        return cls.from_flat(flat).spill()

    def sorted_by_offset(self) -> bool:
        """Every edit at or after the one before it (a planner's edits are: histmig/tools/codex/state.py)."""
        last = None
        for at, _ in self:
            if last is not None and at < last:
                return False
            last = at
        return True

    def __reduce__(self) -> tuple:
        return ShiftEdits.from_flat, (in_memory(self._flat),)


def patch_list(patches: Iterable[Patch]) -> PatchList:
    """``patches`` as a PatchList (itself when it is one)."""
    return patches if isinstance(patches, PatchList) else PatchList(patches)
