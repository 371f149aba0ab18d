"""``histmig unpack BUNDLE``: verify a bundle, then plan (or apply) its import into the local homes (docs/pack.md)."""
from __future__ import annotations

import click

from histmig import api
from histmig.cli.common import info
from histmig.cli.tx import apply_options, run_plan
from histmig.core.diagnostics import UsageError

EXAMPLES = """

\b
Examples:
  histmig unpack history.tar.zst                                  # verify + dry run
  histmig unpack history.tar.zst --rehome /Users/nat=/home/nat --apply
  histmig undo                                                    # removes exactly what was imported
"""


@click.command("unpack", help="Verify every checksum of a bundle written by `histmig pack`, then import its "
               "sessions into the local homes: files where each client looks, paths re-homed by move's rules, "
               "database rows inserted. Existing identical sessions are skipped; different ones refuse." + EXAMPLES)
@click.argument("bundle", type=click.Path(dir_okay=False, exists=True))
@click.option("--rehome", "rehome", multiple=True, metavar="OLD=NEW",
              help="Re-home paths under OLD (the source machine's) to NEW, as `histmig move` would (repeatable).")
@apply_options
@click.pass_obj
def command(ctx, bundle, rehome, apply, as_json, plan_out):
    if plan_out:
        raise UsageError("--plan-out is not available for unpack: the bundle is the plan's data; "
                         "run unpack --apply where the bundle is")
    job = api.plan_unpack(ctx.homes, bundle, rehome, apply=apply)
    try:
        return run_plan(ctx, job.plan, apply=apply, as_json=as_json, plan_out=None,
                        render_dry_run=lambda p: render(ctx, p), json_extra={"sessions": job.sessions})
    finally:
        job.close()


def render(ctx, plan) -> None:
    s = plan.summary
    info(ctx, f"unpack {plan.args['bundle']}: checksums verified, {s['sessions']} session(s)")
    for tool, c in s["tools"].items():
        info(ctx, f"{tool:<12} {c['new']:>5} new  {c['identical']:>5} identical (skipped)  {c['partial']:>5} partial")
    info(ctx, f"would create {s['files']} file(s) ({s['bytes']} bytes; {s['fields']} path value(s) re-homed) "
              f"and insert {s['rows']} row(s)")
    if s.get("shared"):
        info(ctx, f"and add lines or entries to {s['shared']} shared file(s) (prompt history, project settings)")
    if ctx.verbose:
        for op in plan.operations:
            info(ctx, "would " + op.describe())
