"""New files, many at once (``convert``): the create protocol of docs/specs/safety.md §1.2 with the
batched durability of §1.x, as :mod:`histmig.apply.batch` does for rewrites.

Per batch of creates (plan order kept):

1. journal every intent (path, folders it makes, temp name, the new hash and size) with one write
   and one fsync;
2. make the missing folders (each made durable in its parent, as before);
3. write each temp ``.<name>.<txid>.histmig-tmp`` beside its file (the plan's bytes; a spool file
   is renamed to the temp's name, or copied and hashed on the way from another file system), mode
   and times;
4. make every temp durable together (``FS.fsync_batch``: one ``syncfs``; each file still counts
   as its own fsync for faults and crash points);
5. verify each temp by re-reading it (size and sha256 against the intent);
6. rename each temp to its name, never replacing (a file that appeared meanwhile refuses the
   apply, which rolls back);
7. make the renames durable together (the touched folders, ``fsync_batch``);
8. journal every ``done`` with one write, not synced: the next batch's intent fsync or the
   ``commit`` record's fsync (the same file, so every earlier byte of it) makes them durable before
   anything depends on them. A power loss that drops them leaves the transaction unfinished, and
   recover then reverts these creates exactly as after a crash just before step 8: a create's
   revert needs only its intent (temp name, path, new hash), never its ``done``.

Why each file is absent or complete at any crash point: a temp is renamed only after step 4 made
its bytes durable and step 1 made its intent durable; rollback removes the journaled temp and a
created file whose bytes are still the intent's hash (:func:`histmig.apply.rollback._revert_create`).
"""
from __future__ import annotations

import errno
import os
import time

from histmig.apply import fsio
from histmig.apply.check import WORKERS, parallel_map
from histmig.apply.files import Ctx, unlink_quiet, verify
from histmig.apply.options import Prepared
from histmig.apply.tree import copy_spool, make_dirs
from histmig.core.diagnostics import RefusedError, Skip


