"""The rewrite protocol for many files at once (docs/specs/safety.md §1.2 made fast by §1.x).

replace, per batch of files (plan order kept):

1. open each file, re-check (dev, ino, size, mtime_ns), make its backup (hard link, else an
   fsynced copy); one fsync of ``b/``;
2. journal every intent with one write and one fsync (backup durable → intent durable);
3. write each temp ``.<name>.<txid>.histmig-tmp`` (segments: one write per MiB, copy_file_range for
   long unchanged ranges), owner, mode, xattrs, atime/mtime (ns);
4. make every temp durable together (``FS.fsync_batch``: one ``syncfs``; each file still counts as
   its own fsync for faults and crash points);
5. verify each temp by re-reading it (streaming sha256 against the hash precheck computed);
6. a /proc scan for open writers of the batch's files when the last one is ``SWEEP_EVERY`` old or
   more, then per file: re-stat, replace;
7. make the renames durable together (the touched folders, ``fsync_batch``);
8. salvage appends that reached an old inode, journal every ``done`` with one write and one fsync.

After the last batch, one more /proc scan over every replaced file's old inode (:func:`final_sweep`)
warns if a writer still holds one (``lost-append-risk``).

Why each file stays all-old or all-new at any crash point: a temp is renamed only after step 4
made its bytes durable and step 2 made its intent and backup durable; before the rename the target
is untouched, after it the target is the complete verified temp.

The open-writer check: one scan per plan in precheck (skips files held open before we start),
repeated right before a batch's renames once ``SWEEP_EVERY`` has passed since the last one (a scan
reads every process's fd table: 11,149 ``openat`` for 405 files when it ran twice per batch). A
writer that opens a file after the last scan is the race the per-file check could not close either
(it, too, ran before the rename): the re-stat right before the rename sees any write it made,
salvage copies complete lines that reached the old inode, the hard-link backup keeps the raw bytes,
and the scan after the last batch warns if a writer still holds an old inode. The window is at most
``SWEEP_EVERY`` (0: none) plus one batch, not the whole apply.

Putting an inode back (an op's ``restore_from``: undo of a file untouched since the apply, whose
hard-link backup is the original inode, untouched too): step 1 also checks that source (one name,
the file's device, its sha256 and size the result's while its stat held still, the file's ctime
the plan's), the intent names it (``from``, ``from_id``), steps 3 to 5 skip it (nothing is
written), and step 6 renames the source over the file instead of a temp: no byte is copied, and
the file gets its own inode, mode, owner, xattrs and mtime back. Anything else (a source changed,
held open by a writer, on another device) writes the temp as for any rewrite. A rollback first
gives the source its name back (histmig/apply/rollback.py ``_revert_replace``), so the original
inode is never left without one (docs/safety.md "What undo writes").

inplace, per batch: re-stat → one writer scan → intents (one fsync) → pwrite + times → all files
durable together → dones.
"""
from __future__ import annotations

import errno
import os
import stat
import sys
import time
from dataclasses import dataclass

from histmig.apply import fsio
from histmig.apply import zstdfill
from histmig.apply.check import parallel_map
from histmig.apply.content import stream_segments, write_segments
from histmig.apply.creates import batch_size
from histmig.apply.files import (RETRY, Ctx, VerifyError, changed_since_check, unlink_quiet, copy_meta, make_backup,
                                 pre_state, salvage, verify)
from histmig.apply.options import Prepared, key
from histmig.apply.ranges import sha_range
from histmig.core.diagnostics import Skip
from histmig.apply.skipping import batch_held
from histmig.core.livewriters import open_writers
from histmig.core.plan import b64

