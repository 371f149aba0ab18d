"""Sessions converted on two CPUs, with the outcomes of converting them one after the other.

:func:`converted` is :func:`histmig.verbs.convert.iter_convert` shared with one forked worker
(``fork_stream``, histmig/core/forkmap.py): each process takes the next session when free, reads,
maps and renders it (into its own spool files, named by its pid), and this process receives every
outcome in the sessions' order, so batching, applying and printing stay here and stay sequential.

What a sequential run carries from one session to the next is re-established in that order:

- the run's warnings (``run.warnings``): each session's own are taken out and handed over with it;
- "already converted in this run": each process only knows its own conversions, so a session whose
  source was converted by an *earlier* session of the run is converted again here, in order, once
  this process's index holds the earlier conversion (its spool files are dropped): the outcome is then
  exactly the sequential one (``already``, naming the earlier file);
- an error (a full spool disk): raised when its session's turn comes, never earlier.

Not shared: a target with tables (a Codex ``threads`` row, OpenCode rows, Gemini project markers keep
state across sessions), seeded ids (tests: one generator, drawn in order), small runs (a fork costs
more than it saves), and a run on a machine with no CPU to spare (as many tasks ready to run as it
has CPUs, this one included: :func:`spare_cpu`): there the worker only competes for the same CPUs,
and the fork, its copied pages and the pickled outcomes cost ~15 % more CPU for no gain in time
(docs/bench.md, "convert").
"""
from __future__ import annotations

import os
from typing import Any, Iterator

from histmig.core.model import SessionRef
from histmig.core.plan import Op
from histmig.verbs.convert import Outcome, Run, convert_one, iter_convert

MIN_SESSIONS = 24       # below this a run converts here alone (a fork and its pipe cost ~5-10 ms)


def converted(run: Run, refs: list[SessionRef]) -> Iterator[tuple[Outcome, list[Op]]]:
    if len(refs) < MIN_SESSIONS or run.tables is not None or run.opts.seed is not None or not spare_cpu():
        yield from iter_convert(run, refs)
        return
    from histmig.core.forkmap import fork_stream
    here = os.getpid()

    def one(ref: SessionRef) -> Iterator[Any]:
        n = len(run.warnings)
        try:
            out, ops = convert_one(run, ref)
        except BaseException as e:  # noqa: BLE001 - re-raised in order (below); the worker's: redone here
            if os.getpid() != here:
                raise
            yield _Raised(e)
            return
        warnings = run.warnings[n:]
        del run.warnings[n:]
        yield out, ops, warnings

    done: dict[tuple[str, str], str] = {}     # this run's conversions so far, in the sessions' order
    events = fork_stream(one, refs, [1] * len(refs), min_weight=MIN_SESSIONS)
    try:
        for got, ref in zip(events, refs):     # the stream first: its end is taken (worker waited for)
            ev = next(iter(got))
            if isinstance(ev, _Raised):
                raise ev.error
            out, ops, warnings = ev
            key = (out.tool, out.source_id)
            if key in done and not run.opts.again and out.status in ("convert", "already"):
                _drop(ops)
                run.index.add(*key, done[key])
                out, ops = convert_one(run, ref)        # as in sequence: "already", naming the earlier file
            else:
                run.warnings += warnings
            if out.status == "convert" and out.paths:
                done[key] = out.paths[-1]
                run.index.add(*key, out.paths[-1])
            yield out, ops
    finally:
        events.close()


def spare_cpu() -> bool:
    """Whether a second process would find a CPU to itself: fewer tasks ready to run than CPUs, this
    process included, at the least of three looks (``/proc/loadavg``'s runnable count: machine-wide,
    as the load average is, so a container limited to some CPUs of a busy host rarely shares). The last
    minute's load average, the test before and the fallback where that count cannot be read, still
    counts processes that ended seconds ago: a run right after a busy command converted alone, 0.37 s
    against 0.33 s for 500 sessions (docs/bench.md, the run 22 paragraph)."""
    from histmig.core.forkmap import cpus
    try:
        least = min(runnable() for _ in range(3))
        if least >= 1:          # 0: a /proc that does not count (gVisor, WSL 1), as if unreadable
            return least < cpus()
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.getloadavg()[0] < cpus() - 0.5
    except OSError:
        return True


def runnable() -> int:
    """Tasks running or ready to run on the machine now, this one included (Linux)."""
    with open("/proc/loadavg", "rb") as f:
        return int(f.read().split()[3].split(b"/")[0])


class _Raised:
    def __init__(self, error: BaseException):
        self.error = error


def _drop(ops: list[Op]) -> None:
    """The spool files of a conversion that is not kept."""
    for op in ops:
        if getattr(op, "data_path", None):
            try:
                os.unlink(op.data_path)
            except FileNotFoundError:
                pass
