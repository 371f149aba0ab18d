"""histmig's one write path: apply a :class:`~histmig.core.plan.Plan`, recover from a crash (undo is an
inverse plan made by :mod:`histmig.verbs.undo` and applied here like any other).

    apply_plan(plan, homes, options=None, guards=None) -> ApplyResult   (exit 0 all applied, 3 some skipped)
    recover(homes) -> RecoverResult
    transactions(homes) -> list[TxInfo]
    gc.gc(homes, older_than_s, apply=) -> GcResult   # remove old transactions' backups (histmig/apply/gc.py)
    check_no_unfinished(homes)          # every mutating command calls this before planning

Refusals raise (nothing modified): ``RefusedError`` (invalid plan, target exists),
``StalePlanError`` (a database row outside any session changed since the plan; a changed *file* or
a session's row is a skip instead), ``LockedError`` (another histmig),
``UnfinishedTransactionError`` (run ``histmig recover``). An I/O error in the middle of an apply rolls
every change of the transaction back and raises ``ApplyFailedError`` (exit 1).
"""
from __future__ import annotations

from typing import Any

from histmig.apply.options import ApplyFailedError, ApplyOptions, ApplyResult, RecoverResult
from histmig.apply.journal import TxInfo, check_no_unfinished, transactions

__all__ = ["ApplyOptions", "ApplyResult", "RecoverResult", "TxInfo", "ApplyFailedError", "apply_plan",
           "recover", "transactions", "check_no_unfinished"]


def apply_plan(plan, homes, *, options: ApplyOptions | None = None, guards=None) -> ApplyResult:
    """``guards``: the tools' locks and live-session probes (histmig/apply/guards.py), by default the
    tool table's (``histmig.tools.guards_for(homes)``)."""
    from histmig.apply import engine  # noqa: PLC0415 (lazy: planning commands never load it)
    return engine.apply_plan(plan, homes, options=options, guards=guards)


def recover(homes) -> RecoverResult:
    from histmig.apply import engine  # noqa: PLC0415 (lazy: planning commands never load it)
    return engine.recover(homes)


def __getattr__(name: str) -> Any:
    """Engine internals (``_STEP`` for tests that swap a step, ...) without importing the engine
    at package import time."""
    if name.startswith("__") or name == "engine":
        raise AttributeError(name)
    import importlib
    return getattr(importlib.import_module("histmig.apply.engine"), name)
