"""Short, unambiguous id prefixes for listings (its own module: a dry run prints them without
loading the session catalog)."""
from __future__ import annotations


def unique_prefixes(ids: list[str], minimum: int = 8) -> dict[str, str]:
    """The shortest prefix (at least ``minimum`` characters) that tells each id apart, as git does.
    UUIDv7 ids made in the same second share their first 9 characters."""
    ordered = sorted(set(ids))
    # characters each id shares with the next one (only counted past ``minimum``: most ids differ sooner)
    shared = [_common(a, b, minimum) for a, b in zip(ordered, ordered[1:])]
    out = {}
    for i, ident in enumerate(ordered):
        need = max(minimum, shared[i - 1] + 1 if i else 0, shared[i] + 1 if i < len(shared) else 0)
        out[ident] = ident[:need]
    return out


def _common(a: str, b: str, minimum: int) -> int:
    """The length of the prefix ``a`` and ``b`` share, or 0 when it is under ``minimum``."""
    if a[:minimum] != b[:minimum]:
        return 0
    lo, hi = minimum, min(len(a), len(b))      # a[:lo] == b[:lo]; find the largest such lo (slices compare in C)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo
