"""mini-cc's part of a project move (docs/specs/mini-cc.md §12): rename ``projects/<slug>/`` (located by the
``cwd`` its records carry, named with the Claude rule) and rewrite ``cwd`` in every record. mini-cc
has no merge story, so an existing target folder refuses the plan."""
from __future__ import annotations

from typing import Any

from histmig.toolkit.move.common import FieldEdit, PathMap, ToolPlan, field_at
from histmig.tools.claude_family.folders import plan_folders

TOOL = "mini-cc"


def minicc_fields(obj: Any, pm: PathMap) -> list[FieldEdit]:
    return field_at(obj, ("cwd",), pm) if isinstance(obj, dict) else []


def plan_minicc(homes, pm: PathMap, plans: dict[str, ToolPlan], opts: dict[str, Any]) -> None:
    plan_folders(homes.mini_cc / "projects", pm, plans, tool=TOOL, selected=opts["tools"], merge=False,
                 fields_fn=minicc_fields, manifest=False, known_paths=list(pm.olds), live_ids={},
                 rewrite_content=opts["rewrite_content"], by_name=False, split_shared=opts["split_shared"],
                 rerun=opts["rerun"])


plan = plan_minicc             # the table's move hook (histmig/tools/__init__.py)
line_fields = minicc_fields