PARALLEL_MIN = 256 << 10   # files at least this big are filled two at a time
# files per batch: bounds open descriptors (3 per file) and the work a rollback undoes. Sized by the
# open-file limit as creates are (256 under the common soft limit of 1,024, at most 1,024): every
# batch pays five syncs (backups folder, intents, temps, folders, dones) whatever its size, and on a
# disk slow to sync 34 batches of 64 cost a `move` of 2,150 files seconds (docs/move.md).
BATCH = batch_size(per_file=3)
# seconds: a batch's renames re-scan /proc for open writers when the last scan is older. 0: every batch
# scans, so a writer that opened a file during the apply is skipped and named, not salvaged after the
# fact (docs/safety.md); a longer interval saved ~10 % of a flip apply and widened that window to ~1 s.
SWEEP_EVERY = 0.0


@dataclass
class Item:
    prep: Prepared
    dfd: int = -1
    src: int = -1
    tfd: int = -1
    st0: os.stat_result | None = None
    tmp: str = ""
    backup: str | None = None      # path of this attempt's backup
    backup_rec: dict | None = None  # its journal record
    journaled: bool = False
    replaced: bool = False
    outcome: object = None         # None (go on / done), RETRY, or a Skip
    source: os.stat_result | None = None   # put back by renaming ``prep.restore``'s file (checked: this stat)

    @property
    def label(self) -> str:
        return self.prep.path

    @property
    def inode(self) -> tuple[int, int]:
        return self.st0.st_dev, self.st0.st_ino


def replace_batch(ctx: Ctx, preps: list[Prepared]) -> list[Skip | None]:
    """Rewrite ``preps``; returns each one's outcome (None = replaced, or its Skip), in order."""
    results: dict[int, Skip | None] = {}
    pending = list(preps)
    for attempt in range(ctx.opts.append_retries + 1):
        retry = []
        for item in _replace_round(ctx, pending, attempt):
            if item.outcome is RETRY:
                retry.append(item.prep)
                ctx.journal.append("retry", n=item.prep.n, path=item.prep.path)
            else:
                results[item.prep.n] = item.outcome
        pending = retry
        if not pending:
            break
    for p in pending:
        results[p.n] = Skip(p.op.paths()[0], "kept changing during apply; re-run later", "changing")
    return [results[p.n] for p in preps]


def _replace_round(ctx: Ctx, preps: list[Prepared], attempt: int) -> list[Item]:
    items = [Item(p) for p in preps]
    folders: dict[tuple, int] = {}      # one descriptor per folder of the batch, shared by its files
    try:
        live = _open_and_back_up(ctx, items, attempt, folders)
        _check_sources(ctx, live)
        _journal_intents(ctx, live)
        live = _write_temps(ctx, live)
        streamed = [it for it in live if it.prep.streamed and it.source is None]
        _journal_ready(ctx, streamed)       # written here, made durable by the temps' sync just below
        syncs = ([(it.tfd, it.label + " (temp)") for it in live if it.source is None]
                 + ([ctx.journal.sync_item()] if streamed else []))
        if syncs:                           # (none: every file of the batch is put back by a rename)
            ctx.fs.fsync_batch(syncs)
        _close(items, "tfd")
        parallel_map(_verify, [it for it in live if it.source is None and (not it.prep.streamed or it.prep.plain_sha)])
        _replace_all(ctx, live)
        done = [it for it in live if it.replaced]
        _sync_folders(ctx, done)
        dones = []
        for it in done:
            post = salvage(ctx, it.prep, it.dfd, it.src, it.st0, it.prep.post_sha, it.prep.post_size, False)
            ctx.replaced[it.inode] = it.prep.path
            ctx.settle.append((it.prep.n, it.prep.path))
            dones.append(("done", {"n": it.prep.n, "post": post, **_backup_stat(it)}))
        ctx.journal.append_many(dones)
    except BaseException:
        _cleanup(ctx, items)
        raise
    finally:
        for name in ("tfd", "src"):
            _close(items, name)
        for it in items:
            it.dfd = -1
        for fd in folders.values():
            os.close(fd)
    for it in items:
        if it.outcome is not None and it.backup:
            unlink_quiet(ctx.fs, it.backup, None)   # not replaced: a hard-link backup would leave nlink 2
    return items


