"""Fresh identifiers and timestamps for converted sessions.

A converted session never reuses its source's id (docs/specs/pitfalls.md #18). ``Ids`` draws from the OS random
source, or from a seeded generator so golden tests are reproducible.
"""
from __future__ import annotations

import os
import random
import re
import time
import uuid
from datetime import datetime, timezone

from histmig.core.times import iso_z, parse_ts

UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
_ALNUM = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
# one random byte -> one character of a message id: its low 6 bits mod 62, as the 6-bit draws were
_BYTE_ALNUM = bytes(ord(_ALNUM[(b & 63) % 62]) for b in range(256))


class Ids:
    """Without a seed, every id is cut from one pool of OS randomness (``os.urandom``, refilled 4 KiB
    at a time, and never shared with a forked child): one system call per ~100 ids instead of one
    per 6 bits. A seeded generator draws exactly as before, so seeded output stays reproducible."""

    POOL = 4096

    def __init__(self, seed: int | None = None, now: float | None = None):
        self._rng = random.Random(seed) if seed is not None else None
        self.now = now          # fixed "now" (seconds) for reproducible output
        self._pool, self._at, self._pid = b"", 0, 0

    def bits(self, n: int) -> int:
        if self._rng:
            return self._rng.getrandbits(n)
        k = (n + 7) // 8
        return int.from_bytes(self._bytes(k), "big") >> (8 * k - n)

    def _bytes(self, k: int) -> bytes:
        """``k`` bytes of the pool (unseeded only)."""
        if self._at + k > len(self._pool) or self._pid != os.getpid():
            self._pool, self._at, self._pid = os.urandom(max(self.POOL, k)), 0, os.getpid()
        self._at += k
        return self._pool[self._at - k:self._at]

    def uuid4(self) -> str:
        """``str(uuid.UUID(int=bits, version=4))``, formatted directly (one per converted record);
        unseeded, from 16 pool bytes with the version and variant bits set on the bytes."""
        if self._rng:
            n = (self.bits(128) & ~(0xF000 << 64) & ~(0xC000 << 48)) | 4 << 76 | 0x8000 << 48
            h = f"{n:032x}"
        else:
            b = bytearray(self._bytes(16))
            b[6] = b[6] & 0x0F | 0x40
            b[8] = b[8] & 0x3F | 0x80
            h = b.hex()
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"

    def uuid7(self, ms: int | None = None) -> str:
        """RFC 9562 UUIDv7: 48-bit Unix milliseconds, version 7, variant 10, random rest."""
        ms = int((self.now if self.now is not None else time.time()) * 1000) if ms is None else ms
        if self._rng:
            a, b = self.bits(12), self.bits(62)
        else:
            r = self.bits(74)
            a, b = r >> 62, r & ((1 << 62) - 1)
        value = (ms & ((1 << 48) - 1)) << 80 | 0x7 << 76 | a << 64 | 0b10 << 62 | b
        return str(uuid.UUID(int=value))

    def msg_id(self) -> str:
        if self._rng:
            return "msg_01" + "".join(_ALNUM[self.bits(6) % 62] for _ in range(22))
        return "msg_01" + self._bytes(22).translate(_BYTE_ALNUM).decode()    # 22 draws of 6 bits, from one

    def time(self) -> float:
        return self.now if self.now is not None else time.time()


def iso_offset(dt: datetime) -> str:
    """``2026-10-22T09:55:53.674+00:00`` (mini-cc form)."""
    return iso_z(dt)[:-1] + "+00:00"


class Clock:
    """Timestamps for the records of one converted session: the source's own times, made
    parseable and non-decreasing (Claude picks its leaf by the newest timestamp)."""

    def __init__(self, start: str | None, fallback: float):
        self.last = parse_ts(start) or datetime.fromtimestamp(fallback, timezone.utc)

    def at(self, value: str | None) -> datetime:
        dt = parse_ts(value)
        if dt is not None and dt >= self.last:
            self.last = dt
        return self.last
