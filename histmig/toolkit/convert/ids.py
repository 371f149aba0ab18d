"""Fresh identifiers and timestamps for converted sessions.

A converted session never reuses its source's id (docs/specs/pitfalls.md #18). ``Ids`` draws from the OS random
source, or from a seeded generator so golden tests are reproducible.
"""
from __future__ import annotations

import random
import re
import secrets
import time
import uuid
from datetime import datetime, timezone

from histmig.core.times import iso_z, parse_ts

UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
_ALNUM = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


class Ids:
    def __init__(self, seed: int | None = None, now: float | None = None):
        self._rng = random.Random(seed) if seed is not None else None
        self.now = now          # fixed "now" (seconds) for reproducible output

    def bits(self, n: int) -> int:
        return self._rng.getrandbits(n) if self._rng else secrets.randbits(n)

    def uuid4(self) -> str:
        return str(uuid.UUID(int=self.bits(128), version=4))

    def uuid7(self, ms: int | None = None) -> str:
        """RFC 9562 UUIDv7: 48-bit Unix milliseconds, version 7, variant 10, random rest."""
        ms = int((self.now if self.now is not None else time.time()) * 1000) if ms is None else ms
        value = (ms & ((1 << 48) - 1)) << 80 | 0x7 << 76 | self.bits(12) << 64 | 0b10 << 62 | self.bits(62)
        return str(uuid.UUID(int=value))

    def msg_id(self) -> str:
        return "msg_01" + "".join(_ALNUM[self.bits(6) % 62] for _ in range(22))

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