def _backup_stat(it: Item) -> dict:
    """``bst``: the replaced inode's size, mtime and ctime once it is only the hard-link backup (the
    rename has just moved its ctime). Undo compares the backup with them: unchanged, its bytes are
    the ones hashed while the temp was written, and it is not hashed again
    (histmig/verbs/undo/files.py ``backup_unchanged``)."""
    if (it.backup_rec or {}).get("kind") != "link":
        return {}
    st = os.fstat(it.src)
    return {"bst": [st.st_size, st.st_mtime_ns, st.st_ctime_ns]}


def _open_and_back_up(ctx: Ctx, items: list[Item], attempt: int, folders: dict[tuple, int]) -> list[Item]:
    """Each file opened from its folder's descriptor: a folder is walked (without following
    symlinks, fsio.open_dir) once per batch, not once per file (rollouts share day folders)."""
    live = []
    for it in items:
        p = it.prep
        where = (p.root, p.path.rpartition(os.sep)[0])
        if where not in folders:
            folders[where] = fsio.open_dir(p.root, p.parts)
        it.dfd = folders[where]
        it.src = fsio.open_read(p.name, dir_fd=it.dfd)
        it.st0 = os.fstat(it.src)
        it.tmp = _temp_for(ctx, p, attempt, it.st0)
        if key(it.st0) != key(p.st):
            it.outcome = changed_since_check(ctx, p, it.st0, it.src)
            continue
        ctx.backup = None
        it.backup_rec = make_backup(ctx, f"{p.n}.{attempt}", it.dfd, p.name, it.src, it.st0, p.pre_sha, sync=False)
        it.backup = ctx.backup
        live.append(it)
    if live:
        ctx.fs.fsync_dir(str(ctx.journal.backups))
    return live


def _check_sources(ctx: Ctx, live: list[Item]) -> None:
    """Which files of the batch are put back by renaming their op's ``restore_from`` (module
    docstring): the plan's hash of the file is trusted and its ctime is still the plan's (``st0``,
    taken before this batch linked its backup), and the source is a regular file with one name, on
    the file's device, whose size and sha256 are the result's, its stat the same before and after
    the hash. Any other is written as a temp (``prep.restore`` dropped)."""
    todo = [it for it in live if it.prep.restore is not None]
    for it, st in zip(todo, parallel_map(_source_ok(ctx), todo)):
        if st is None:
            it.prep.restore = None
        else:
            it.source = st
            it.prep.post_sha = it.prep.restore[1]


def _source_ok(ctx: Ctx):
    def check(it: Item) -> os.stat_result | None:
        p = it.prep
        path, sha, size = p.restore
        # (its size is the result's: check.py names a source only then)
        if not ctx.opts.trust_plan_hash or it.st0.st_ctime_ns != p.op.expect.ctime_ns or not _writable(it.dfd):
            return None               # (a folder not writable: the temp path skips the file, naming why)
        try:
            fd = fsio.open_read(path)
        except OSError:
            return None
        try:
            st = os.fstat(fd)
            if (not stat.S_ISREG(st.st_mode) or st.st_nlink != 1 or st.st_dev != it.st0.st_dev
                    or st.st_size != size or sha_range(fd, 0, size) != sha):
                return None
            return st if _source_key(os.lstat(path)) == _source_key(st) == _source_key(os.fstat(fd)) else None
        except OSError:
            return None
        finally:
            os.close(fd)
    return check


def _writable(dfd: int) -> bool:
    """A file can be renamed into the folder open as ``dfd`` (a temp staged elsewhere, a source)."""
    return os.access(".", os.W_OK | os.X_OK, dir_fd=dfd, effective_ids=os.access in os.supports_effective_ids)


def _source_key(st: os.stat_result) -> tuple:
    """What changes when a file is written, renamed, linked or chmodded (ctime cannot be set back)."""
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_nlink


