"""``apply``, ``undo``, ``log``, ``recover`` — and the helpers every mutating command shares:
``apply_options`` (the same flags everywhere) and ``run_plan`` (dry run, ``--plan-out``, apply)."""
from __future__ import annotations

import os
import sys
import time
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Callable

import click

from histmig.cli import jsonout
from histmig.cli.common import Progress, Context, complete, diag, emit_json, info, print_warnings
from histmig.cli.tx_options import (apply_options, current_options, fewer_collections, options_from, pop_flags,
                                    safety_flags)
from histmig.core.diagnostics import EXIT_OK, EXIT_SKIPPED, RefusedError

if TYPE_CHECKING:      # the apply machinery loads only when something is applied (a dry run never)
    from histmig.apply import ApplyOptions
    from histmig.core.plan import Plan     # (a doctor without fixes builds no plan)

# The shared flags live in tx_options (no apply imports: a dry run parses them too).
_flags = safety_flags


def _collect(kwargs: dict) -> ApplyOptions:
    return options_from(pop_flags(kwargs))


def run_plan(ctx: Context, plan: Plan, *, apply: bool, as_json: bool, plan_out: str | None,
             render_dry_run: Callable[[Plan], None] | None, options: ApplyOptions | None = None,
             json_extra: dict | None = None, json_after: Callable[[], dict] | None = None) -> int:
    """Dry run (default), write the plan file, or apply. Returns the exit code. ``json_extra``: more
    fields of the command's --json document (docs/json.md); ``json_after``: fields known only once the
    plan is applied, asked for after the apply and put over ``json_extra`` (doctor: the re-checked findings)."""
    if as_json:
        json_extra = {"plan_out": plan_out, **(json_extra or {})}
    if plan_out:
        _write_plan(ctx, plan, plan_out, quiet=as_json)
    if not apply:
        return _dry_run(ctx, plan, as_json, render_dry_run, wrote_plan=bool(plan_out), json_extra=json_extra)
    if plan.empty:
        if as_json:
            emit_json(jsonout.change(jsonout.command_name(), plan, dry_run=False, **_after(json_extra, json_after),
                                     result=jsonout.apply_result(None, plan)))
        else:
            print_warnings([*plan.warnings, *plan.skips])
            info(ctx, "nothing to do")
        return EXIT_SKIPPED if plan.skips else EXIT_OK
    return _apply(ctx, plan, as_json, options or current_options(), json_extra=json_extra, json_after=json_after)


def _after(json_extra: dict, json_after: Callable[[], dict] | None) -> dict:
    return {**json_extra, **json_after()} if json_after is not None else json_extra


def _write_plan(ctx: Context, plan: Plan, path: str, *, quiet: bool) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(plan.dumps())
    if not quiet:
        import shlex  # noqa: PLC0415 (lazy: only a plan written to --plan-out names its file; a dry run never)
        diag(f"wrote plan to {path} ({len(plan.operations)} operation(s)); apply with: histmig apply {shlex.quote(path)}")


def _dry_run(ctx: Context, plan: Plan, as_json: bool, render, *, wrote_plan: bool, json_extra=None) -> int:
    if as_json:
        emit_json(jsonout.change(jsonout.command_name(), plan, dry_run=True, **json_extra))
    else:
        if render is not None:
            render(plan)
        else:
            for op in plan.operations:
                info(ctx, "would " + op.describe())
        print_warnings([*plan.warnings, *plan.skips])
        if not plan.empty and not wrote_plan:
            planned = counted([op.paths()[0] for op in plan.operations], plan)
            info(ctx, f"dry run: {planned} to change, nothing written; add --apply to make them")
        elif plan.empty:
            info(ctx, "nothing to do")
    return EXIT_SKIPPED if plan.skips else EXIT_OK


def _apply(ctx: Context, plan: Plan, as_json: bool, opts: ApplyOptions, json_extra=None, json_after=None) -> int:
    files = {p for op in plan.operations if op.kind not in _ROW_KINDS for p in op.paths()[:1]}
    progress = Progress("applying", total=len(files), enabled=not as_json and not ctx.quiet)

    def on_commit(path: str) -> None:
        if ctx.verbose and not as_json:   # the crash harness reads these lines (ALICE-style checker)
            click.echo(f"committed {path}")
            sys.stdout.flush()
        progress.step(0)
    def on_take_back(path: str) -> None:
        if ctx.verbose and not as_json:   # the file on_commit named holds its old bytes again
            click.echo(f"taken back {path}")
            sys.stdout.flush()
    opts.on_commit = on_commit
    opts.on_take_back = on_take_back
    try:
        from histmig import api
        res = api.apply(plan, ctx.homes, options=opts)
    finally:
        progress.done()
    if as_json:
        emit_json(jsonout.change(jsonout.command_name(), plan, dry_run=False, **_after(json_extra, json_after),
                                 result=jsonout.apply_result(res)))
        return res.exit_code
    print_warnings([*res.warnings, *res.skips])
    if res.txid:
        info(ctx, f"applied: {counted(res.done, plan)}; transaction {res.txid}")
        info(ctx, complete(f"undo with: histmig undo {res.txid}"))
    else:
        info(ctx, "nothing applied")
    return res.exit_code


