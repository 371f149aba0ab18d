"""Claude Code's part of a project move (docs/specs/claude-code.md §11).

1. ``projects/slug(OLD…)`` folders (sessions, ``<sid>/`` side folders with sub-agents, the git-root
   keyed ``memory/``) → ``slug(NEW…)``; ``cwd`` in every record of main and sub-agent files, the
   ``worktree-state`` paths, ``relocatedCwd``, sub-agent ``worktreePath`` and the ``environment``
   attachment's ``snapshot.workingDirectory`` (2.1.332) rewritten first, in place.
2. ``~/.claude.json`` ``projects`` keys (and ``githubRepoPaths``).
3. ``history.jsonl`` ``project`` fields.
"""
from __future__ import annotations

import os
from types import SimpleNamespace
from typing import Any

from histmig.tools.claude_family.live import claude_live_registry
from histmig.toolkit.move.common import FieldEdit, PathMap, ToolPlan, field_at, scan_file
from histmig.tools.claude_family.folders import plan_folders
from histmig.core.paths import slug_matches
from histmig.tools.claude_code import edits as claude_edits
from histmig.tools.claude_code.files import read_claude_json

TOOL = "claude-code"


def claude_fields(obj: Any, pm: PathMap) -> list[FieldEdit]:
    """Structured path fields of one Claude record (or sub-agent ``.meta.json``)."""
    if not isinstance(obj, dict):
        return []
    out = field_at(obj, ("cwd",), pm)
    kind = obj.get("type")
    if kind == "worktree-state":
        for key in ("originalCwd", "worktreePath"):
            out += field_at(obj, ("worktreeSession", key), pm)
    elif kind == "relocated":
        out += field_at(obj, ("relocatedCwd",), pm)
    elif kind == "attachment":
        out += environment_fields(obj, pm)
    if "agentType" in obj:
        out += field_at(obj, ("worktreePath",), pm)
    return out


def environment_fields(obj: dict, pm: PathMap) -> list[FieldEdit]:
    """2.1.332's ``environment`` attachment snapshots the cwd (``workingDirectory``) and the
    ``--add-dir`` folders (``additionalWorkingDirectories``) on every turn (docs/specs/claude-code.md
    §3.2); the client reads them back as the session's working directory, so they move with ``cwd``."""
    att = obj.get("attachment")
    if not isinstance(att, dict) or att.get("type") != "environment" or not isinstance(att.get("snapshot"), dict):
        return []
    out = field_at(obj, ("attachment", "snapshot", "workingDirectory"), pm)
    extra = att["snapshot"].get("additionalWorkingDirectories")
    for i, old in enumerate(extra if isinstance(extra, list) else ()):
        new = pm.rebase(old) if isinstance(old, str) else None
        if new is not None and new != old:
            out.append((("attachment", "snapshot", "additionalWorkingDirectories", i), old, new))
    return out


def history_fields(obj: Any, pm: PathMap) -> list[FieldEdit]:
    return field_at(obj, ("project",), pm) if isinstance(obj, dict) else []


def _held_history_fields(rebase):
    """``history_fields`` with ``_unless_live``'s rebase: the prompts of a project whose folder waits
    for a live session keep their ``project`` until the re-run moves the folder (the session goes on
    adding prompts under the old path meanwhile)."""
    paths = SimpleNamespace(rebase=rebase)             # (field_at asks only for ``rebase``)
    return lambda obj, _pm: history_fields(obj, paths)


def known_paths(homes, pm: PathMap) -> list[str]:
    """Paths whose folders may exist without a session naming them (memory-only folders are keyed
    by the git root, which ``~/.claude.json`` lists)."""
    cj = read_claude_json(homes)
    with pm.reading(str(homes.claude_json)):
        keys = [k.replace("\\", "/") for k in cj.project_keys if pm.covers(k.replace("\\", "/"))]
    return list(pm.olds) + keys


def _unless_live(pm: PathMap, tplan: ToolPlan):
    """``pm.rebase``, except for a path whose project folder waits for a live session: that session
    keeps writing its ``~/.claude.json`` entry under the old key (and writes it again when it exits),
    so the key waits with its folder; re-keying it now would leave two entries that disagree."""
    held = [os.path.basename(p) for p, code in tplan.waiting.items() if code == "live-folder"]
    if not held:
        return pm.rebase
    return lambda key: None if any(slug_matches(name, key) for name in held) else pm.rebase(key)


def plan_claude(homes, pm: PathMap, plans: dict[str, ToolPlan], opts: dict[str, Any],
                live_ids: dict[str, tuple[int, str | None]]) -> None:
    """Folders (also when only manifest is selected: its sessions live in the same folders), then
    ``~/.claude.json`` and ``history.jsonl`` when Claude Code is selected."""
    tplan = plans[TOOL]
    plan_folders(homes.claude / "projects", pm, plans, tool=TOOL, selected=opts["tools"], merge=True,
                 fields_fn=claude_fields, manifest=True, known_paths=known_paths(homes, pm),
                 live_ids=live_ids, rewrite_content=opts["rewrite_content"], by_name=True,
                 split_shared=opts["split_shared"], rerun=opts["rerun"])
    if TOOL not in opts["tools"]:
        return
    rebase = _unless_live(pm, tplan)
    with pm.reading(str(homes.claude_json)):        # a refused project key is named with ~/.claude.json
        op, warnings, counts = claude_edits.claude_json_op(homes, rebase, force=opts["force"])
    tplan.warnings += warnings
    if op is not None:
        tplan.other.append(op)
        tplan.count("config-keys", counts.get("keys", 0) + counts.get("repo-paths", 0))
    hist = claude_edits.history_file(homes)
    if hist.is_file():
        scan = scan_file(str(hist), pm, _held_history_fields(rebase))
        if scan.skip:
            from histmig.core.diagnostics import Skip
            tplan.skips.append(Skip(str(hist), scan.skip))
        elif scan.patches:
            tplan.add_scan(scan, session=None, reason="prompt history project field")
            tplan.count("history-lines", scan.lines)


def plan(homes, pm: PathMap, plans: dict[str, ToolPlan], opts: dict[str, Any]) -> None:
    """The table's move hook (histmig/tools/__init__.py): :func:`plan_claude` with the live sessions."""
    plan_claude(homes, pm, plans, opts, claude_live_registry(homes.claude))


line_fields = claude_fields


def unowned_fields(path: str):
    """``history.jsonl`` ops carry no session: its lines are edited by their ``project`` field."""
    return history_fields if path.endswith("history.jsonl") else None
