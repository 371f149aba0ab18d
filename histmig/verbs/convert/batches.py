"""A whole ``convert`` run: which sessions, ``--strict``, and the three ways the sessions flow.

- :func:`whole_plan`: one plan holding every new file's bytes (``--plan-out``; each file capped at
  ``BATCH_BYTES``);
- :func:`stream` without apply: a dry run, lines only counted and hashed, nothing written;
- :func:`stream` with apply: lines spooled under ``<state>/spool/<run>/`` one at a time and applied in
  transactions of at most ``BATCH_BYTES`` of new data and ``BATCH_SESSIONS`` sessions, so memory never
  grows with the run; small files are held in memory instead, within a budget per batch (``sink.Hold``:
  ``HOLD_BYTES``).

The caller sees each session's outcome as it is decided (``on_outcome``) and may apply each batch
itself (``apply_batch``); the loop over sessions and batches is here, never in the CLI.
"""
from __future__ import annotations

import functools
from dataclasses import field
from pathlib import Path
from typing import Any, Callable, Iterable

from histmig.core.diagnostics import EXIT_OK, EXIT_SKIPPED, RefusedError, UsageError
from histmig.core.model import SessionRef
from histmig.core.plan import Plan
from histmig.toolkit.convert.sink import Hold, Sink, SpoolDir
from histmig.toolkit.convert.loss import LossReport
from histmig.verbs.convert import (ConvertOptions, Outcome, Run, add_outcome, iter_convert, new_plan,
                                     set_loss)
from histmig.verbs.convert import select
from histmig.verbs.convert.shared import converted
from histmig.core.valueclass import FACTORY, value

BATCH_BYTES = 64 * 1024 * 1024   # one transaction holds at most this much new data (bounded memory)
BATCH_SESSIONS = 1000            # and at most this many sessions: each one's operations are held until its batch
# converted files of at most HOLD_FILE_BYTES stay in memory, up to HOLD_BYTES of them per batch in this
# process (and as much again over a forked worker's life, verbs/convert/shared.py); the rest are spooled
HOLD_BYTES, HOLD_FILE_BYTES = 8 << 20, 256 << 10

OnOutcome = Callable[[Outcome], None]


class LossyError(RefusedError):
    """``--strict``: some conversion would lose content; nothing was written. ``lossy`` names them."""

    def __init__(self, lossy: list[Outcome]):
        super().__init__(f"--strict: {len(lossy)} conversion(s) would lose content; nothing written")
        self.lossy = lossy


@value
class Converted:
    """What a streamed run did: ``total`` sums every session (its operations are not kept),
    ``transactions`` holds the apply results when the library applied the batches itself."""

    total: Plan
    code: int = EXIT_OK
    transactions: list[dict[str, Any]] = field(default_factory=list)

    def __init__(self, total: Plan, code: int = EXIT_OK, transactions: list[dict[str, Any]] = FACTORY) -> None:
        self.total = total
        self.code = code
        self.transactions = [] if transactions is FACTORY else transactions

    @property
    def exit_code(self) -> int:
        return max(self.code, EXIT_SKIPPED if self.total.skips else EXIT_OK)


def choose(homes: Any, target: str, sessions: Iterable[str] = (), *, from_tool: str | None = None,
           cwd: str | None = None, all_: bool = False) -> list[SessionRef]:
    """The sessions a run takes: named ones, ``--from TOOL [--cwd PATH]``, or ``--all``."""
    sessions = list(sessions)
    if sum(map(bool, (sessions, all_))) != 1 and not from_tool:
        raise UsageError("name sessions, or use --from TOOL [--cwd PATH], or --all")
    if sessions and all_:
        raise UsageError("--all and named sessions do not mix")
    if cwd and not from_tool and not all_:
        raise UsageError("--cwd needs --from TOOL or --all")
    tools = select.tools_for(from_tool, target)
    if sessions:
        return select.resolve(homes, sessions, tools)
    if cwd:
        return list(select.by_cwd(select.discover(homes, tools), cwd))
    return list(select.files(homes, tools))      # read once, when converted (select.files)


def refuse_lossy(homes: Any, refs: list[SessionRef], opts: ConvertOptions) -> None:
    """--strict: a first pass that only measures loss, so nothing is written when one is lossy."""
    counted = Run(homes, opts, functools.partial(Sink, "count"))
    lossy = [o for o, _ in converted(counted, refs) if o.status == "convert" and o.loss.lossy]
    if lossy:
        raise LossyError(lossy)


