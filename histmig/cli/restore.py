"""``histmig restore SESSION|--deleted``: put archived sessions back where their clients look for them."""
from __future__ import annotations

import click

from histmig import api
from histmig.cli.common import TOOL, info
from histmig.cli.tx import apply_options, run_plan
from histmig.core.diagnostics import UsageError

RESTORE_EXAMPLES = """

\b
Examples:
  histmig restore --deleted                # dry run: the archived sessions whose files are gone
  histmig restore --deleted --apply        # put them back (undo with: histmig undo)
  histmig restore 0f3c2a --apply           # one session, by id or id prefix
  histmig restore --deleted --tool gemini --to /backup/agent-history
"""



@click.command("restore", help="Put archived sessions back where their clients look for them (a client "
               "deleted them): a dry run unless --apply; journaled and undoable. A file that now exists "
               "with other bytes is never replaced." + RESTORE_EXAMPLES)
@click.argument("session", required=False)
@click.option("--deleted", is_flag=True, help="Every archived session whose file no longer exists and that "
              "no tool lists any more.")
@click.option("--to", "to", type=click.Path(file_okay=False), default=None,
              help="The archive folder (default: <state dir>/archive).")
@click.option("--tool", "tools", multiple=True, type=TOOL, help="Only this tool's sessions (repeatable).")
@click.option("--keep-mtime", is_flag=True, help="Give restored files their archived mtime (default: now, so "
              "the cleanup that deleted them does not delete them again at the client's next start).")
@apply_options
@click.pass_obj
def restore_cmd(ctx, session, deleted, to, tools, keep_mtime, apply, as_json, plan_out) -> int:
    if bool(session) == bool(deleted):
        raise UsageError("name one SESSION or give --deleted")
    data = "memory" if plan_out else "spool" if apply else "count"
    restore = api.plan_restore(ctx.homes, session, deleted=deleted, to=to, tools=tools or None, data=data,
                               keep_mtime=keep_mtime)
    try:
        return run_plan(ctx, restore.plan, apply=apply, as_json=as_json, plan_out=plan_out,
                        render_dry_run=lambda p: _render(ctx, p))
    finally:
        restore.close()


def _render(ctx, plan) -> None:
    s = plan.summary
    rows = f", {s['rows']} database row(s)" if s.get("rows") else ""
    info(ctx, f"restore {s['sessions']} session(s), {s['files']} file(s), {s['bytes']} bytes{rows} from {s['archive']}")
    for op in plan.operations:
        if op.kind == "create":
            info(ctx, f"would create {op.path} ({op.session['tool']} {op.session['id']})")
        elif ctx.verbose or op.table == "session":
            info(ctx, f"would {op.describe()}")


command = restore_cmd
