"""A session is changed completely or not at all, also across batches: when a file of a session or
project folder is skipped while the apply runs (it changed at its last check, a process opened it
for writing), what earlier batches already wrote of that session or folder is put back before the
apply goes on (docs/safety.md, "What the write path guarantees").

The operations still to come are held back by :func:`histmig.apply.skipping.held_back`; this module
handles those already done. Each one put back gets a ``taken-back`` record in the journal, so recover,
undo and ``log`` count it as not done (:func:`histmig.apply.journal.done_ns`).
"""
from __future__ import annotations

import os

from histmig.apply import rollback
from histmig.apply.files import Ctx
from histmig.apply.journal import TAKEN_BACK
from histmig.apply.options import Prepared
from histmig.apply.skipping import unit_keys
from histmig.core.diagnostics import Skip, Warning


def note_done(ctx: Ctx, prep: Prepared) -> None:
    """Remember a finished file operation under its session and project folder."""
    if prep.method != "sql":          # databases run last, after every file (engine._databases)
        for u in unit_keys(prep):
            ctx.unit_done.setdefault(u, []).append(prep)


def take_back(ctx: Ctx, prep: Prepared, skip: Skip) -> None:
    """``prep`` was just skipped: hold back the rest of its session and project folder, and put back
    what of them is already written (and of the sessions and folders those share an operation with)."""
    back = _finished_mates(ctx, prep)
    if not back:
        return
    reverted, how = rollback.take_back(ctx.fs, ctx.journal.folder, set(back))
    ctx.journal.append_many([(TAKEN_BACK, {"n": n, **({"dirs": dirs} if dirs else {})})
                             for n, dirs in reverted.items()])
    _account(ctx, [back[n] for n in reverted], skip)
    for path, why in [(s.path, s.reason) for s in how.skips] + [(w.path, w.detail) for w in how.warnings]:
        ctx.result.warnings.append(Warning(
            "partly-applied", f"written before {skip.path} of its session was skipped; {why}", path))


def _finished_mates(ctx: Ctx, prep: Prepared) -> dict[int, Prepared]:
    """The finished operations of ``prep``'s units, following every unit they belong to; each unit
    reached is marked skipped (so its operations still to come are held back)."""
    todo, back = list(unit_keys(prep)), {}
    seen = set(todo)
    while todo:
        unit = todo.pop()
        ctx.skipped_units.add(unit)
        for q in ctx.unit_done.pop(unit, ()):
            if q.n not in back:
                back[q.n] = q
                todo += [u for u in unit_keys(q) if u not in seen]
                seen.update(unit_keys(q))
    return back


_WHY = {"db-locked": "stayed locked by another process"}   # else a file that changed at its last check


def _account(ctx: Ctx, preps: list[Prepared], skip: Skip) -> None:
    """The operations put back are skips now, and nothing later refers to their files as written."""
    ns = {p.n for p in preps}
    for p in preps:
        ctx.result.done.remove(p.path)
        if ctx.opts.on_take_back is not None:
            ctx.opts.on_take_back(p.path)
        ctx.result.skips.append(Skip(p.op.paths()[0], f"written, then put back: {skip.path} of its session "
                                     f"{_WHY.get(skip.code, 'changed during the apply')}; re-run the command",
                                     "session-skipped"))
    gone = {p.path for p in preps}
    ctx.replaced = {k: v for k, v in ctx.replaced.items() if v not in gone}
    ctx.settle[:] = [s for s in ctx.settle if s[0] not in ns]
    ctx.dir_times[:] = [t for t in ctx.dir_times if os.path.isdir(t[0])]
    ctx.made_dirs.difference_update([d for d in ctx.made_dirs if not os.path.isdir(d)])
