"""``histmig convert --to TOOL``: write sessions as new native sessions of another tool."""
from __future__ import annotations

import functools
from pathlib import Path

import click

from histmig.cli.common import TOOL, diag, emit_json, info, print_warnings
from histmig.cli.tx import apply_options, current_options, run_plan
from histmig.verbs.convert import select
from histmig.toolkit.convert.loss import LossReport
from histmig.toolkit.convert.sink import Sink, SpoolDir
from histmig.core.diagnostics import EXIT_OK, EXIT_SKIPPED, RefusedError, UsageError
from histmig.verbs.convert import ConvertOptions, Outcome, Run, add_outcome, iter_convert, new_plan

BATCH_BYTES = 64 * 1024 * 1024   # one transaction holds at most this much new data (bounded memory)

EXAMPLES = """
\b
Examples:
  histmig convert --to claude-code 019e9625            # one Codex session (id prefix), dry run
  histmig convert --to claude-code --from codex --cwd ~/code/app --apply
  histmig convert --to codex --all --provider my-provider --apply
  histmig convert --to mini-cc ~/.claude/projects/-x-app/3a7770b4-….jsonl --keep-times
"""


@click.command("convert", help="Write each chosen session as a NEW native session of the target tool "
               "(new id; the source is never modified) and print what the conversion lost." + EXAMPLES)
@click.argument("sessions", nargs=-1)
@click.option("--to", "target", required=True, type=TOOL, help="Target tool.")
@click.option("--from", "from_tool", type=TOOL, help="Only sessions of this tool.")
@click.option("--cwd", type=click.Path(file_okay=False), help="With --from: only sessions recorded in PATH (or below).")
@click.option("--all", "all_", is_flag=True, help="Every session of every other tool (or of --from).")
@click.option("--again", is_flag=True, help="Convert even if this session was converted before.")
@click.option("--strict", is_flag=True, help="Refuse (exit 1, nothing written) if any conversion would lose content.")
@click.option("--keep-times", is_flag=True, help="Give new files the source's last time as mtime (default: now).")
@click.option("--keep-reasoning-text", is_flag=True, help="Carry reasoning summaries as plain assistant text.")
@click.option("--provider", help="Codex target: model_provider to record (default: config.toml's).")
@click.option("--model", help="Codex target: model to record for resume (default: config.toml's).")
@apply_options
@click.pass_obj
def command(ctx, sessions, target, from_tool, cwd, all_, again, strict, keep_times, keep_reasoning_text,
            provider, model, apply, as_json, plan_out):
    refs = _refs(ctx, sessions, target, from_tool, cwd, all_)
    opts = ConvertOptions(target, again=again, keep_times=keep_times, keep_reasoning_text=keep_reasoning_text,
                          provider=provider, model=model)
    if strict:
        _refuse_lossy(ctx, refs, opts)
    if keep_times and not as_json:
        diag("warning: --keep-times: files get their source times; Claude Code deletes transcripts older "
             "than cleanupPeriodDays (default 30) at its next start")
    if plan_out:     # the plan file carries every new file's bytes: kept in memory, each up to BATCH_BYTES
        run = _run(ctx, opts, functools.partial(Sink, "memory", cap=BATCH_BYTES))
        return _whole(ctx, run, refs, apply, as_json, plan_out, named=bool(sessions))
    if not apply:    # a dry run writes nothing at all: lines are only counted and hashed
        return _stream(ctx, _run(ctx, opts, functools.partial(Sink, "count")), refs, apply, as_json,
                       named=bool(sessions))
    spool = SpoolDir(ctx.homes.state)   # <state>/spool/<run>/: one line at a time, never the file in memory
    try:
        run = _run(ctx, opts, functools.partial(Sink, "spool", spool.path))
        return _stream(ctx, run, refs, apply, as_json, named=bool(sessions))
    finally:
        spool.close()


def _run(ctx, opts, sink) -> Run:
    run = Run(ctx.homes, opts, sink)
    if run.tables is not None:
        run.warnings += run.tables.warnings
    return run


def _refs(ctx, sessions, target, from_tool, cwd, all_) -> list:
    if sum(map(bool, (sessions, all_))) != 1 and not from_tool:
        raise UsageError("name sessions, or use --from TOOL [--cwd PATH], or --all")
    if sessions and all_:
        raise UsageError("--all and named sessions do not mix")
    if cwd and not from_tool and not all_:
        raise UsageError("--cwd needs --from TOOL or --all")
    tools = select.tools_for(from_tool, target)
    if sessions:
        return select.resolve(ctx.homes, list(sessions), tools)
    refs = select.discover(ctx.homes, tools)
    return list(select.by_cwd(refs, cwd) if cwd else refs)


