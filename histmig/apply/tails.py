"""Which per-line transform applies to bytes appended to a file after its plan was made.

A plan file carries data, not code, so apply looks the transform up by the plan's command
(``plan.op``) and arguments: ``histmig apply plan.json`` then treats an appended line exactly like
``flip --apply`` / ``move --apply`` would (docs/specs/safety.md rows 23 and 29). Unknown commands keep
appended bytes verbatim.
"""
from __future__ import annotations

from typing import Callable

from histmig.plan import Op, Plan


def for_plan(plan: Plan) -> Callable[[Op, bytes], bytes] | None:
    try:
        if plan.op == "flip":
            from histmig.ops.flip import tail_transform
            return tail_transform(plan.args)
        if plan.op == "move" and "old" in plan.summary and "new" in plan.summary:
            from histmig.ops.move import tail_transform
            return tail_transform(plan)
    except (KeyError, TypeError, ValueError):
        return None     # a hand-made plan without the planner's arguments: keep appends verbatim
    return None
