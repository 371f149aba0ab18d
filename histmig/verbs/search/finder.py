"""Finding the needle in a block of raw bytes fast (docs/search.md, "How it is fast").

``bytes.find`` and ``re`` move at well under a byte per nanosecond on JSON text, far behind grep. What
is fast in Python is ``bytes.find`` of ONE byte (``memchr``). So the finder looks for the needle's byte
that is rarest in the data (counted in the first block it sees), and checks the needle around each
place that byte occurs. When that byte turns out common in a block, it falls back to a plain search
for the rest of the block. Case-insensitive search checks both cases of a letter and compares the
window lower-cased, so a block is never copied lower-cased unless it falls back.
"""
from __future__ import annotations

BUDGET = 512         # places checked per block before the plain search takes over


class Finder:
    def __init__(self, needle: bytes, fold: bool):
        self.needle, self.fold = needle, fold
        self.at, self.variants = len(needle) - 1, [needle[-1:]]
        self.tuned = False
        self.budget, self.low, self.block = BUDGET, None, None

    def tune(self, sample: bytes) -> None:
        """Choose the needle byte rarest in ``sample``."""
        best = None
        for k, c in enumerate(self.needle):
            variants = sorted({c, ord(chr(c).upper())}) if self.fold and 97 <= c <= 122 else [c]
            n = sum(sample.count(bytes([v])) for v in variants)
            if best is None or n < best[0]:
                best = (n, k, variants)
        self.at, self.variants = best[1], [bytes([v]) for v in best[2]]
        self.tuned = True

    def start_block(self, data: bytes) -> None:
        if not self.tuned:
            self.tune(data[:1 << 20])
        self.budget, self.low, self.block = BUDGET, None, data

    def first(self, data: bytes, start: int, end: int) -> int:
        """The first place at or after ``start`` where the needle ends at or before ``end``, or -1."""
        if self.budget <= 0:
            return self._plain(data, start, end)
        k, m, best = self.at, len(self.needle), -1
        for v in self.variants:
            limit = end if best < 0 else best + k
            i = data.find(v, start + k, limit)
            while i >= 0:
                s = i - k
                if s + m <= end and self._equal(data, s):
                    best = s
                    break
                self.budget -= 1
                if self.budget <= 0:
                    return self._plain(data, start, end)
                i = data.find(v, i + 1, limit)
        return best

    def _equal(self, data: bytes, s: int) -> bool:
        if self.fold:
            return data[s:s + len(self.needle)].lower() == self.needle
        return data.startswith(self.needle, s)

    def _plain(self, data: bytes, start: int, end: int) -> int:
        if not self.fold:
            return data.find(self.needle, start, end)
        if self.low is None:
            self.low = data[:end].lower()
        return self.low.find(self.needle, start, end)
