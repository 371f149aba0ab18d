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

from histmig import tools as registry
from histmig.core import progress, tail_rules
from histmig.verbs.move import paths as move_paths
from histmig.tools import canonical
from histmig.toolkit.move.common import ToolPlan, make_pathmap, shown, where_text
from histmig.toolkit.move.scan import hashing
from histmig.core.diagnostics import Skip
from histmig.core.plan import Plan


def plan_move(homes, old: str, new: str, *, tools: Iterable[str] | None = None, force: bool = False,
              rewrite_content: bool = False, split_shared: bool = False, hash_files: bool = True) -> Plan:
    """``hash_files=False``: the plan is applied by this process and never written out, so session
    files are not hashed whole (``Fingerprint.spans``, docs/safety.md "Plans applied directly")."""
    selected = {canonical(t) for t in tools} if tools else set(registry.names())
    res = move_paths.resolve(old, new)
    pm, warnings = make_pathmap(old, res.new)
    warnings = res.warnings + warnings
    plans = {t: ToolPlan(t) for t in registry.names()}
    opts = {"tools": selected, "force": force, "rewrite_content": rewrite_content, "split_shared": split_shared,
            "rerun": rerun_command(old, new, tools, force=force, rewrite_content=rewrite_content)}
    order = registry.move_order(selected)
    with hashing(hash_files):
        for n, name in enumerate(order, 1):        # each tool's hook fills plans[name] (and may skip)
            progress.note("step", (name, n, len(order)))
            hook = registry.hook(name, "move")
            if hook is not None:
                hook(homes, pm, plans, opts)
    plan = _assemble(homes, old, new, pm, plans, selected, warnings, force, rewrite_content)
    plan.skips += refused_skips(pm)
    if split_shared:
        plan.args["split_shared"] = True
    return plan


def refused_skips(pm) -> list[Skip]:
    """One ``bad-cwd`` skip per file a refused value was read from (``PathMap.refused_at``), naming
    the file, the line (or row) where known and the value (shortened when huge). A value met while no
    file was being read is named by itself."""
    out = []
    for value, why in pm.refused.items():
        places = {f: w for f, w in pm.refused_at.get(value, {}).items() if f is not None} or {None: None}
        for file, where in places.items():
            at = f"{where_text(where)}: " if where is not None else ""
            out.append(Skip(file or value, f"{at}the recorded path {shown(value)} is under OLD but {why}; "
                            "left as it is", "bad-cwd"))
    return out


def rerun_command(old: str, new: str, tools: Iterable[str] | None, *, force: bool, rewrite_content: bool) -> str:
    """The command that finishes what a skip left (named in the skip's reason)."""
    import shlex
    words = ["histmig", "move", os.path.abspath(os.path.expanduser(old)), os.path.abspath(os.path.expanduser(new))]
    words += [f"--tool={t}" for t in sorted(set(tools or ()))]
    words += ["--force"] * force + ["--rewrite-content"] * rewrite_content + ["--apply"]
    return shlex.join(words)


def _assemble(homes, old, new, pm, plans: dict[str, ToolPlan], selected, warnings, force, rewrite_content) -> Plan:
    ordered = [plans[t] for t in registry.names()]
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
    """The homes, plus files a tool keeps outside its home (~/.claude.json) and the folders of databases the plan updates."""
    roots = [os.path.abspath(r) for r in registry.homes_of(homes)]
    own_files = {os.path.abspath(f) for f in registry.files_of(homes)}
    for op in ops:
        for p in op.paths():
            if not any(p == r or p.startswith(r.rstrip("/") + "/") for r in roots):
                roots.append(p if os.path.abspath(p) in own_files else os.path.dirname(p))
    return roots


def tail_transform(plan: Plan):
    """The move's per-line edit for bytes appended to a file after it was planned (apply's
    ``tail_transform``): the same fields the planner rewrites, chosen by the file's tool, with the
    same verified surgical edits. A line that does not parse or verify is kept as it is."""
    import io

    import orjson

    from histmig.jsonio import jsonl
    from histmig.jsonio.lineedit import edit_appended
    from histmig.toolkit.move.common import PathMap, content_edits, line_patches
    pm = PathMap(tuple(plan.summary["old"]), plan.summary["new"])
    content = bool(plan.args.get("rewrite_content"))

    def transform(op, data: bytes) -> bytes:
        tool = (getattr(op, "session", None) or {}).get("tool")
        fields = _line_fields(tool, op.paths()[0])
        if fields is None:
            return data

        def patches_of(body: bytes, base: int) -> list:
            obj = orjson.loads(body)
            edits = fields(obj, pm)
            edits = edits + (content_edits(obj, pm, {e[0] for e in edits}) if content else [])
            return line_patches(body, obj, edits, base) if edits else []

        lines = ((ln.offset + ln.body_start, ln.body) for ln in jsonl.iter_lines(io.BytesIO(data))
                 if ln.raw is not None and any(n in ln.raw for n in pm.needles))
        return edit_appended(data, lines, patches_of)
    return transform


def _line_fields(tool: str | None, path: str):
    """The fields function for the lines of one planned file: its session's tool's, or for a file no
    session owns (Claude's history.jsonl) the first tool that claims the path."""
    fields = registry.TABLE[tool].hook("fields") if tool in registry.TABLE else None
    if fields is not None:
        return fields
    for row in list(registry.TABLE.values()):
        unowned = row.hook("unowned")
        fields = unowned(path) if unowned is not None else None
        if fields is not None:
            return fields
    return None


tail_rules.register("move", lambda plan: tail_transform(plan) if "old" in plan.summary and "new" in plan.summary else None)
