"""The byte edits that turn a file as a transaction left it back into its backup, found by
streaming both line by line (docs/safety.md "Undo").

Every histmig rewrite edits values inside lines and never adds or removes a line, so the i-th
line of the backup pairs with the i-th line of the file; each differing pair becomes one patch
that covers only the bytes between their common prefix and suffix (the value span the
transaction changed). Lines the file has beyond the backup's count were appended after the
apply; the caller treats them as the tail. Equal stretches are compared a MiB at a time; after a
difference, both files are read a block at a time and the whole lines both blocks hold are paired
at once (a move changes every line of a transcript: one ``pread`` and one line read per line cost
an undo of 400,000 lines 10 s). Memory: one block of each file at a time, and the patches.
"""
from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from typing import Callable

from histmig.apply import fsio
from histmig.apply.ranges import read_range, sha_range
from histmig.core.plan import Patch, PatchList, compact


class DiffError(Exception):
    """The file is not the transaction's result plus appended lines (the reason is the message)."""


class LinesDiffer(Exception):
    """The transaction added or removed lines (a repair that inserts a record): no line pairing."""


@dataclass
class Diff:
    patches: PatchList = field(default_factory=PatchList)
    tail_start: int = 0           # where bytes appended after the apply begin
    size: int = 0                 # the file's size now
    sha256: str = ""              # of the whole file now
    old_sha256: str = ""          # of the backup's first ``pre_size`` bytes (read while pairing)
    st: os.stat_result | None = None   # the file's stat taken before it was read, unchanged after


def span_patch(offset: int, cur: bytes, want: bytes) -> Patch | None:
    """One patch turning ``cur`` (at ``offset``) into ``want``, trimmed to the differing span."""
    if cur == want:
        return None
    n = min(len(cur), len(want))
    head = common_prefix(cur, want, n)
    tail = common_suffix(cur, want, n - head)
    return Patch(offset + head, compact(cur[head:len(cur) - tail]), compact(want[head:len(want) - tail]))


# Below this many bytes a stretch is compared as two big integers: their XOR's highest bit is the
# first (big-endian) or last (little-endian) byte that differs, one C pass for a whole line, where a
# byte loop in Python cost 15 s of a 20 s undo of 430 files.
_XOR_BYTES = 256


def common_prefix(a: bytes, b: bytes, n: int) -> int:
    """The length of the longest common prefix of ``a`` and ``b``, at most ``n``. Longer stretches
    are halved by comparing only the half not yet known equal, so the bytes copied add up to ``n``."""
    lo, hi = 0, n
    while hi - lo > _XOR_BYTES:
        mid = (lo + hi) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid
    d = int.from_bytes(a[lo:hi], "big") ^ int.from_bytes(b[lo:hi], "big")
    return hi - 1 - (d.bit_length() - 1) // 8 if d else hi


def common_suffix(a: bytes, b: bytes, n: int) -> int:
    """The length of the longest common suffix of ``a`` and ``b``, at most ``n``."""
    la, lb, lo, hi = len(a), len(b), 0, n
    while hi - lo > _XOR_BYTES:
        mid = (lo + hi) // 2
        if a[la - mid:la - lo] == b[lb - mid:lb - lo]:
            lo = mid
        else:
            hi = mid
    d = int.from_bytes(a[la - hi:la - lo], "little") ^ int.from_bytes(b[lb - hi:lb - lo], "little")
    return hi - 1 - (d.bit_length() - 1) // 8 if d else hi


def diff_against_backup(path: str, backup: str, post_size: int, post_sha: str | None,
                        pre_size: int, *, salvaged: bool = False, backup_trusted: bool = False,
                        known: tuple[tuple, str] | None = None) -> Diff:
    """Patches (in the file's coordinates) that restore the backup's lines over the first
    ``post_size`` bytes, which must hash to ``post_sha`` (what the apply wrote). Lines of that
    region beyond the backup's count are a client's, salvaged during the apply (``salvaged``);
    otherwise the line counts must agree (:class:`LinesDiffer`).

    Equal stretches are compared a MiB at a time (one memcmp); only a line that differs is read
    as a line, so a flip that changed two lines of a 20 MB rollout costs two reads, not 20,000
    ``readline`` calls.

    ``backup_trusted``: the backup is known unchanged since the apply hashed it (its inode's stat
    as the apply journaled it, :func:`histmig.verbs.undo.files.backup_unchanged`): it is compared,
    not hashed (``old_sha256`` stays empty). The file's stat is taken before it is read and must be
    the same after (``Diff.st``): the hash then belongs to that stat, and the apply of the inverse
    plan may take it as the file's (``ApplyOptions.trust_plan_hash``).

    ``known``: ((ino, size, mtime_ns, ctime_ns), sha256) of the file when it is provably what the
    apply wrote (:func:`histmig.verbs.undo.files.as_left`): while its stat is still that one, it is
    compared, not hashed, and ``sha256`` is taken as its hash."""
    with os.fdopen(fsio.open_read(path), "rb") as cur, open(backup, "rb") as old:
        cfd, ofd = cur.fileno(), old.fileno()
        st = os.fstat(cfd)
        size = st.st_size
        if size < post_size:
            raise DiffError(f"shorter than the transaction left it ({size} < {post_size} bytes)")
        proven = known is not None and known[0] == stamp(st) and size == post_size
        applied, out = _Skip() if proven else hashlib.sha256(), Diff(size=size, st=st)
        old_h = _Skip() if backup_trusted else hashlib.sha256()
        pos, opos = _pair_lines(cfd, ofd, post_size, pre_size, applied, out.patches, old_h)
        if opos < pre_size or (pos < post_size and not salvaged):
            raise LinesDiffer()
        out.old_sha256 = old_h.hexdigest()      # opos == pre_size: every backup byte was fed, in order
        out.tail_start = pos
        if proven:                            # the apply's bytes, nothing after them (pos == post_size)
            out.sha256 = known[1]
        else:
            out.sha256 = _hash_rest(cfd, applied, pos, post_size, size, post_sha)
        if stamp(os.fstat(cfd)) != stamp(st):
            raise DiffError("changed while being read")
        return out