def _n(n: int, noun: str) -> str:
    return f"{n:,} {noun}{'s' * (n != 1)}"


_ROW_KINDS = ("sql-update", "sql-shift")   # counted as rows: an update is one, a shift the rows it moves


def _rows_done(weights: list[int], n_done: int) -> int:
    """The rows of a database's ``n_done`` operations done: all of them when every one is (a shift
    counts the rows it moves, histmig/core/plan.py SqlShift), else one per operation."""
    return sum(weights) if n_done == len(weights) else n_done


def counted(done: list[str], plan: Plan | None) -> str:
    """What an apply or undo changed, in the words every summary uses (docs/safety.md, "Counts"):
    files (each changed file once, a database included) and the rows changed inside databases."""
    weights: dict[str, list[int]] = {}
    for op in plan.operations if plan is not None else ():
        if op.kind in _ROW_KINDS:
            weights.setdefault(op.paths()[0], []).append(getattr(op, "rows", 1))
    dbs = set(weights)
    rows = sum(_rows_done(weights[db], n) for db, n in Counter(p for p in done if p in dbs).items())
    text = _n(len(set(done)), "file")
    if rows:
        text += f" ({_n(rows, 'row')} in {_n(len(dbs & set(done)), 'database')})"
    return text


# -- commands -------------------------------------------------------------------------------------
@click.command("apply")
@click.argument("plan_file", type=click.Path(exists=True, dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@_flags
@click.pass_obj
@fewer_collections()
def apply_cmd(ctx: Context, plan_file: str, as_json: bool, **flags) -> int:
    """Apply a plan written with --plan-out (checked against the disk first).

    \b
    Examples:
      histmig flip openai my-provider --plan-out flip.json
      histmig apply flip.json
    """
    from histmig import api
    plan = api.load_plan(Path(plan_file).read_bytes())
    return run_plan(ctx, plan, apply=True, as_json=as_json, plan_out=None, render_dry_run=None,
                    options=_collect(flags))


@click.command("undo")
@click.argument("txid", required=False)
@click.option("--dry-run", is_flag=True, help="Print the inverse plan and what would be kept; write nothing.")
@click.option("--keep-appended", is_flag=True, hidden=True,
              help="Accepted for old scripts: lines appended since the apply are always kept now.")
@click.option("--restore-deleted", is_flag=True, help="Recreate files deleted since the apply (from the backup).")
@click.option("--force", is_flag=True,
              help="Also revert what changed since the apply: a continued conversion goes to the trash, "
                   "a changed file gets its old bytes back (its bytes now stay in the undo's backup).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_obj
@fewer_collections()
def undo_cmd(ctx: Context, txid, dry_run, keep_appended, restore_deleted, force, as_json) -> int:
    """Undo a transaction (default: the latest one that is still applied).

    Undo is an inverse plan computed against the disk as it is now, one session at a time: lines
    a client appended since are kept (with the change reverted in them too); a session that
    cannot be reverted safely is kept whole and named, with the command that would finish it.

    \b
    Examples:
      histmig undo --dry-run
      histmig undo
      histmig undo 20261130T050933.123456Z-141272 --force
    """
    from histmig import api
    res = api.undo(ctx.homes, txid, force=force, restore_deleted=restore_deleted, dry_run=dry_run,
               argv=sys.argv[1:])
    if as_json:
        emit_json(jsonout.change("undo", res.plan, dry_run=dry_run, txid=res.txid,
                                 result=None if dry_run else res.to_dict()))
        return res.exit_code
    if dry_run:
        _undo_dry_run(ctx, res)
        return res.exit_code
    print_warnings([*res.warnings, *res.skips])
    for path in res.done if ctx.verbose else []:
        info(ctx, f"reverted {path}")
    for path in res.trash:
        info(ctx, f"moved to the trash: {path}")
    via = f" (undo transaction {res.undo_txid})" if res.undo_txid else ""
    if res.skips:
        info(ctx, f"transaction {res.txid} partly undone: {counted(res.done, res.plan)} reverted{via}; "
                  f"{len(res.skips)} session(s) or file(s) kept, named above")
    else:
        info(ctx, f"transaction {res.txid} undone: {counted(res.done, res.plan)} reverted{via}")
    return res.exit_code


def _undo_dry_run(ctx: Context, res) -> None:
    for op in res.plan.operations:
        info(ctx, "would " + op.describe())
    print_warnings([*res.warnings, *res.skips])
    planned, kept = counted([op.paths()[0] for op in res.plan.operations], res.plan), len(res.skips)
    info(ctx, f"dry run: undo of {res.txid} would revert {planned}"
              + (f" and keep {kept} session(s) or file(s) as they are" if kept else "") + "; nothing written")


@click.command("recover")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_obj
def recover_cmd(ctx: Context, as_json: bool) -> int:
    """Roll back an apply that did not finish (crash, kill, power loss).

    \b
    Examples:
      histmig recover
    """
    from histmig import api
    res = api.recover(ctx.homes)
    if as_json:
        emit_json(jsonout.envelope("recover", res.to_dict()))
        return res.exit_code
    print_warnings(res.warnings)
    if res.nothing:
        info(ctx, "nothing to recover")
    for txid in res.txids:
        if txid in res.incomplete:
            diag(f"error: transaction {txid} rolled back except the files named above (left as they are); "
                 "see \"Damaged backups and journals\" in the README")
        else:
            info(ctx, f"recovered transaction {txid}")
    for path in res.restored if ctx.verbose else []:
        info(ctx, f"restored {path}")
    return res.exit_code


@click.command("log")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_obj
def log_cmd(ctx: Context, as_json: bool) -> int:
    """List transactions, newest last.

    \b
    Examples:
      histmig log
      histmig log --json
    """
    from histmig.apply.gc import backup_size, gc_record
    from histmig.apply.journal import tx_root
    from histmig import api
    txs = api.transactions(ctx.homes)
    folders = {t.txid: tx_root(ctx.homes.state) / t.txid for t in txs}
    sizes = {t.txid: backup_size(folders[t.txid]).bytes for t in txs}
    collected = {t.txid: gc_record(folders[t.txid]) for t in txs}
    if as_json:
        emit_json(jsonout.envelope("log", {"transactions": [jsonout.transaction(t, sizes[t.txid], collected[t.txid])
                                                            for t in txs]}))
        return EXIT_OK
    if not txs:
        info(ctx, "no transactions")
    for t in txs:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t.started_ns / 1e9)) if t.started_ns else "?"
        info(ctx, f"{t.txid}  {when}  {t.state:<13} {t.op or '?':<8} {_n(len(t.paths), 'file')}  "
                  + _backups_note(t.state, sizes[t.txid], collected[t.txid]))
        for k in t.kept:
            info(ctx, f"    kept: {k['path']}: {k['reason']}" if k.get("reason") else f"    kept: {k['path']}")
    return EXIT_OK


def _backups_note(state: str, size: int, gc_rec: dict | None) -> str:
    from histmig.apply.gc import UNDOABLE
    from histmig.cli.fmt import fmt_size
    if gc_rec is None:
        return f"backups {fmt_size(size)}"
    return "backups removed by gc" + ("; cannot be undone" if state in UNDOABLE else "")


@click.command("gc")
@click.option("--older-than", default="30d", show_default=True, metavar="AGE",
              help="Only transactions whose journal was last written longer ago than AGE (30d, 12h, 90m, 0).")
@click.option("--apply", "apply", is_flag=True, help="Remove the backups (default: dry run, list them).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_obj
def gc_cmd(ctx: Context, older_than: str, apply: bool, as_json: bool) -> int:
    """Remove the backups of old finished transactions (they can no longer be undone).

    Unfinished transactions (recover needs them), younger ones and the journals themselves are kept;
    `histmig log` keeps listing every transaction.

    \b
    Examples:
      histmig gc                       # dry run: what would go, and what could no longer be undone
      histmig gc --older-than 12h --apply
    """
    from histmig import api
    from histmig.apply.gc import parse_age
    res = api.gc(ctx.homes, parse_age(older_than), apply=apply)
    if as_json:
        emit_json(jsonout.gc_result(res))
        return EXIT_OK
    _render_gc(ctx, res, older_than)
    return EXIT_OK


def _render_gc(ctx: Context, res, older_than: str) -> None:
    from histmig.cli.fmt import fmt_size
    verb = "removed" if res.applied else "would remove"
    for e in res.entries:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(e.last_write_ns / 1e9))
        note = ("can no longer be undone after gc" if e.loses_undo
                else "finishing an interrupted gc" if e.collected_before else f"{e.state}; nothing lost")
        info(ctx, f"{e.txid}  {when}  {e.state:<13} {e.op or '?':<8} {fmt_size(e.backups.bytes):>7} "
                  f"in {e.backups.files} file(s)  {note}")
    lost = sum(e.loses_undo for e in res.entries)
    if res.entries:
        info(ctx, f"{verb} the backups of {len(res.entries)} transaction(s), {fmt_size(res.total_bytes)}"
                  + (f"; {lost} can no longer be undone" if lost else ""))
    else:
        info(ctx, "no backups to remove")
    kept = [f"{res.kept_younger} younger than {older_than}"] if res.kept_younger else []
    if res.kept_unfinished:
        kept.append(f"{len(res.kept_unfinished)} unfinished (run histmig recover): {', '.join(res.kept_unfinished)}")
    if kept:
        info(ctx, complete("kept: " + "; ".join(kept)))
    if not res.applied and res.entries:
        info(ctx, "dry run: nothing was removed; add --apply to remove them")


apply_cmd.name, undo_cmd.name, recover_cmd.name, log_cmd.name = "apply", "undo", "recover", "log"
COMMANDS = [apply_cmd, undo_cmd, log_cmd, recover_cmd]
COMMANDS.append(gc_cmd)

__all__ = ["COMMANDS", "apply_options", "run_plan", "current_options", "RefusedError"]