def _temp_for(ctx: Ctx, p: Prepared, attempt: int, st: os.stat_result) -> str:
    """The temp's path: in the journal's staging folder (absolute; ``dir_fd`` ignores it) when it
    is on the file's device, else ``.<name>.<txid>.histmig-tmp`` beside the file. The intent
    records it either way, so rollback finds it."""
    staging = ctx.staging_dir(st.st_dev)
    if staging:
        return os.path.join(staging, f"{p.n}.{attempt}{fsio.TMP_SUFFIX}")
    return fsio.temp_name(p.name, ctx.txid)


def _mtime(it: Item) -> int:
    """The plan's mtime when it names one (undo), else the file's own."""
    return getattr(it.prep.op, "mtime_ns", None) or it.st0.st_mtime_ns


def _journal_intents(ctx: Ctx, live: list[Item]) -> None:
    recs = [("intent", {"n": it.prep.n, "method": "replace", "path": it.prep.path, "tmp": it.tmp,
                        "backup": it.backup_rec, "pre": pre_state(it.st0, it.prep.pre_sha, it.src),
                        "post": {"sha256": it.prep.post_sha, "size": it.prep.post_size},
                        "session": it.prep.session, **_edits(it.prep, it.st0), **_from(it)}) for it in live]
    ctx.journal.append_many(recs)
    for it in live:
        it.journaled = True


def _from(it: Item) -> dict:
    """``from`` and ``from_id``: the file renamed into place and its (dev, ino), for a rollback to give
    it its name back (histmig/apply/rollback.py ``_revert_replace``)."""
    if it.source is None:
        return {}
    return {"from": it.prep.restore[0], "from_id": [it.source.st_dev, it.source.st_ino]}


# The edits an intent journals for undo: a flip's are a few short values per file; a move's, one
# per line of a long transcript, stay out of the journal (undo diffs the file against its backup).
EDITS_MAX, EDITS_BYTES = 64, 4096


def _edits(p: Prepared, st0: os.stat_result) -> dict:
    """``patches``: the rewrite's patches as ``[offset, old, new]`` (base64), when they are all it
    changes (no appended tail, no whole new content, not a ``.zst``) and few: undo of a file that is
    still exactly what the apply left reverses them instead of diffing the file against its backup
    (histmig/verbs/undo/files.py, docs/safety.md "What undo reads")."""
    if (not p.patches or p.content is not None or p.plain_sha or getattr(p.op, "compression", None)
            or p.base_size != st0.st_size or len(p.patches) > EDITS_MAX
            or sum(len(x.old) + len(x.new) for x in p.patches) > EDITS_BYTES):
        return {}
    return {"patches": [[x.offset, b64(x.old), b64(x.new)] for x in p.patches]}


def settle(ctx: Ctx) -> None:
    """``settled``, written just before ``commit`` (made durable by its fsync): every replaced
    file's lstat after the apply's last write to it, and ``t_s``, the wall clock read before those
    stats, with the clock's tick (``res``). Undo trusts a file that still has this stat as the bytes
    the apply wrote only when its ctime is older than ``t_s`` by more than a tick (a write after the
    stat then moves it: git's racy-clean rule) and its mtime is still the one the apply set
    (histmig/verbs/undo/files.py ``as_left``). Not written off Linux (file times there may come
    from another clock than the one measured here)."""
    if not ctx.settle or not sys.platform.startswith("linux"):
        return
    try:       # CLOCK_REALTIME_COARSE (Python names no constant for it): the clock file times come from
        res = max(1, round(time.clock_getres(getattr(time, "CLOCK_REALTIME_COARSE", 5)) * 1e9))
    except OSError:
        return
    t_s = time.time_ns()
    files = []
    for n, path in ctx.settle:
        try:
            st = _settled_stat(path, ctx.renamed)
        except OSError:
            continue
        files.append([n, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns])
    ctx.journal.append_many([("settled", {"t_s": t_s, "res": res, "files": files})], sync=False)


