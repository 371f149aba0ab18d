"""histmig/core/treepath.py: the branch from the last entry to the root, the same whether the id pairs
stay in memory or go to disk (``SPILL`` 1 here)."""
from __future__ import annotations

import random

import pytest

from histmig.core import treepath


def _pairs(n: int, seed: int) -> list[tuple[str, str | None]]:
    rnd = random.Random(seed)
    pairs: list[tuple[str, str | None]] = []
    for i in range(n):
        roll = rnd.random()
        parent = (None if i == 0 else f"{rnd.randrange(max(0, i - 3), i):x}" if roll < 0.8
                  else f"gone{i}" if roll < 0.9 else f"{i:x}")          # a parent never seen; a self-loop
        pairs.append((f"{i:x}", parent))
    return pairs + [("3", "5")]                                           # a later pair for an id wins


@pytest.mark.parametrize("n,seed", [(1, 0), (10, 1), (1000, 2), (5000, 3)])
def test_the_spilled_branch_is_the_in_memory_one(monkeypatch, n, seed):
    pairs = _pairs(n, seed)
    kept = treepath.branch_ids(pairs)
    assert isinstance(kept, set)
    monkeypatch.setattr(treepath, "SPILL", 1)
    spilled = treepath.branch_ids(pairs)
    assert isinstance(spilled, treepath.SpilledIds)
    assert spilled == kept and len(spilled) == len(kept)
    assert all((k in spilled) == (k in kept) for k, _ in pairs)
    assert None not in spilled and 3 not in spilled
    spilled.close()


def test_a_cycle_ends_the_walk(monkeypatch):
    pairs = [("a", None), ("b", "c"), ("c", "b")]
    monkeypatch.setattr(treepath, "SPILL", 1)
    assert set(treepath.branch_ids(pairs)) == {"b", "c"}