def _hash_rest(cfd: int, applied, pos: int, post_size: int, size: int, post_sha: str | None) -> str:
    """The file's sha256: ``applied`` (its bytes up to ``pos``) fed the rest of what the apply
    wrote, checked against ``post_sha``, then the bytes appended since."""
    try:
        _feed(applied, read_range(cfd, pos, post_size))
        if post_sha is not None and applied.hexdigest() != post_sha:
            raise DiffError("changed since the transaction (not only appended to)")
        whole = applied.copy()            # the file now: what the apply wrote, then what came since
        _feed(whole, read_range(cfd, post_size, size))
    except OSError as e:                  # it shrank while read: not what the apply left
        raise DiffError(f"changed while being read ({e.strerror})") from None
    return whole.hexdigest()


def stamp(st: os.stat_result) -> tuple[int, int, int, int]:
    """(ino, size, mtime, ctime): what changes when a file is replaced or written (files.as_left too)."""
    return st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


class _Skip:
    """A hasher that hashes nothing (a trusted backup is compared, not hashed)."""

    def update(self, _data) -> None:
        pass

    def hexdigest(self) -> str:
        return ""


def _feed(h, chunks) -> None:
    for chunk in chunks:
        h.update(chunk)


def _pair_lines(cfd: int, ofd: int, post_size: int, pre_size: int, applied, patches: PatchList,
                old_h=None) -> tuple[int, int]:
    """Walk both files in step until either ends; returns the two positions reached. ``applied``
    gets the file's bytes up to the first position, ``old_h`` the backup's up to the second (so the
    backup is checked against its journaled hash without a read of its own)."""
    old_h = old_h if old_h is not None else hashlib.sha256()
    pos = opos = 0
    step = SMALL
    while pos < post_size and opos < pre_size:
        n = min(step, post_size - pos, pre_size - opos)
        a, b = os.pread(cfd, n, pos), os.pread(ofd, n, opos)
        if a == b and len(a) == n:
            applied.update(a)
            old_h.update(a)
            pos, opos = pos + n, opos + n
            step = min(step * 4, CHUNK)     # long equal stretches: bigger reads
            continue
        step = SMALL                        # edits cluster (a move edits every line): block-sized reads
        start = a.rfind(b"\n", 0, common_prefix(a, b, min(len(a), len(b)))) + 1   # the differing line's start
        used, oused = _pair_block(a, b, start, pos, patches)
        if used > start:                    # whole lines of both blocks paired
            applied.update(memoryview(a)[:used])
            old_h.update(memoryview(b)[:oused])
            pos, opos = pos + used, opos + oused
            continue
        applied.update(memoryview(a)[:start])       # a line longer than the block: read it whole
        old_h.update(memoryview(a)[:start])
        pos, opos = pos + start, opos + start
        line, want = _line_at(cfd, pos, post_size), _line_at(ofd, opos, pre_size)
        if not line or not want:          # a file shrank under us: the counts decide (LinesDiffer)
            break
        applied.update(line)
        old_h.update(want)
        if (p := span_patch(pos, line, want)) is not None:
            patches.append(p)
        pos, opos = pos + len(line), opos + len(want)
    return pos, opos


def _pair_block(a: bytes, b: bytes, start: int, base: int, patches: PatchList) -> tuple[int, int]:
    """Pair the whole lines both blocks hold from ``start`` (the i-th with the i-th), one patch per
    differing pair at its offset in the file (``base`` is the block's); returns how far each block
    was consumed (``start`` and ``start``: not one whole line in both)."""
    end_a, end_b = a.rfind(b"\n") + 1, b.rfind(b"\n") + 1
    if end_a <= start or end_b <= start:
        return start, start
    xs, ys = a[start:end_a].split(b"\n"), b[start:end_b].split(b"\n")
    del xs[-1], ys[-1]                      # the empty rest after each block's last newline
    at, oat = start, start
    for x, y in zip(xs, ys):
        if x != y:
            patches.append(span_patch(base + at, x, y))
        at, oat = at + len(x) + 1, oat + len(y) + 1
    return at, oat


CHUNK = 1 << 20
SMALL = 1 << 16


def _line_at(fd: int, pos: int, limit: int) -> bytes:
    """The line starting at ``pos`` (with its newline), never past ``limit``."""
    buf = bytearray()
    while pos + len(buf) < limit:
        chunk = os.pread(fd, min(1 << 16, limit - pos - len(buf)), pos + len(buf))
        if not chunk:
            break
        nl = chunk.find(b"\n")
        if nl >= 0:
            buf += chunk[:nl + 1]
            break
        buf += chunk
    return bytes(buf)


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
    try:
        return os.fstat(fd).st_size >= size and sha_range(fd, 0, size) == sha
    except OSError:
        return False              # shrank while read
    finally:
        os.close(fd)