def _settled_stat(path: str, renamed: list[tuple[str, str]]) -> os.stat_result:
    """The replaced file's lstat, found in its folder's new place when a later rename of this apply
    moved the folder (a move renames a Claude project folder after rewriting its sessions): the
    rename leaves the file's inode and times as they were."""
    try:
        return os.lstat(path)
    except FileNotFoundError:
        for src, dst in renamed:
            if path.startswith(src + os.sep):
                path = dst + path[len(src):]
        return os.lstat(path)


def _write_temps(ctx: Ctx, live: list[Item]) -> list[Item]:
    """Create every temp (in plan order), then fill them: small files one by one, big ones two at a
    time (writing and hashing release the GIL; two cores copy the batch in about half the time). A
    fault or crash point can then land on either file of a pair; each file's protocol order is
    unchanged."""
    fs, opened = ctx.fs, []
    for it in live:
        if it.source is not None:
            continue                  # renamed into place by _replace_all: no temp
        try:
            if os.path.isabs(it.tmp) and not _writable(it.dfd):
                # a staged temp could be created, but not renamed into this folder
                raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), it.label)
            it.tfd = fs.open_write(it.tmp, dir_fd=it.dfd, label=it.label + " (temp)")
        except PermissionError as e:
            it.outcome = Skip(it.prep.op.paths()[0], f"cannot create temp ({errno.errorcode[e.errno]})", "no-temp")
            continue
        opened.append(it)
    small = [it for it in opened if it.st0.st_size < PARALLEL_MIN]
    for it in small:                  # in plan order: thread start-up would cost more than it saves
        _fill_temp(ctx, it)
    parallel_map(lambda it: _fill_temp(ctx, it), [it for it in opened if it.st0.st_size >= PARALLEL_MIN], workers=2)
    return [it for it in live if it.outcome is None]      # (a temp not made: its Skip is the outcome)


def _fill_temp(ctx: Ctx, it: Item) -> None:
    fs, p, label = ctx.fs, it.prep, it.label + " (temp)"
    if p.streamed:
        if p.plain_sha:
            pre, post, size = zstdfill.fill(fs, p, it.src, it.tfd, it.st0.st_size, ctx.opts, label)
        else:      # the source's hash is the plan's when the plan read it whole (undo): not hashed again
            known = p.pre_sha if ctx.opts.trust_plan_hash else None
            pre, post, size = stream_segments(fs, p, it.src, it.tfd, it.st0.st_size, ctx.opts, label, pre_sha=known)
        if p.pre_sha is not None and pre != p.pre_sha:   # the plan's: same ctime, other bytes (cannot happen)
            os.close(it.tfd)
            it.tfd = -1
            unlink_quiet(fs, it.tmp, it.dfd)
            it.outcome = Skip(p.op.paths()[0], "content changed since plan (sha256); re-plan", "changed")
            return
        p.pre_sha, p.post_sha = pre, post
        if p.plain_sha:                 # recompressed: its size is known only now
            p.post_size = size
    else:
        size = write_segments(fs, p, it.src, it.tfd, it.st0.st_size, ctx.opts, label)
    if size != p.post_size:
        raise VerifyError(errno.EIO, "new content differs from the planned result", it.label)
    fsio.start_writeback(it.tfd)
    copy_meta(ctx, it.st0, it.src, it.tfd, it.label)
    fs.utime(it.tfd, (it.st0.st_atime_ns, _mtime(it)), label)


def _verify(it: Item) -> None:
    """Re-read a durable temp: against the precheck's hash, or for a recompressed ``.zst`` against
    the hash written and the patched content it must decompress to."""
    if it.prep.plain_sha:
        zstdfill.verify(it.dfd, it.tmp, it.prep, it.label)
    else:
        verify(it.dfd, it.tmp, it.prep.post_sha, it.prep.post_size, it.label)