def _run(homes: Any, opts: ConvertOptions, sink: Callable[[], Sink]) -> Run:
    run = Run(homes, opts, sink)
    if run.tables is not None:
        run.warnings += run.tables.warnings
    return run


def _check_named(out: Outcome, named: bool) -> None:
    if named and out.code == "invalid-session-id":
        raise RefusedError(f"invalid session id in {out.source_path}")


def whole_plan(homes: Any, refs: list[SessionRef], opts: ConvertOptions, *, named: bool = False,
               on_outcome: OnOutcome | None = None) -> Plan:
    """The plan file carries every new file's bytes: kept in memory, each up to BATCH_BYTES."""
    run = _run(homes, opts, functools.partial(Sink, "memory", cap=BATCH_BYTES))
    plan, loss = new_plan(run), LossReport()
    for out, ops in iter_convert(run, refs):
        _check_named(out, named)
        add_outcome(plan, out, ops, loss)
        if on_outcome:
            on_outcome(out)
    plan.warnings += run.warnings
    return set_loss(plan, loss)


def plan_convert(homes: Any, refs: Iterable[SessionRef], opts: ConvertOptions) -> tuple[Plan, list[Outcome]]:
    """:func:`whole_plan` with every session's outcome (small runs and tests)."""
    outcomes: list[Outcome] = []
    return whole_plan(homes, list(refs), opts, on_outcome=outcomes.append), outcomes


def stream(homes: Any, refs: list[SessionRef], opts: ConvertOptions, *, apply: bool, named: bool = False,
           on_outcome: OnOutcome | None = None, apply_batch: Callable[[Plan], int] | None = None,
           options: Any = None) -> Converted:
    """A dry run (apply=False: nothing at all is written) or an apply in batches. ``apply_batch(plan)``
    applies one batch and returns its exit code; by default :func:`histmig.apply.apply_plan` with
    ``options``, its results kept in ``Converted.transactions``."""
    if not apply:    # a dry run writes nothing at all: lines are only counted and hashed
        return _stream(homes, refs, opts, functools.partial(Sink, "count"), False, named, on_outcome, None, options)
    spool = SpoolDir(homes.state)   # <state>/spool/<run>/: one line at a time, never a large file in memory
    try:
        hold = Hold(HOLD_BYTES, HOLD_FILE_BYTES)
        sink = functools.partial(Sink, "spool", spool.path, hold=hold)
        return _stream(homes, refs, opts, sink, True, named, on_outcome, apply_batch, options, hold)
    finally:
        spool.close()


def _stream(homes, refs, opts, sink, apply: bool, named: bool, on_outcome, apply_batch, options,
            hold: Hold | None = None) -> Converted:
    run = _run(homes, opts, sink)
    done, loss = Converted(new_plan(run)), LossReport()
    batch, batch_loss, size = new_plan(run), LossReport(), 0
    for out, ops in converted(run, refs):     # on two CPUs when there are many (verbs/convert/shared.py)
        _check_named(out, named)
        add_outcome(done.total, out, [], loss)
        if on_outcome:
            on_outcome(out)
        if apply and ops:
            add_outcome(batch, out, ops, batch_loss)
            size += out.bytes
            if size >= BATCH_BYTES or batch.summary["converted"] >= BATCH_SESSIONS:
                done.code = max(done.code, _apply(homes, set_loss(batch, batch_loss), apply_batch, options, done))
                batch, batch_loss, size = new_plan(run), LossReport(), 0
                if hold is not None:
                    hold.release()
    if apply and batch.operations:
        done.code = max(done.code, _apply(homes, set_loss(batch, batch_loss), apply_batch, options, done))
    done.total.warnings += run.warnings
    set_loss(done.total, loss)
    return done


def _apply(homes: Any, plan: Plan, apply_batch, options, done: Converted) -> int:
    try:
        if apply_batch is not None:
            return apply_batch(plan)
        from histmig.apply import apply_plan
        from histmig.tools import guards_for
        res = apply_plan(plan, homes, options=options, guards=guards_for(homes))
        done.transactions.append(res.to_dict())
        return res.exit_code
    finally:    # this batch's spool files are copied (or rolled back): free the disk for the next one
        for op in plan.operations:
            if getattr(op, "data_path", None):
                Path(op.data_path).unlink(missing_ok=True)
