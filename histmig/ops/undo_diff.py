"""The byte edits that turn a file as a transaction left it back into its backup, found by
streaming both line by line (docs/safety.md "Undo").

Every histmig rewrite edits values inside lines and never adds or removes a line, so the i-th
line of the backup pairs with the i-th line of the file; each differing pair becomes one patch
that covers only the bytes between their common prefix and suffix (the value span the
transaction changed). Lines the file has beyond the backup's count were appended after the
apply; the caller treats them as the tail. Memory: one line of each file at a time.
"""
from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from typing import BinaryIO, Callable

from histmig import fsio
from histmig.plan import Patch, compact


class DiffError(Exception):
    """The file is not the transaction's result plus appended lines (the reason is the message)."""


class LinesDiffer(Exception):
    """The transaction added or removed lines (a repair that inserts a record): no line pairing."""


@dataclass
class Diff:
    patches: list[Patch] = field(default_factory=list)
    tail_start: int = 0           # where bytes appended after the apply begin
    size: int = 0                 # the file's size now
    sha256: str = ""              # of the whole file now


def span_patch(offset: int, cur: bytes, want: bytes) -> Patch | None:
    """One patch turning ``cur`` (at ``offset``) into ``want``, trimmed to the differing span."""
    if cur == want:
        return None
    n = min(len(cur), len(want))
    head = _agree(n, lambda k: cur[:k] == want[:k])
    tail = _agree(n - head, lambda k: cur[len(cur) - k:] == want[len(want) - k:])
    return Patch(offset + head, compact(cur[head:len(cur) - tail]), compact(want[head:len(want) - tail]))


def _agree(n: int, same) -> int:
    """The largest k <= n with same(k), for a prefix-closed ``same`` (binary search: each probe is
    one memcmp, where a byte loop in Python cost 15 s of a 20 s undo of 430 files)."""
    lo, hi = 0, n
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if same(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def diff_against_backup(path: str, backup: str, post_size: int, post_sha: str | None,
                        pre_size: int, *, salvaged: bool = False) -> Diff:
    """Patches (in the file's coordinates) that restore the backup's lines over the first
    ``post_size`` bytes, which must hash to ``post_sha`` (what the apply wrote). Lines of that
    region beyond the backup's count are a client's, salvaged during the apply (``salvaged``);
    otherwise the line counts must agree (:class:`LinesDiffer`)."""
    with os.fdopen(fsio.open_read(path), "rb") as cur, open(backup, "rb") as old:
        st = os.fstat(cur.fileno())
        if st.st_size < post_size:
            raise DiffError(f"shorter than the transaction left it ({st.st_size} < {post_size} bytes)")
        applied, out, pos = hashlib.sha256(), Diff(size=st.st_size), 0
        while pos < post_size:
            want = old.readline(pre_size - old.tell()) if old.tell() < pre_size else b""
            if not want:     # the backup has no more lines: the rest was salvaged
                break
            line = cur.readline(post_size - pos)
            applied.update(line)
            if (p := span_patch(pos, line, want)) is not None:
                out.patches.append(p)
            pos += len(line)
        if old.tell() < pre_size or (pos < post_size and not salvaged):
            raise LinesDiffer()
        out.tail_start = pos
        pos += _hash_to(cur, post_size - pos, applied)
        if post_sha is not None and applied.hexdigest() != post_sha:
            raise DiffError("changed since the transaction (not only appended to)")
        whole = applied.copy()            # the file now: what the apply wrote, then what came since
        _hash_to(cur, st.st_size - pos, whole)
        out.sha256 = whole.hexdigest()
        return out


def _hash_to(fh: BinaryIO, n: int, *hashers) -> int:
    done = 0
    while done < n:
        chunk = fh.read(min(1 << 20, n - done))
        if not chunk:
            break
        for h in hashers:
            h.update(chunk)
        done += len(chunk)
    return done


def whole_patch(path: str, backup: str, post_size: int, pre_size: int) -> Patch:
    """One patch putting the backup's bytes over the first ``post_size`` bytes (held in memory:
    only for the rare rewrite that added or removed lines)."""
    with os.fdopen(fsio.open_read(path), "rb") as cur, open(backup, "rb") as old:
        return Patch(0, cur.read(post_size), old.read(pre_size))


def tail_patches(path: str, start: int, size: int, edit: Callable[[bytes], bytes] | None) -> list[Patch]:
    """Patches applying ``edit`` (one line in, one line out) to every line in ``[start, size)``."""
    if edit is None or start >= size:
        return []
    out: list[Patch] = []
    with os.fdopen(fsio.open_read(path), "rb") as fh:
        fh.seek(start)
        pos = start
        while pos < size:
            line = fh.readline(size - pos)
            if not line:
                break
            if (p := span_patch(pos, line, edit(line))) is not None:
                out.append(p)
            pos += len(line)
    return out


def starts_with(path: str, backup: str, size: int, sha: str | None) -> bool:
    """True when the file's first ``size`` bytes are the backup's (the unit was undone already)."""
    if sha is None:
        return False
    try:
        fd = fsio.open_read(path)
    except OSError:
        return False
    with os.fdopen(fd, "rb") as fh:
        if os.fstat(fh.fileno()).st_size < size:
            return False
        h = hashlib.sha256()
        return _hash_to(fh, size, h) == size and h.hexdigest() == sha
