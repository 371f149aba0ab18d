"""What ``histmig undo`` asks each tool's undo hook (``<pkg>/undo.py`` ``UNDO``, found through the tool
table) and what it gets back; names no tool.

Undo computes the inverse of a transaction against the disk as it is now (docs/safety.md "Undo"). Most
of it is the same for every tool (files.py, rows.py of ``histmig/verbs/undo``); what a tool's clients
do behind histmig's back is the tool's part: a client that moved a file since, a client that rewrote a
settings file since, rows a client added or byte offsets it keeps into its files. A tool answers
through an :class:`UndoHook`; every method has a do-nothing default, so a tool without the module (or
with a method left out) simply has no part in that step.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Callable

from histmig.core.plan import Op


Relocate = Callable[[str], "str | None"]     # a journaled path -> where a client moved the file since, or None


@dataclass
class Extra:
    """Operations a tool adds to one session's inverse, under a label (the unit's member name)."""

    label: str
    ops: list[Op] = field(default_factory=list)
    problem: tuple[str, str] | None = None      # (reason, code): keep the session whole instead (its client
                                                # continued it in rows of its own: they are the user's)


class UndoHook:
    """A tool's part of undo. Subclass it in ``<pkg>/undo.py`` and name the instance ``UNDO``."""

    # tables of the tool's databases holding byte offsets into its files: their journaled rows are
    # not put back for a file a client continued since; ``offset_ops`` recomputes them instead
    offset_tables: frozenset[str] = frozenset()

    def relocator(self, homes: Any) -> Relocate | None:
        """Where the tool's own client moved a file since the transaction (asked only for a
        journaled path that is gone); called once per undo, so it may index lazily."""
        return None

    def live_sessions(self, homes: Any) -> set[str]:
        """Ids of sessions a running client has open: a folder holding one is not renamed back
        whole (its entries go one by one, and apply skips the live one with its session)."""
        return set()

    def settings_inverse(self, homes: Any, begin: dict[str, Any], path: str) -> list[Op] | None:
        """For a settings file of this tool that a client rewrote since: the transaction's edit
        (``begin`` is its journal's begin record) made backwards on the file as it is now. None:
        not this tool's file (or the edit cannot be made safely: the file is kept)."""
        return None

    def rows_added(self, homes: Any, session: dict[str, Any], ops: list[Op]) -> Extra | None:
        """Rows the client added itself for ``session`` that would point at nothing once ``ops``
        (the session's inverse) ran: their deletion."""
        return None

    def offset_ops(self, homes: Any, session_id: str, edits: list[tuple[int, int]]) -> list[Op]:
        """The byte-offset rows of ``session_id`` moved with the inverse's file ``edits``
        ([(offset, length delta)]), as they are now (rows added after the apply included)."""
        return []


def move_back(begin: dict[str, Any]) -> Callable[[str], str | None] | None:
    """A move transaction's path rebase backwards (NEW -> OLD); None for any other transaction."""
    summary = begin.get("summary") or {}
    if begin.get("op") != "move" or not summary.get("old") or not summary.get("new"):
        return None
    from histmig.toolkit.move.common import PathMap
    return PathMap((summary["new"],), summary["old"][-1]).rebase


def same_file(a: Any, b: Any) -> bool:
    return os.path.realpath(a) == os.path.realpath(b)


def under(path: str, root: str) -> bool:
    return path.startswith(root.rstrip("/") + "/")