def _refuse_lossy(ctx, refs, opts) -> None:
    """--strict: a first pass that only measures loss, so nothing is written when one is lossy."""
    counted = Run(ctx.homes, opts, functools.partial(Sink, "count"))
    lossy = [o for o, _ in iter_convert(counted, refs) if o.status == "convert" and o.loss.lossy]
    if lossy:
        for o in lossy[:20]:
            diag(f"lossy: {o.tool} {o.source_id}: " + "; ".join(f"{c} {n} {k}" for c, k, n in o.loss.lossy_items()))
        raise RefusedError(f"--strict: {len(lossy)} conversion(s) would lose content; nothing written")


def _check_named(out: Outcome, named: bool) -> None:
    if named and out.code == "invalid-session-id":
        raise RefusedError(f"invalid session id in {out.source_path}")


def _stream(ctx, run: Run, refs, apply: bool, as_json: bool, *, named: bool) -> int:
    total, outcomes, txids, code = new_plan(run), [], [], EXIT_OK
    batch, size = new_plan(run), 0
    for out, ops in iter_convert(run, refs):
        _check_named(out, named)
        add_outcome(total, out, [])
        outcomes.append(out.to_dict() if as_json else None)
        if not as_json:
            _line(ctx, out, apply)
        if apply and ops:
            add_outcome(batch, out, ops)
            size += out.bytes
            if size >= BATCH_BYTES:
                code = max(code, _apply(ctx, batch, as_json, txids))
                batch, size = new_plan(run), 0
    if apply and batch.operations:
        code = max(code, _apply(ctx, batch, as_json, txids))
    total.warnings += run.warnings
    return _finish(ctx, total, [o for o in outcomes if o], txids, apply, as_json, code)


def _apply(ctx, plan, as_json: bool, txids: list) -> int:
    try:
        if as_json:
            from histmig.apply import apply_plan
            res = apply_plan(plan, ctx.homes, options=current_options())
            txids.append(res.to_dict())
            return res.exit_code
        return run_plan(ctx, plan, apply=True, as_json=False, plan_out=None, render_dry_run=None)
    finally:    # this batch's spool files are copied (or rolled back): free the disk for the next one
        for op in plan.operations:
            if getattr(op, "data_path", None):
                Path(op.data_path).unlink(missing_ok=True)


def _whole(ctx, run: Run, refs, apply: bool, as_json: bool, plan_out: str, *, named: bool) -> int:
    plan = new_plan(run)
    for out, ops in iter_convert(run, refs):
        _check_named(out, named)
        add_outcome(plan, out, ops)
        if not as_json:
            _line(ctx, out, apply)
    plan.warnings += run.warnings
    if not as_json:
        _report(ctx, plan, apply)
    return run_plan(ctx, plan, apply=apply, as_json=as_json, plan_out=plan_out, render_dry_run=lambda p: None)


def _line(ctx, out: Outcome, apply: bool) -> None:
    if out.status == "convert":
        verb = "converting" if apply else "would convert"
        title = f"  \"{out.title[:60]}\"" if out.title else ""
        info(ctx, f"{verb} {out.tool} {out.source_id} -> {out.new_id}{title}")
        if ctx.verbose:
            for p in out.paths:
                info(ctx, f"    {p}")
    elif out.status == "already":
        info(ctx, f"already converted: {out.tool} {out.source_id} ({out.paths[0]}); --again to convert again")


def _report(ctx, plan, apply: bool) -> None:
    s = plan.summary
    verb = "converted" if apply else "would convert"
    info(ctx, f"{verb} {s['converted']} of {s['sessions']} session(s) to {plan.args['to']} "
              f"({s['already']} already converted, {s['skipped']} skipped)")
    lines = LossReport.from_dict(s["loss"]).lines(include_mapped=ctx.verbose > 0)
    if lines:
        info(ctx, "loss report (category, count, kind):")
        for ln in lines:
            info(ctx, ln)


def _finish(ctx, total, outcomes, txids, apply: bool, as_json: bool, code: int) -> int:
    if as_json:
        emit_json({"dry_run": not apply, "to": total.args["to"], "summary": total.summary, "sessions": outcomes,
                   "transactions": txids, "warnings": total.warnings, "skips": total.skips})
    else:
        _report(ctx, total, apply)
        print_warnings([*total.warnings, *total.skips])
        if not apply and total.summary["converted"]:
            info(ctx, "dry run: nothing written; add --apply to convert")
    skipped = EXIT_SKIPPED if total.skips else EXIT_OK
    return max(code, skipped)
