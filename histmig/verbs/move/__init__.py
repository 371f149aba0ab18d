"""``histmig move OLD NEW``: re-point every tool's history from a project folder to its new place.

A pure planner: it reads the homes and returns a :class:`Plan`; nothing is written here. Operation
order matters and is fixed: first every file edit (at the files' *old* paths), then database and
config updates, then folder and file renames, then the removal of folders a merge emptied. A
conflict anywhere (a session id in both the old and the target folder, two projects sharing a
folder name, differing config entries without ``force``)
raises ``RefusedError`` before any operation is returned.
"""
from __future__ import annotations

import os
from typing import Iterable

from histmig.core import locks
from histmig.core import tail_rules
from histmig.verbs.move import paths as move_paths
from histmig.tools.claude_code.move import plan_claude
from histmig.tools.codex.move import plan_codex
from histmig.tools import canonical
from histmig.toolkit.move.common import ToolPlan, make_pathmap
from histmig.tools.manifest.move import plan_manifest
from histmig.tools.mini_cc.move import plan_minicc
from histmig.core.plan import Plan

TOOLS = ("codex", "claude-code", "mini-cc", "manifest")


def plan_move(homes, old: str, new: str, *, tools: Iterable[str] | None = None, force: bool = False,
              rewrite_content: bool = False, split_shared: bool = False) -> Plan:
    selected = {canonical(t) for t in tools} if tools else set(TOOLS)
    res = move_paths.resolve(old, new)
    pm, warnings = make_pathmap(old, res.new)
    warnings = res.warnings + warnings
    plans = {t: ToolPlan(t) for t in TOOLS}
    opts = {"tools": selected, "force": force, "rewrite_content": rewrite_content, "split_shared": split_shared,
            "rerun": rerun_command(old, new, tools, force=force, rewrite_content=rewrite_content)}
    if selected & {"claude-code", "manifest"}:
        plan_claude(homes, pm, plans, opts, locks.claude_live_registry(homes.claude))
    if "manifest" in selected:
        plan_manifest(homes, pm, plans, opts)
    if "codex" in selected:
        plan_codex(homes, pm, plans, opts)
    if "mini-cc" in selected:
        plan_minicc(homes, pm, plans, opts)
    plan = _assemble(homes, old, new, pm, plans, selected, warnings, force, rewrite_content)
    if split_shared:
        plan.args["split_shared"] = True
    return plan


def rerun_command(old: str, new: str, tools: Iterable[str] | None, *, force: bool, rewrite_content: bool) -> str:
    """The command that finishes what a skip left (named in the skip's reason)."""
    import shlex
    words = ["histmig", "move", os.path.abspath(os.path.expanduser(old)), os.path.abspath(os.path.expanduser(new))]
    words += [f"--tool={t}" for t in sorted(set(tools or ()))]
    words += ["--force"] * force + ["--rewrite-content"] * rewrite_content + ["--apply"]
    return shlex.join(words)


def _assemble(homes, old, new, pm, plans: dict[str, ToolPlan], selected, warnings, force, rewrite_content) -> Plan:
    ordered = [plans[t] for t in TOOLS]
    ops = [op for p in ordered for op in p.writes]
    ops += [op for p in ordered for op in p.other]
    ops += [op for p in ordered for op in p.renames]
    ops += [op for p in ordered for op in p.cleanup]
    summary = {"old": list(pm.olds), "new": pm.new,
               "tools": {p.tool: {**p.counts, "skipped": len(p.skips)} for p in ordered if p.tool in selected}}
    plan = Plan(op="move", args={"old": old, "new": new, "tools": sorted(selected), "force": force,
                                 "rewrite_content": rewrite_content},
                roots=_roots(homes, ops), operations=ops, summary=summary)
    plan.warnings = warnings + [w for p in ordered for w in p.warnings]
    plan.skips = [s for p in ordered for s in p.skips]
    return plan


def _roots(homes, ops) -> list[str]:
    """The homes, plus ~/.claude.json and the folders of databases the plan updates."""
    roots = [os.path.abspath(r) for r in (homes.codex, homes.claude, homes.mini_cc)]
    for op in ops:
        for p in op.paths():
            if not any(p == r or p.startswith(r.rstrip("/") + "/") for r in roots):
                roots.append(p if os.path.abspath(p) == os.path.abspath(homes.claude_json)
                             else os.path.dirname(p))
    return roots


def tail_transform(plan: Plan):
    """The move's per-line edit for bytes appended to a file after it was planned (apply's
    ``tail_transform``): the same fields the planner rewrites, chosen by the file's tool, with the
    same verified surgical edits. A line that does not parse or verify is kept as it is."""
    import io

    import orjson

    from histmig.jsonio import jsonl
    from histmig.jsonio.jsonedit import EditError
    from histmig.tools.claude_code.move import claude_fields, history_fields
    from histmig.tools.codex.move import codex_fields
    from histmig.toolkit.move.common import PathMap, content_edits, line_patches
    from histmig.tools.mini_cc.move import minicc_fields
    pm = PathMap(tuple(plan.summary["old"]), plan.summary["new"])
    content = bool(plan.args.get("rewrite_content"))
    by_tool = {"codex": codex_fields, "claude-code": claude_fields, "mini-cc": minicc_fields,
               "manifest": lambda obj, pm: []}

    def transform(op, data: bytes) -> bytes:
        tool = (getattr(op, "session", None) or {}).get("tool")
        path = op.paths()[0]
        fields = by_tool.get(tool) or (history_fields if path.endswith("history.jsonl") else None)
        if fields is None:
            return data
        out, pos = bytearray(), 0
        for line in jsonl.iter_lines(io.BytesIO(data)):
            if line.raw is None or not any(n in line.raw for n in pm.needles):
                continue
            try:
                obj = orjson.loads(line.body)
                edits = fields(obj, pm)
                edits = edits + (content_edits(obj, pm, {e[0] for e in edits}) if content else [])
                patches = line_patches(line.body, obj, edits, line.offset + line.body_start) if edits else []
            except (orjson.JSONDecodeError, EditError):
                continue
            for p in patches:
                out += data[pos:p.offset] + p.new
                pos = p.offset + len(p.old)
        return bytes(out + data[pos:]) if pos else data
    return transform


tail_rules.register("move", lambda plan: tail_transform(plan) if "old" in plan.summary and "new" in plan.summary else None)
