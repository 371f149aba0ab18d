"""Token usage a session's header shows: the summed usage fields of its assistant records and how many
carried usage (the number of requests). Each tool names its own fields."""
from __future__ import annotations

from typing import Iterable

from histmig.core.model import Record


def add_usage(total: dict[str, int], rec: Record, keys: Iterable[str]) -> None:
    """Add one record's usage to ``total`` (``requests`` counts the records that carried any)."""
    if rec.usage:
        total["requests"] += 1
        for key in keys:
            if isinstance(rec.usage.get(key), int):
                total[key] += rec.usage[key]


def usage_totals(records: Iterable[Record], keys: tuple[str, ...]) -> dict[str, int]:
    """Summed ``keys`` of the assistant records' usage, and ``requests``."""
    total = dict.fromkeys(keys, 0) | {"requests": 0}
    for r in records:
        if r.role == "assistant":
            add_usage(total, r, keys)
    return total
