"""``histmig doctor``: why history is missing, per tool; ``--repair`` plans the safe fixes."""
from __future__ import annotations

import dataclasses

import click

from histmig.cli.common import TOOL, complete, emit_json, info
from histmig.cli.jsonout import envelope
from histmig.cli.tx import apply_options, run_plan
from histmig.core.diagnostics import EXIT_OK, EXIT_REFUSED, UsageError
from histmig import api

EXAMPLES = """

\b
Examples:
  histmig doctor                          # what is wrong, per tool
  histmig doctor --tool codex --json
  histmig doctor --repair                 # dry run: what would be repaired
  histmig doctor --repair --apply         # repair (undo with: histmig undo)
  histmig doctor --ignore codex.cwd-missing --ignore claude.

\b
Exit codes: 0 healthy, 1 problems found (or left after --repair --apply), 2 usage error,
3 repaired but something was skipped.
"""


@click.command("doctor", help="Explain why chat history is missing or broken, per tool, and repair what is "
               "safe to repair through the same plan/apply/undo path as every other change." + EXAMPLES)
@click.option("--tool", "tools", multiple=True, type=TOOL, help="Check only this tool (repeatable).")
@click.option("--ignore", multiple=True, metavar="CODE", help="Leave out a check code, or every code of a tool "
              "with 'codex.' (repeatable).")
@click.option("--repair", is_flag=True, help="Plan the safe repairs (a dry run unless --apply).")
@apply_options
@click.pass_obj
def command(ctx, tools, ignore, repair, apply, as_json, plan_out):
    report = api.diagnose(ctx.homes, tools=tools or None, ignore=ignore)
    if (apply or plan_out) and not repair:
        raise UsageError("--apply and --plan-out need --repair")
    if not (repair and as_json):   # with --repair --json, the plan (or apply result) is the one document
        _show(ctx, report, as_json)
    if not repair:
        return EXIT_OK if report.healthy else EXIT_REFUSED
    plan = api.plan_repair(ctx.homes, report)
    shown = plan if as_json else dataclasses.replace(plan, warnings=[])   # findings were printed above
    rechecked = []

    def recheck() -> dict:    # after --apply the document reports the disk as the repair left it
        rechecked.append(api.diagnose(ctx.homes, tools=tools or None, ignore=ignore))
        return rechecked[0].to_dict()
    code = run_plan(ctx, shown, apply=apply, as_json=as_json, plan_out=plan_out,
                    render_dry_run=lambda p: _show_plan(ctx, p), json_extra=report.to_dict(), json_after=recheck)
    if not apply:
        return EXIT_OK if report.healthy else EXIT_REFUSED
    after = rechecked[0] if rechecked else api.diagnose(ctx.homes, tools=tools or None, ignore=ignore)
    if not as_json:
        info(ctx, "after repair: " + ("healthy" if after.healthy else f"{len(after.findings)} finding(s) left; "
                                      "each names the command to run"))
    if code != EXIT_OK:
        return code
    return EXIT_OK if after.healthy else EXIT_REFUSED


def _show(ctx, report, as_json: bool) -> None:
    if as_json:
        emit_json(envelope("doctor", report.to_dict()))
        return
    for tool, findings in report.by_tool().items():
        if not findings:
            info(ctx, f"{tool}: ok")
            continue
        info(ctx, f"{tool}: {sum(f.count for f in findings)} problem(s) in {len(findings)} finding(s)")
        findings = _moved_parents(ctx, findings)
        for f in findings:
            info(ctx, f"  {f.code} ({f.count}): {f.detail}")
            if ctx.verbose and f.path:
                info(ctx, f"    at: {f.path}" + (f":{f.line}" if f.line else ""))
            if f.fix:
                info(ctx, complete(f"    fix: {f.fix}"))
    n = len(report.repairable())
    if report.healthy:
        info(ctx, "healthy")
    else:
        tail = f"; {n} can be repaired: histmig doctor --repair --apply" if n else ""
        info(ctx, complete(f"{len(report.findings)} finding(s){tail}"))


def _moved_parents(ctx, findings: list) -> list:
    """Print the ``cwd-missing`` findings that share one missing parent as one, with one move
    command (histmig/toolkit/doctor/group.py); returns the findings left to print one by one."""
    from histmig.toolkit.doctor.group import group_moved
    groups, rest = group_moved(findings)
    for g in groups:
        code = g.findings[0].code
        where = f"; likely moved to {g.new}" if g.new else ""
        info(ctx, f"  {code} ({g.sessions}): {len(g.findings)} folders below {g.root}, which no longer "
                  f"exists{where}")
        for f in g.findings if ctx.verbose else []:
            info(ctx, f"    {f.detail}")
        info(ctx, complete(f"    fix: {g.fix}"))
    return rest


def _show_plan(ctx, plan) -> None:
    limit = None if ctx.verbose else 20
    for op in plan.operations[:limit]:
        info(ctx, f"would {op.describe()}")
    if limit and len(plan.operations) > limit:
        info(ctx, f"... and {len(plan.operations) - limit} more (-v shows all)")
    left = plan.summary.get("left_to_user", 0)
    if left:
        info(ctx, f"left to you: {left} finding(s); each names the command to run")
