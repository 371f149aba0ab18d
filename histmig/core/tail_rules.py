"""Which per-line transform applies to bytes appended to a file after its plan was made.

A plan file carries data, not code. Each verb registers, under its plan's ``op``, a function that
builds the transform from the plan's own arguments; apply looks it up here by ``plan.op`` and so
never imports a verb (docs/ARCHITECTURE.md: the write path knows no verb). ``histmig apply
plan.json`` then treats an appended line exactly like ``flip --apply`` / ``move --apply`` would
(docs/specs/safety.md rows 23 and 29). Unknown commands keep appended bytes verbatim.
"""
from __future__ import annotations

from typing import Any, Callable

Transform = Callable[[Any, bytes], bytes]
_RULES: dict[str, Callable[[Any], Transform | None]] = {}


def register(op: str, factory: Callable[[Any], Transform | None]) -> None:
    """``factory(plan)`` builds the transform for a plan whose ``op`` is ``op``."""
    _RULES[op] = factory


def for_plan(plan) -> Transform | None:
    factory = _RULES.get(plan.op)
    if factory is None:
        return None
    try:
        return factory(plan)
    except (KeyError, TypeError, ValueError):
        return None     # a hand-made plan without the planner's arguments: keep appends verbatim