def _journal_ready(ctx: Ctx, streamed: list[Item]) -> None:
    """The written hash of each streamed temp, durable before its rename: recover and undo compare
    the file with it (the intent was journaled before the temp existed, without it). Written
    without an fsync of its own: the caller's batch sync of the temps includes the journal
    (docs/safety.md, "What the write path guarantees"), and every rename comes after that sync."""
    if streamed:
        ctx.journal.append_many([("ready", {"n": it.prep.n, "pre_sha256": it.prep.pre_sha,
                                            "post": {"sha256": it.prep.post_sha, "size": it.prep.post_size}})
                                 for it in streamed], sync=False)


def _replace_all(ctx: Ctx, live: list[Item]) -> None:
    """The last checks, then the renames. Every file of the batch is checked before the first rename,
    so a file that changed holds back the rest of its session or project folder in the batch too
    (:func:`~histmig.apply.skipping.batch_held`: a session is changed completely or not at all). The
    writer scan, when due (``SWEEP_EVERY``), runs once, right before the checks."""
    fs = ctx.fs
    holders = {}
    if live and time.monotonic() - ctx.swept >= SWEEP_EVERY:
        holders = open_writers([it.inode for it in live]
                               + [(it.source.st_dev, it.source.st_ino) for it in live if it.source is not None])
        ctx.swept = time.monotonic()
    for it in live:
        _final_check(ctx, it, holders)
    held = batch_held([it.prep for it in live], {it.prep.n for it in live if isinstance(it.outcome, Skip)})
    for it in live:
        if it.outcome is None and it.prep.n in held:
            unlink_quiet(fs, it.tmp, it.dfd)
            it.outcome = held[it.prep.n]
    for it in live:
        if it.outcome is not None:
            continue
        fs.point("before-replace", it.label)
        if it.source is None:
            fs.replace(it.tmp, it.prep.name, dir_fd=it.dfd, label=it.label)
        elif not _rename_source(fs, it, holders):
            it.prep.restore, it.outcome = None, RETRY      # written as a temp in the next round
            continue
        it.replaced = True
        fs.point("after-replace", it.label)


def _final_check(ctx: Ctx, it: Item, holders: dict) -> None:
    """The file is still the one the batch read, and no process holds it open for writing: else its
    temp goes and ``it.outcome`` says why."""
    p = it.prep
    ctx.fs.point("before-final-check", it.label)
    st1 = os.stat(p.name, dir_fd=it.dfd, follow_symlinks=False)
    who = holders.get(it.inode)
    if key(st1) == key(it.st0) and not who:
        return
    unlink_quiet(ctx.fs, it.tmp, it.dfd)
    if who:
        it.outcome = Skip(p.op.paths()[0], f"open for writing by {', '.join(h.describe() for h in who)}; "
                          "quit it and re-run", "open-writer")
    else:
        it.outcome = changed_since_check(ctx, p, st1, it.src)


def _rename_source(fs, it: Item, holders: dict) -> bool:
    """Rename the source over the file when it is still the file :func:`_check_sources` hashed and no
    process holds it open for writing (its appends would then land in the restored file). False:
    not renamed (it changed, is held, or the folders refuse the rename: permissions, another mount of
    the file system), for the caller to write the file as a temp in the next round."""
    try:
        st = os.lstat(it.prep.restore[0])
    except OSError:
        return False
    if _source_key(st) != _source_key(it.source) or (st.st_dev, st.st_ino) in holders:
        return False
    try:
        fs.replace(it.prep.restore[0], it.prep.name, dir_fd=it.dfd, label=it.label)
    except OSError as e:
        if e.errno not in (errno.EACCES, errno.EPERM, errno.EXDEV, errno.EROFS):
            raise
        return False
    return True


def final_sweep(ctx: Ctx) -> None:
    """After the last batch: one /proc scan for writers that still hold a replaced file's old inode
    (their appends reach the backup, not the new file; undo gets them back)."""
    if ctx.replaced:
        for inode in open_writers(list(ctx.replaced)):
            ctx.warn("lost-append-risk", "a process still writes to the replaced file; quit it, then run "
                     "histmig undo to get its appends back from the backup", ctx.replaced[inode])


