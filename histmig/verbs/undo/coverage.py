"""Which parts of a transaction an undo reverted, so that the next undo of it does the rest.

A *part* is one journal operation of the undone transaction (a file's intent: its ``n``), one row
of a database intent or one entry of a moved folder (``(n, i)``): a flip journals every session's
row in one database intent, and a move renames a project folder holding several sessions in one
operation, so the operation alone cannot say which sessions went back when one session was kept.

An undo reverts whole sessions (units). Its plan's ``args.units`` lists, per unit it reverts, the
unit's parts and the indices of the plan operations that revert it. After the undo applied, the
units none of whose operations were skipped are recorded in the undone transaction's journal
(``undo-by``'s ``ns``: ints and ``[n, i]`` pairs). When a crash lost that mark, the undo's own
journal still tells it: a unit was reverted when each of its operations has a ``done`` record
(docs/safety.md "What undo writes").
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Union

from histmig.apply.journal import done_ns
from histmig.core.plan import Op, Plan

Part = Union[int, tuple[int, int]]


@dataclass
class Covered:
    """Parts of a transaction earlier undos reverted."""

    ops: set[int] = field(default_factory=set)              # whole operations
    rows: dict[int, set[int]] = field(default_factory=dict)  # intent n -> row (or folder entry) indices

    def add(self, encoded: Iterable[Any]) -> None:
        """``encoded``: a journal's ``ns`` (ints, and ``[n, i]`` for rows)."""
        for p in encoded:
            if isinstance(p, list):
                self.rows.setdefault(p[0], set()).add(p[1])
            else:
                self.ops.add(p)

    def done_with(self, rec: dict) -> bool:
        """The journal intent ``rec`` needs nothing more: the whole operation, or every row of it
        (every entry of a folder it moved)."""
        if rec["n"] in self.ops:
            return True
        rows = self.rows.get(rec["n"])
        of = rec.get("rows") if rec["method"] == "sql" else rec.get("entries")
        return rows is not None and of is not None and len(rows) >= len(of)

    def rows_of(self, n: int) -> set[int]:
        return self.rows.get(n, set())


def encode(parts: Iterable[Part]) -> list:
    """Whole operations first, then rows, each sorted: JSON for the journal and the plan."""
    parts = set(parts)
    return sorted(p for p in parts if isinstance(p, int)) + \
        [list(p) for p in sorted(p for p in parts if not isinstance(p, int))]


def plan_units(units: Iterable[tuple[set[Part], list[Op]]], operations: list[Op]) -> list[list]:
    """``args.units`` of an undo plan: ``[parts, indices of its operations]`` per unit reverted
    (the operations by identity: a unit's ops are the objects in ``operations``)."""
    at = {id(op): i for i, op in enumerate(operations)}
    return [[encode(parts), sorted({at[id(op)] for op in ops})] for parts, ops in units]


def reverted(plan: Plan, skipped_paths: set[str]) -> list:
    """The parts the applied undo reverted: those of every unit none of whose operations' paths
    was skipped."""
    out: list[Part] = []
    for parts, indices in plan.args.get("units", []):
        paths = {p for i in indices for p in plan.operations[i].paths()}
        if not paths & skipped_paths:
            out += [tuple(p) if isinstance(p, list) else p for p in parts]
    return encode(out)


def reverted_by_journal(args: dict, records: list[dict]) -> list:
    """The parts a committed undo whose ``undo-by`` mark was lost reverted, from its own journal:
    the units each of whose operations is ``done`` (a database intent is done with all its ops)."""
    if "units" not in args:        # an undo by an older histmig: the operations it planned
        return list(args.get("ns", []))
    done = done_ns(records)
    sql_ops = {r["n"]: r.get("ops") or [r["n"]] for r in records
               if r["kind"] == "intent" and r.get("method") == "sql"}
    done |= {i for n, ops in sql_ops.items() if n in done for i in ops}
    return [p for parts, indices in args["units"] if all(i in done for i in indices) for p in parts]
