"""Deleted files, many at once (``undo`` of a ``convert``): the delete protocol of
docs/specs/safety.md §1.2 with the batched durability of §1.x, as :mod:`histmig.apply.batch` does
for rewrites and :mod:`histmig.apply.creates` for new files.

Per batch of deletes (plan order kept):

1. open each file, re-check (dev, ino, size, mtime_ns) against the plan (else the file is skipped
   as changed, and so is the rest of its session in the batch), hash it, make its backup (hard
   link, else a verified copy); one fsync of ``b/``;
2. journal every intent (backup, pre-state) with one write and one fsync;
3. unlink each file;
4. make the unlinks durable together (the touched folders, ``fsync_batch``: one ``syncfs``);
5. journal every ``done`` with one write and one fsync.

Why nothing is lost at any crash point: a file is unlinked only after its backup and its intent
are durable; rollback puts a missing file back from its backup
(:func:`histmig.apply.rollback._revert_delete`) and leaves one still in place alone, and a backup
whose intent never reached the journal is dropped only while its file is unchanged.
"""
from __future__ import annotations

import os

from histmig.apply import fsio
from histmig.apply.files import Ctx, make_backup, pre_state, unlink_quiet
from histmig.apply.options import Prepared, key
from histmig.apply.ranges import sha_range
from histmig.apply.skipping import batch_held
from histmig.core.diagnostics import Skip


def delete_batch(ctx: Ctx, preps: list[Prepared]) -> list[Skip | None]:
    """Delete ``preps``' files; returns each one's outcome (None = deleted, or its Skip), in order."""
    outcome: dict[int, Skip | None] = {}
    dfds: dict[int, int] = {}
    live: list[tuple[Prepared, dict]] = []
    made: list[str] = []
    journaled = False
    try:
        for p in preps:
            dfds[p.n] = dfd = fsio.open_dir(p.root, p.parts)
            ctx.fs.point("before-final-check", p.path)
            src = fsio.open_read(p.name, dir_fd=dfd)
            try:
                st0 = os.fstat(src)
                if key(st0) != key(p.st):
                    outcome[p.n] = Skip(p.op.paths()[0], "changed during apply; re-plan", "changed")
                    continue
                sha = sha_range(src, 0, st0.st_size)
                ctx.backup = None
                backup = make_backup(ctx, f"{p.n}.0", dfd, p.name, src, st0, sha, sync=False)
                made.append(ctx.backup)
                live.append((p, {"n": p.n, "method": "delete", "path": p.path, "backup": backup,
                                 "pre": pre_state(st0, sha, src), "session": p.session}))
            finally:
                os.close(src)
        live = _hold_mates(ctx, preps, live, outcome, made)
        if live:
            ctx.fs.fsync_dir(str(ctx.journal.backups))
        ctx.journal.append_many([("intent", rec) for _p, rec in live])
        journaled = True
        for p, _rec in live:
            ctx.fs.unlink(p.name, dir_fd=dfds[p.n], label=p.path)
        folders: dict[str, int] = {}
        for p, _rec in live:
            folders.setdefault(os.path.dirname(p.path), dfds[p.n])
        if folders:
            ctx.fs.fsync_batch([(fd, folder) for folder, fd in folders.items()])
    except BaseException:
        if not journaled:       # backups no record names: nobody else would ever remove them
            for b in made:
                if b:
                    unlink_quiet(ctx.fs, b, None)
        raise
    finally:
        for fd in dfds.values():
            os.close(fd)
    ctx.journal.append_many([("done", {"n": p.n}) for p, _rec in live])
    return [outcome.get(p.n) for p in preps]


def _hold_mates(ctx: Ctx, preps: list[Prepared], live: list[tuple[Prepared, dict]], outcome: dict,
                made: list[str]) -> list:
    """The rest of a session or project folder one file of the batch was skipped from is not deleted
    either (histmig/apply/skipping.py ``batch_held``); the backups made for them go again."""
    held = batch_held(preps, set(outcome))
    if not held:
        return live
    for (p, _rec), b in zip(live, made):
        if p.n in held:
            outcome[p.n] = held[p.n]
            if b:
                unlink_quiet(ctx.fs, b, None)
    made[:] = [b for (p, _rec), b in zip(live, made) if p.n not in held]
    return [(p, rec) for p, rec in live if p.n not in held]