def _sync_folders(ctx: Ctx, done: list[Item]) -> None:
    seen: dict[str, int] = {}
    for it in done:
        seen.setdefault(os.path.dirname(it.label), it.dfd)
    # the folders a source left (renamed into place): their entries are gone
    left = {os.path.dirname(it.prep.restore[0]) for it in done if it.source is not None}
    opened = [(os.open(d, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC), d) for d in sorted(left)]
    try:
        ctx.fs.fsync_batch([(fd, folder) for folder, fd in seen.items()] + opened)
    finally:
        for fd, _d in opened:
            os.close(fd)


def _cleanup(ctx: Ctx, items: list[Item]) -> None:
    """After an error: remove temps that were not renamed, and backups the journal does not know
    (nobody would ever remove those). Journaled ones are the rollback's job."""
    for it in items:
        if it.dfd >= 0 and it.tmp and not it.replaced:
            unlink_quiet(ctx.fs, it.tmp, it.dfd)
        if it.backup and not it.journaled:
            unlink_quiet(ctx.fs, it.backup, None)


def _close(items: list[Item], name: str) -> None:
    for it in items:
        fd = getattr(it, name)
        if fd >= 0:
            os.close(fd)
            setattr(it, name, -1)


# -- in place -------------------------------------------------------------------------------------
def inplace_batch(ctx: Ctx, preps: list[Prepared]) -> list[Skip | None]:
    """Same-length patches written into the file itself (inode, hard links and an agent's open fd
    survive): original bytes journaled and durable first, SQLite's rollback-journal order."""
    items = [Item(p) for p in preps]
    fs = ctx.fs
    try:
        for it in items:
            it.dfd = fsio.open_dir(it.prep.root, it.prep.parts)
            fs.point("before-final-check", it.label)
            it.st0 = os.stat(it.prep.name, dir_fd=it.dfd, follow_symlinks=False)
            if key(it.st0) != key(it.prep.st):
                it.outcome = Skip(it.prep.op.paths()[0], "changed during apply; re-plan", "changed")
        holders = open_writers([it.inode for it in items if it.outcome is None])
        for it in items:
            if it.outcome is None and it.inode in holders:
                it.outcome = Skip(it.prep.op.paths()[0], "open for writing; quit it and re-run", "open-writer")
        held = batch_held([it.prep for it in items], {it.prep.n for it in items if it.outcome is not None})
        for it in items:
            it.outcome = it.outcome or held.get(it.prep.n)
        live = [it for it in items if it.outcome is None]
        for it in live:
            it.tfd = fs.open_write(it.prep.name, dir_fd=it.dfd, flags=os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC,
                                   label=it.label)
        post = {it.prep.n: {"sha256": it.prep.post_sha, "size": it.prep.post_size} for it in live}
        ctx.journal.append_many([("intent", {
            "n": it.prep.n, "method": "inplace", "path": it.prep.path,
            "spans": [{"offset": p.offset, "old": b64(p.old), "new": b64(p.new)} for p in it.prep.patches],
            "pre": pre_state(it.st0, it.prep.pre_sha, None), "post": post[it.prep.n],
            "session": it.prep.session}) for it in live])
        for it in live:
            for p in it.prep.patches:
                fs.pwrite(it.tfd, p.new, p.offset, it.label)
            fs.utime(it.tfd, (it.st0.st_atime_ns, _mtime(it)), it.label)
        fs.fsync_batch([(it.tfd, it.label) for it in live])
        ctx.journal.append_many([("done", {"n": it.prep.n, "post": post[it.prep.n]}) for it in live])
    finally:
        _close(items, "tfd")
        _close(items, "dfd")
    return [it.outcome for it in items]


def rewrite(ctx: Ctx, prep: Prepared) -> Skip | None:
    """Replace one file (a batch of one)."""
    return replace_batch(ctx, [prep])[0]


def patch_in_place(ctx: Ctx, prep: Prepared) -> Skip | None:
    """Patch one file in place (a batch of one)."""
    return inplace_batch(ctx, [prep])[0]
