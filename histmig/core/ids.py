"""Short, unambiguous id prefixes for listings (its own module: a dry run prints them without
loading the session catalog)."""
from __future__ import annotations


def unique_prefixes(ids: list[str], minimum: int = 8) -> dict[str, str]:
    """The shortest prefix (at least ``minimum`` characters) that tells each id apart, as git does.
    UUIDv7 ids made in the same second share their first 9 characters."""
    ordered = sorted(set(ids))
    out = {}
    for i, ident in enumerate(ordered):
        need = minimum
        for other in ordered[max(0, i - 1):i] + ordered[i + 1:i + 2]:
            common = 0
            while common < min(len(ident), len(other)) and ident[common] == other[common]:
                common += 1
            need = max(need, common + 1)
        out[ident] = ident[:need]
    return out
