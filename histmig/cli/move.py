"""``histmig move OLD_PATH NEW_PATH``: carry every tool's history along when a project folder moves."""
from __future__ import annotations

import click

from histmig.cli.common import TOOL, info, planning_progress
from histmig import api
from histmig.cli.tx import apply_options, run_plan
from histmig.core.plan import Rename

EXAMPLES = """

\b
Examples:
  mv ~/code/app ~/work/app
  histmig move ~/code/app ~/work/app              # dry run: what would change, per tool
  histmig move ~/code/app ~/work/app --apply
  histmig move ~/code/app ~/work/app --tool codex --apply
  histmig move ~/code/app ~/work/app --split-shared --apply   # after a slug-collision skip
  histmig undo
"""

COLUMNS = [("files", "files"), ("fields", "fields"), ("folders", "folders"), ("sessions", "sessions"),
           ("db-rows", "db rows"), ("config-keys", "config keys"), ("skipped", "skipped")]


@click.command("move", help="Re-point the history of every tool (Claude Code, Codex, mini-cc, manifest) "
               "from project folder OLD_PATH, and every folder below it, to NEW_PATH. NEW_PATH need not "
               "exist yet: run it before or after moving the folder." + EXAMPLES)
@click.argument("old_path")
@click.argument("new_path")
@click.option("--tool", "tools", multiple=True, type=TOOL,
              help="Only this tool's history (repeatable; default: all).")
@click.option("--force", is_flag=True,
              help="When ~/.claude.json or config.toml already has a different entry for NEW, let OLD's values win.")
@click.option("--rewrite-content", is_flag=True,
              help="Also replace OLD in message text and tool arguments (reported per file).")
@click.option("--split-shared", is_flag=True,
              help="A Claude folder that also holds sessions of another path with the same folder name: "
                   "move only OLD's sessions out of it (default: skip that folder, named).")
@apply_options
@click.pass_obj
def command(ctx, old_path, new_path, tools, force, rewrite_content, split_shared, apply, as_json, plan_out):
    with planning_progress(ctx, enabled=not as_json):
        plan = api.plan_move(ctx.homes, old_path, new_path, tools=tools or None, force=force,
                             rewrite_content=rewrite_content, split_shared=split_shared,
                             hash_files=bool(plan_out))    # a plan written out is checked by hashes
    return run_plan(ctx, plan, apply=apply, as_json=as_json, plan_out=plan_out,
                    render_dry_run=lambda p: render(ctx, p))


def table(plan) -> list[str]:
    """The per-tool counts as aligned text rows."""
    head = ["tool"] + [title for _, title in COLUMNS]
    rows = [head]
    for tool, counts in plan.summary["tools"].items():
        rows.append([tool] + [str(counts.get(key, 0)) for key, _ in COLUMNS])
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    return ["  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))
            for r in rows]


def render(ctx, plan) -> None:
    s = plan.summary
    info(ctx, f"move {' | '.join(s['old'])} -> {s['new']}")
    for w in plan.warnings:     # a symlinked path: say which path the plan used
        if w.code == "path-resolved":
            info(ctx, f"using {w.extra['used']} for {w.extra['typed']} (the path the clients record)")
    for line in table(plan):
        info(ctx, line)
    for op in plan.operations:
        if isinstance(op, Rename) or ctx.verbose:
            info(ctx, "would " + op.describe())
