"""Finding the needle in a block of raw bytes fast (docs/search.md, "How it is fast").

``bytes.find`` moves at well under a byte per nanosecond on JSON text, far behind grep. Two things
are fast in Python: ``bytes.find`` of ONE byte (``memchr``), and ``re``'s scan for the first character
of a literal. So the finder picks the needle byte that is rarest in the data (counted once, in the
first block it sees), looks for it with ``memchr`` (both cases of a letter when case-insensitive) and
compares the needle around each place. Files differ (one is full of digits, the next of spaces), so
each block is glanced at first (a count in its middle): when the chosen byte is common there, the
needle's bytes are counted there and the rarest chosen again. When that byte is common too, or turns
out common in the block, the block (or its rest) is scanned with ``re`` for the needle's tail from
its rarest byte that leaves ``TAIL_MIN`` bytes, the head checked before it (case-insensitive: in a
lower-cased copy of the block).
"""
from __future__ import annotations

import re

# places checked per 4 KiB of a block before the rest of it is scanned by ``re``: past about one a page,
# a Python step per place costs more than ``re``'s scan (and a lower-cased copy)
PER_PAGE = 1
TAIL_MIN = 4             # bytes of the needle's tail ``re`` looks for (at least)
# bytes in a block's middle, glanced at for the chosen byte (a count: memchr speed); in a run of blocks where
# every byte of the needle is common, the needle's bytes are counted again only every ``REGLANCE`` blocks
GLANCE_BYTES = 8 << 10
REGLANCE = 8
# a glance says "common" past twice the budget's rate; but a glance is one spot of a file and places cluster
# (a run of numbers): at twice the rate a quarter of the Codex bench's files went to ``re`` (0.4 us a KiB)
# for a byte that was rare in them as a whole. Between 2x and ``GLANCE_OVER`` x (grey) the block is searched
# with ``memchr`` while grey blocks keep their budget; once one spends it, grey blocks go to ``re``, and every
# ``REGLANCE``-th is tried again (docs/search.md, "How it is fast")
GLANCE_OVER = 8


