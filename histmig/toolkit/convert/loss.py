"""The loss report: what a conversion dropped, approximated or left out, per kind, with counts.

Categories (stable; documented in docs/convert.md):

- ``dropped``       content of the conversation that the target cannot hold (reasoning, attachments,
                    unparseable lines, orphan tool results, ...). Lossy: ``--strict`` refuses.
- ``approximated``  carried, but changed in a way a reader could notice (an apply_patch split into
                    several Edits, usage re-expressed, reasoning summary as plain text). Lossy.
- ``left-out``      context the source client injected and the target client injects itself
                    (environment context, AGENTS.md, developer/system messages). Not lossy.
- ``not-carried``   the source format's bookkeeping (events, titles, snapshots). Not lossy.
- ``mapped``        renamed into the target's own schema with the same meaning (Bash, Edit, ...).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import field
from typing import Any

from histmig.core.valueclass import FACTORY, value

LOSSY = ("dropped", "approximated")
ORDER = ("dropped", "approximated", "left-out", "not-carried", "mapped")


@value
class LossReport:
    counts: Counter = field(default_factory=Counter)   # (category, kind) -> count

    def __init__(self, counts: Counter = FACTORY) -> None:
        self.counts = Counter() if counts is FACTORY else counts

    def add(self, category: str, kind: str, n: int = 1) -> None:
        if n:
            self.counts[(category, kind)] += n

    def merge(self, other: "LossReport") -> None:
        self.counts.update(other.counts)

    @property
    def lossy(self) -> bool:
        return any(cat in LOSSY for cat, _ in self.counts)

    def lossy_items(self) -> list[tuple[str, str, int]]:
        return [(c, k, n) for (c, k), n in self.sorted() if c in LOSSY]

    def sorted(self) -> list[tuple[tuple[str, str], int]]:
        rank = {c: i for i, c in enumerate(ORDER)}
        return sorted(self.counts.items(), key=lambda kv: (rank.get(kv[0][0], 99), kv[0][1]))

    def to_dict(self) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        for (cat, kind), n in self.sorted():
            out.setdefault(cat, {})[kind] = n
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "LossReport":
        rep = cls()
        for cat, kinds in (d or {}).items():
            for kind, n in kinds.items():
                rep.add(cat, kind, int(n))
        return rep

    def lines(self, *, include_mapped: bool = False) -> list[str]:
        """Human lines: ``dropped      12  reasoning (encrypted, provider-bound)``."""
        return [f"  {cat:<13}{n:>6}  {kind}" for (cat, kind), n in self.sorted()
                if include_mapped or cat != "mapped"]
