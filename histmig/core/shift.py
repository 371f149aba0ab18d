"""Byte offsets stored in a database, moved with the bytes of the file they point into.

A tool may store byte offsets into a session file (Codex: ``thread_history_1.sqlite``,
docs/codex.md "Byte offsets"). An edit that changes a line's length moves every later offset. The edits
are ``[(byte offset of the edit in the original file, length delta)]``; an offset moves by the
deltas of the edits that start *before* it: stored offsets are line starts (or the file's end) and
edits lie inside lines, so an edit at or after an offset leaves it where it is.

:class:`~histmig.core.plan.SqlShift` moves all the offset columns of the rows matching a key with
one operation, checked and journaled by a count and a digest of the rows instead of row by row
(docs/safety.md, "Shifted offsets"), so a plan, its journal and its undo hold one entry per thread,
not one per row. The digest is order-free (the sum of one sha256 per row, modulo 2**256): one
unsorted pass over a table yields every thread's digest, and a row order SQLite does not fix
(equal keys) cannot make the same rows read as changed.
"""
from __future__ import annotations

import bisect
import hashlib
from array import array
from itertools import accumulate
from typing import Any, Callable, Iterable, Iterator, Sequence

from histmig.core.patches import ShiftEdits

Edits = Sequence[tuple[int, int]]
_MOD = 1 << 256


def shift(offset: int | None, edits: Edits) -> int | None:
    """``offset`` moved by the deltas of every edit that starts before it (None stays None)."""
    if offset is None:
        return None
    return offset + sum(delta for at, delta in edits if at < offset)


def shifter(edits: Edits) -> Callable[[Any], Any]:
    """:func:`shift` for many offsets against one list of edits: the deltas summed once (prefix sums,
    one bisect per offset) instead of once per offset; the same results. A value that is not an
    int (NULL, or text a client stored) is left as it is. A planner's :class:`ShiftEdits` (sorted)
    is summed into two arrays, 16 bytes an edit, not a list of pairs (a move edits every line)."""
    if isinstance(edits, ShiftEdits) and edits.sorted_by_offset():
        ats = array("q", (at for at, _ in edits))
        sums = array("q", [0])
        sums.extend(accumulate(d for _, d in edits))
    else:
        pairs = sorted(edits)
        ats, sums = [at for at, _ in pairs], [0, *accumulate(d for _, d in pairs)]

    def moved(offset):
        if offset.__class__ is not int:
            return offset
        return offset + sums[bisect.bisect_left(ats, offset)]
    return moved


def inverse_edits(edits: Edits) -> Edits:
    """The edits that move the shifted offsets back: each edit where it lies in the *new* file
    (its original offset moved by the edits before it), with the opposite delta. Exact for offsets
    that are line starts and edits inside lines: the line's newline stays between an edit and any
    later offset, so "the edit starts before the offset" holds in the new file as in the old one
    (tests/test_sql_shift.py checks it with hypothesis). A :class:`ShiftEdits` gives one (a planner's,
    sorted, read in place), anything else a list of pairs; one pass over the sorted edits either way."""
    pairs = edits if isinstance(edits, ShiftEdits) and edits.sorted_by_offset() else \
        sorted((at, d) for at, d in edits if d)
    out = _inverse_pass(pairs)
    return ShiftEdits(out) if isinstance(edits, ShiftEdits) else list(out)


def _inverse_pass(pairs: Iterable[tuple[int, int]]) -> Iterator[tuple[int, int]]:
    """:func:`inverse_edits` of edits sorted by offset: each moved by the deltas of the edits at
    smaller offsets (those at its own offset do not move it, as in :func:`shifter`)."""
    before, pending, last = 0, 0, None
    for at, d in pairs:
        if not d:
            continue
        if at != last:
            before, pending, last = before + pending, 0, at
        yield at + before, -d
        pending += d


def needed(edits: Edits, top: int, single: bool) -> Edits:
    """The part of ``edits`` (sorted) that moves offsets no larger than ``top``, each the same: edits
    at or after ``top`` move none, and for ``single`` (one stored offset: one row, one column) the
    edits before it act as one, at the first's place. A move edits every line holding a path: the
    projection row's shift then carries one edit, not one per line (docs/safety.md "Shifted offsets").
    :class:`ShiftEdits` in, :class:`ShiftEdits` out (no pair per edit); else a list."""
    kept: Iterable[tuple[int, int]] = ((at, d) for at, d in edits if at < top and d)
    if single:
        first, total = None, 0
        for at, d in kept:
            first = at if first is None else first
            total += d
        kept = [(first, total)] if total else []
    return ShiftEdits(kept) if isinstance(edits, ShiftEdits) else list(kept)


def sorted_edits(edits: Iterable[tuple[int, int]]) -> ShiftEdits:
    """The edits that change a length, sorted by offset, as :class:`ShiftEdits` (a planner's are
    sorted already: the patches of one file are)."""
    out = ShiftEdits((at, d) for at, d in edits if d)
    return out if out.sorted_by_offset() else ShiftEdits(sorted(out))


def row_hash(values: Iterable[Any]) -> int:
    """One row's part of :func:`Digest` (its key and offset values, ``repr``: ints, text, NULL and
    bytes are told apart)."""
    return int.from_bytes(hashlib.sha256(repr(tuple(values)).encode()).digest(), "big")


class Digest:
    """Count and order-free digest of rows, fed one row at a time."""

    __slots__ = ("count", "total")

    def __init__(self) -> None:
        self.count, self.total = 0, 0

    def add(self, values: Iterable[Any]) -> None:
        self.count += 1
        self.total = (self.total + row_hash(values)) % _MOD

    def expect(self) -> dict[str, Any]:
        """As a :class:`~histmig.core.plan.SqlShift`'s ``expect`` and a journal's shift row hold it."""
        return {"count": self.count, "digest": f"{self.total:064x}"}


def digests(rows: Iterable[Sequence[Any]], nkey: int, edits: Edits | None = None) -> tuple[dict, dict | None]:
    """``(expect of the rows, expect of the rows shifted by edits)`` of ``rows``: key values (``nkey``
    of them) then offset values; the second is None without ``edits``. One pass, nothing kept."""
    old, new = Digest(), Digest() if edits is not None else None
    moved = shifter(edits) if edits is not None else None
    for row in rows:
        old.add(row)
        if new is not None:
            new.add((*row[:nkey], *map(moved, row[nkey:])))
    return old.expect(), (new.expect() if new is not None else None)