class Finder:
    def __init__(self, needle: bytes, fold: bool):
        self.needle, self.fold = needle, fold
        self.tuned = False
        self.tail, self.tail_at = re.compile(re.escape(needle)).search, 0
        self.budget, self.low, self.streak = 0, None, 0
        self.grey, self.grey_spent, self.grey_skips = False, False, 0
        self._choose(len(needle) - 1)

    def _choose(self, k: int) -> None:
        c = self.needle[k]
        self.at = k
        self.head = self.needle[:k]
        self.variants = [bytes([v]) for v in sorted({c, ord(chr(c).upper())})] if self.fold and 97 <= c <= 122 \
            else [bytes([c])]

    def tune(self, sample: bytes) -> None:
        """Choose the needle byte rarest in ``sample`` (both cases of a letter counted when folding)."""
        best = tail = None
        counted: dict[int, int] = {}     # a byte the needle repeats is counted once (a count walks the sample)
        for k, c in enumerate(self.needle):
            n = counted.get(c)
            if n is None:
                cases = {c, ord(chr(c).upper())} if self.fold and 97 <= c <= 122 else {c}
                n = counted[c] = sum(sample.count(bytes([v])) for v in cases)
            if best is None or n < best[0]:
                best = (n, k)
            if len(self.needle) - k >= min(TAIL_MIN, len(self.needle)) and (tail is None or n < tail[0]):
                tail = (n, k)
        self._choose(best[1])
        if tail[1] != self.tail_at:
            self.tail_at = tail[1]
            self.tail = re.compile(re.escape(self.needle[tail[1]:])).search
        self.tuned = True

    def start_block(self, data: bytes) -> None:
        if not self.tuned:
            self.tune(data[:1 << 20])
        if self.grey:                        # the last block was grey: did its budget last?
            self.grey_spent = self.budget <= 0
        self.budget, self.low = self._budget(data), None
        level = self._glance(data)
        if level:                            # a glance at the block's middle: choose again, or use re at once
            if self.streak % REGLANCE == 0:
                at = len(data) // 2
                self.tune(data[at:at + GLANCE_BYTES])
                level = self._glance(data)
            if level == 2 or (level == 1 and self.grey_spent and self.grey_skips % REGLANCE):
                self.budget = 0
            self.grey_skips += level == 1
        self.grey = level == 1 and self.budget > 0
        self.streak = self.streak + 1 if self.budget == 0 else 0

    def _glance(self, data: bytes) -> int:
        """How common the chosen byte is in ``GLANCE_BYTES`` of the middle of ``data`` (a file's start
        is its own kind of text): 0 as the budget allows, 1 past twice its rate, 2 past ``GLANCE_OVER``
        times. Its places are found with ``memchr`` and counted only up to that (``bytes.count`` of one
        byte walks a byte at a time)."""
        at = len(data) // 2
        stop = at + GLANCE_BYTES
        share = max(1, len(data) // GLANCE_BYTES)
        grey, limit = 2 * self.budget // share, GLANCE_OVER * self.budget // share    # n * share > x: n > x // share
        n = 0
        for v in self.variants:
            i = data.find(v, at, stop)
            while i >= 0:
                n += 1
                if n > limit:
                    return 2
                i = data.find(v, i + 1, stop)
        return 1 if n > grey else 0

    @staticmethod
    def _budget(data: bytes) -> int:
        return max(8, (len(data) >> 12) * PER_PAGE)

    def first(self, data: bytes, start: int, end: int) -> int:
        """The first place at or after ``start`` where the needle ends at or before ``end``, or -1."""
        if self.budget <= 0:
            return self._rest(data, start, end)
        if len(self.variants) == 1 and not self.fold:
            return self._first_exact(data, start, end)
        k, m, best = self.at, len(self.needle), -1
        for v in self.variants:
            limit = end if best < 0 else best + k
            i = data.find(v, start + k, limit)
            while i >= 0:
                s = i - k
                if s + m <= end and self._equal(data, s, m):
                    best = s
                    break
                self.budget -= 1
                if self.budget <= 0:
                    return self._rest(data, start, end)
                i = data.find(v, i + 1, limit)
        return best

    def _first_exact(self, data: bytes, start: int, end: int) -> int:
        # ``first`` for one byte to look for, compared as is: the loop runs once per place of that
        # byte (a hundred thousand on 800 MB of JSON), so no call or attribute look-up is left in it
        k, needle, budget = self.at, self.needle, self.budget
        last = end - len(needle)                   # the needle must end at or before ``end``
        find, equal, v = data.find, data.startswith, self.variants[0]
        i = find(v, start + k, end)
        while i >= 0:
            if i - k <= last and equal(needle, i - k):
                self.budget = budget
                return i - k
            budget -= 1
            if budget <= 0:
                self.budget = 0
                return self._rest(data, start, end)
            i = find(v, i + 1, end)
        self.budget = budget
        return -1

    def _equal(self, data: bytes, s: int, m: int) -> bool:
        return data[s:s + m].lower() == self.needle if self.fold else data.startswith(self.needle, s)

    def _rest(self, data: bytes, start: int, end: int) -> int:
        """The rest of a block where the rare byte is common: one ``re`` scan (of a lower-cased copy)."""
        if not self.fold:
            return self._scan(data, start, end)
        if self.low is None or self.low[0] is not data or len(self.low[1]) < end:
            # (keyed by its block: a search may pause in one file and read another meanwhile)
            self.low = (data, data[:end].lower())
        return self._scan(self.low[1], start, end)

    def _scan(self, hay: bytes, start: int, end: int) -> int:
        # re's scan for a literal runs in C, from the places of its first byte: the needle's tail from
        # a rare byte, at least TAIL_MIN long (a short tail stops at every place of its few bytes)
        k, head = self.tail_at, self.needle[:self.tail_at]
        m = self.tail(hay, start + k, end)
        while m is not None:
            s = m.start() - k
            if hay.startswith(head, s):
                return s
            m = self.tail(hay, m.start() + 1, end)
        return -1