def batch_size(soft_nofile: int | None = None, *, per_file: int = 2) -> int:
    """Creates per batch (3 syncs each, whatever its size). A batch holds one open descriptor per
    file plus one per folder until its syncs, so it takes at most half of the descriptors the
    process may open, less a reserve for the rest of the run: 384 under the common soft limit of
    1,024, at most 1,024 (500 converted sessions are then one batch: 3 syncs instead of 6).
    ``per_file``: descriptors a file of the batch may hold (a rewrite holds 3: source, temp and
    its folder's; histmig/apply/batch.py)."""
    if soft_nofile is None:
        try:
            import resource
            soft_nofile = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        except (ImportError, OSError, ValueError):
            soft_nofile = 1024
    if soft_nofile < 0:          # RLIM_INFINITY
        return MAX_BATCH
    return max(MIN_BATCH, min(MAX_BATCH, (soft_nofile - FD_RESERVE) // per_file))


MIN_BATCH, MAX_BATCH, FD_RESERVE = 64, 1024, 256
BATCH = batch_size()
# the temps are re-read on threads only when a batch holds at least SERIAL_BYTES and its files average
# SERIAL_AVG or more: small files cost the threads more than the reading and hashing they would share
# (a batch of 256 files under 4 MiB was the measured bound; larger batches keep that average)
SERIAL_BYTES, SERIAL_AVG = 4 << 20, 16 << 10
# a temp this large starts its writeback as soon as it is filled (the disk works while the next ones
# are written); a smaller one waits for the batch's syncfs: writing back a few KB at a time cost more
# than the file's whole write (each small writeback also slowed the next temp's creation)
WRITEBACK_BYTES = 1 << 20


def create_batch(ctx: Ctx, preps: list[Prepared]) -> list[Skip | None]:
    """Create ``preps``' files; returns each one's outcome (always None: a create either happens or
    refuses the whole apply, as a single create does)."""
    fs = ctx.fs
    for p in preps:
        if p.op.sha256 is not None and p.op.data_path is None:
            raise RefusedError(f"{p.path}: planned without its data (a dry run's plan); nothing written")
    items = _intents(ctx, preps)
    dfds: list[int] = []
    opened: dict[tuple, int] = {}     # one descriptor per folder, shared by the batch's files in it
    tfds: list[int] = []
    try:
        for p, dirs, _tmp, _sha, _size in items:
            make_dirs(ctx, dirs, p.op.dir_mode)
        for p, _dirs, tmp, sha, size in items:
            key = (p.root, tuple(p.parts))
            if key not in opened:
                opened[key] = fsio.open_dir(p.root, p.parts)
            dfds.append(opened[key])
            tfds.append(_fill(ctx, dfds[-1], tmp, p, sha, size))
        fs.fsync_batch([(fd, p.path + " (temp)") for fd, (p, *_) in zip(tfds, items)])
        _close(tfds)
        # small files: threads cost more than the reading and hashing they would share
        total = sum(it[4] for it in items)
        workers = 1 if total < max(SERIAL_BYTES, len(items) * SERIAL_AVG) else WORKERS
        parallel_map(lambda i: verify(dfds[i], items[i][2], items[i][3], items[i][4], items[i][0].path),
                     list(range(len(items))), workers=workers)
        for dfd, (p, _dirs, tmp, _sha, _size) in zip(dfds, items):
            try:
                fs.rename_noreplace(tmp, p.name, src_dir_fd=dfd, dst_dir_fd=dfd, label=p.path)
            except FileExistsError:
                unlink_quiet(fs, tmp, dfd)
                raise RefusedError(f"{p.path} appeared during apply; nothing replaced") from None
        folders: dict[str, int] = {}
        for dfd, (p, *_) in zip(dfds, items):
            folders.setdefault(os.path.dirname(p.path), dfd)
        fs.fsync_batch([(fd, folder) for folder, fd in folders.items()])
    finally:
        _close(tfds)
        _close(list(opened.values()))
    ctx.journal.append_many([("done", {"n": p.n, "post": {"sha256": sha, "size": size}})
                             for p, _dirs, _tmp, sha, size in items], sync=False)   # step 8: why no fsync
    return [None] * len(preps)


def _intents(ctx: Ctx, preps: list[Prepared]) -> list[tuple]:
    """Journal every intent of the batch (one fsync). Each folder is journaled by the first
    operation that makes it (two new files in one new folder: the first one's)."""
    items, claimed = [], set(ctx.made_dirs)
    for p in preps:
        dirs = [d for d in p.dirs if d not in claimed]
        claimed.update(dirs)
        items.append((p, dirs, fsio.temp_name(p.name, ctx.txid), p.op.digest(), p.op.nbytes))
    ctx.journal.append_many([("intent", {"n": p.n, "method": "create", "path": p.path, "dirs": dirs, "tmp": tmp,
                                         "post": {"sha256": sha, "size": size}, "session": p.session})
                             for p, dirs, tmp, sha, size in items])
    return items


def _fill(ctx: Ctx, dfd: int, tmp: str, p: Prepared, sha: str, size: int) -> int:
    """The temp with the new bytes, mode and times, not yet durable; its open descriptor."""
    fs, op, label = ctx.fs, p.op, p.path + " (temp)"
    tfd = _adopt_spool(ctx, dfd, tmp, p) if op.data_path is not None else -1
    try:
        if tfd < 0:
            tfd = fs.open_write(tmp, dir_fd=dfd, label=label)
            if op.data_path is None:
                fs.write(tfd, op.data, label)
            else:
                copy_spool(fs, op.data_path, tfd, sha, size, p.path)
        fs.fchmod(tfd, op.mode, label)
        now = time.time_ns()
        fs.utime(tfd, (now, op.mtime_ns or now), label)
        if size >= WRITEBACK_BYTES:
            fsio.start_writeback(tfd)
    except BaseException:
        if tfd >= 0:
            os.close(tfd)
        unlink_quiet(fs, tmp, dfd)
        raise
    return tfd


def _adopt_spool(ctx: Ctx, dfd: int, tmp: str, p: Prepared) -> int:
    """The spool file itself becomes the temp when it is on the same file system (a rename: no
    copy, and its bytes reach the disk once, with the batch's ``syncfs``); -1 when it is not
    (EXDEV: copied instead). Its bytes are still checked against the intent's hash by
    :func:`histmig.apply.files.verify` before the temp can take its name."""
    try:
        ctx.fs.rename_noreplace(p.op.data_path, tmp, dst_dir_fd=dfd, label=p.path + " (temp)")
    except OSError as e:
        if e.errno != errno.EXDEV:
            raise
        return -1
    return os.open(tmp, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dfd)


def _close(fds: list[int]) -> None:
    while fds:
        fd = fds.pop()
        if fd >= 0:
            os.close(fd)
