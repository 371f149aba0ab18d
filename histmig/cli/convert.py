"""``histmig convert --to TOOL``: write sessions as new native sessions of another tool.

Parses, calls the library (histmig/verbs/convert/batches.py owns the batching and ``--strict``) and renders."""
from __future__ import annotations

import functools

import click

from histmig.cli import jsonout
from histmig.cli.common import TOOL, diag, emit_json_stream, info, print_warnings
from histmig.cli.tx import apply_options, current_options, run_plan
from histmig.core.diagnostics import EXIT_REFUSED
from histmig.toolkit.convert.loss import LossReport

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
    from histmig import api
    refs = api.convert_sessions(ctx.homes, target, sessions, from_tool=from_tool, cwd=cwd, all_=all_)
    opts = api.ConvertOptions(target, again=again, keep_times=keep_times, keep_reasoning_text=keep_reasoning_text,
                              provider=provider, model=model)
    if strict:
        _refuse_lossy(ctx, refs, opts)
    if keep_times and not as_json:
        diag("warning: --keep-times: files get their source times; Claude Code deletes transcripts older "
             "than cleanupPeriodDays (default 30) at its next start")
    show = None if as_json else functools.partial(_line, ctx, apply=apply)
    outcomes, hints = _Outcomes(), _Hints(target, every=ctx.verbose > 0)
    keep = outcomes.add if as_json else show
    if apply and not as_json:
        keep = functools.partial(_remember, hints, show)
    if plan_out:
        plan = api.plan_convert_whole(ctx.homes, refs, opts, named=bool(sessions), on_outcome=keep)
        if not as_json:
            _report(ctx, plan, apply)
        return run_plan(ctx, plan, apply=apply, as_json=as_json, plan_out=plan_out, render_dry_run=lambda p: None,
                        json_extra={"sessions": list(outcomes.items())})
    apply_batch = None if as_json else functools.partial(run_plan, ctx, apply=True, as_json=False, plan_out=None,
                                                          render_dry_run=None)
    done = api.convert(ctx.homes, refs, opts, apply=apply, named=bool(sessions), on_outcome=keep,
                       apply_batch=apply_batch, options=current_options() if apply else None)
    _finish(ctx, done, outcomes, apply, as_json)
    if hints.count and done.code != EXIT_REFUSED:   # a failed batch rolled back: no hints for what it held
        _resume_hints(ctx, hints)
    return done.exit_code


class _Outcomes:
    """Each session's ``--json`` object, kept as it is decided as one line of compact JSON in one
    buffer (about a kilobyte a session, where the dict of its outcome is several, and one block of
    memory rather than thousands beside the run's own) and parsed back when the document is printed
    (docs/convert.md, "Memory and the spool folder"). Nothing is written on the way: a full disk
    cannot stop a run half applied. An object that does not encode is kept as it is (its line left
    empty), so the document fails where it always did, when it is printed."""

    def __init__(self) -> None:
        self.buf = bytearray()
        self.odd: dict[int, dict] = {}     # by position: the objects that do not encode
        self.count = 0

    def add(self, out) -> None:
        import orjson
        from histmig.cli.common import json_default
        d = out.to_dict()
        try:
            self.buf += orjson.dumps(d, default=json_default, option=orjson.OPT_NON_STR_KEYS)
        except TypeError:
            self.odd[self.count] = d
        self.buf += b"\n"
        self.count += 1

    def items(self):
        import orjson
        view, start = memoryview(self.buf), 0
        for i in range(self.count):
            end = self.buf.index(b"\n", start)
            yield self.odd[i] if i in self.odd else orjson.loads(view[start:end])
            start = end + 1


class _Hints:
    """The resume lines of the sessions converted so far: every one with ``every`` (-v), else the first
    ``SHOWN`` and a count, so a run of any size holds no more than that (not each session's outcome)."""

    SHOWN = 10

    def __init__(self, target: str, *, every: bool):
        self.target, self.every = target, every
        self.lines: list[str] = []
        self.count = 0

    def add(self, out) -> None:
        from histmig import api
        line = api.resume_command(self.target, out.cwd, out.new_id)
        if line:
            self.count += 1
            if self.every or len(self.lines) < self.SHOWN:
                self.lines.append(line)


def _remember(hints: _Hints, show, out) -> None:
    if out.status == "convert":
        hints.add(out)
    show(out)


def _resume_hints(ctx, hints: _Hints) -> None:
    """How to open each new session (docs/convert.md, "Resuming a converted session")."""
    info(ctx, "resume with:")
    for line in hints.lines:
        info(ctx, "  " + line)
    if hints.count > len(hints.lines):
        info(ctx, f"  ... and {hints.count - len(hints.lines)} more (-v lists them all)")


def _refuse_lossy(ctx, refs, opts) -> None:
    from histmig import api
    try:
        api.refuse_lossy(ctx.homes, refs, opts)
    except api.LossyError as e:
        for o in e.lossy[:20]:
            diag(f"lossy: {o.tool} {o.source_id}: " + "; ".join(f"{c} {n} {k}" for c, k, n in o.loss.lossy_items()))
        raise


def _line(ctx, out, *, apply: bool) -> None:
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


def _finish(ctx, done, outcomes, apply: bool, as_json: bool) -> None:
    total = done.total
    if as_json:
        result = jsonout.batches_result(done.transactions, done.exit_code) if apply else None
        from histmig.jsonio.jsonstream import Lazy
        emit_json_stream(jsonout.change("convert", total, dry_run=not apply, sessions=Lazy(outcomes.items()),
                                        result=result))
        return
    _report(ctx, total, apply)
    print_warnings([*total.warnings, *total.skips])
    if not apply and total.summary["converted"]:
        info(ctx, "dry run: nothing written; add --apply to convert")
