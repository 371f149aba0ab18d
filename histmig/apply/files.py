"""Pieces of the per-file write protocol (docs/specs/safety.md §1.2) shared by the batch executor
(:mod:`histmig.apply.batch`, which runs them for many files at once, §1.x) and by create/delete/rename:
the execution context, backups, metadata copying, verification by re-reading, append handling.

:func:`histmig.apply.batch.rewrite` and :func:`~histmig.apply.batch.patch_in_place` run it for a single file.
"""
from __future__ import annotations

import errno
import hashlib
import os
import stat
from dataclasses import dataclass, field

from histmig.apply import fsio
from histmig.apply.ranges import prefix_intact, read_range, sha_range
from histmig.apply.content import Window, digest
from histmig.apply.options import ApplyOptions, ApplyResult, Prepared, Stat
from histmig.core.diagnostics import Skip, Warning
from histmig.apply.journal import Journal
from histmig.core.plan import b64

RETRY = object()
_LINK_FALLBACK = (errno.EXDEV, errno.EPERM, errno.EMLINK, errno.ENOTSUP, errno.EACCES)


class VerifyError(OSError):
    pass


@dataclass
class Ctx:
    fs: fsio.FS
    journal: Journal
    opts: ApplyOptions
    result: ApplyResult
    backup: str | None = None     # the backup made by the current attempt (removed if it skips)
    made_dirs: set = field(default_factory=set)   # folders this transaction created
    dir_times: list = field(default_factory=list)  # (folder, atime, mtime) set after every operation
    locked: dict = field(default_factory=dict)    # real path -> FileLock: written only under it (apply/guards.py)
    staging: dict = field(default_factory=dict)   # st_dev -> the journal's temp folder on it (or "")
    swept: float = 0.0            # time.monotonic() of the last /proc scan for open writers
    replaced: dict = field(default_factory=dict)  # (dev, ino) of each replaced file's old inode -> its path
    settle: list = field(default_factory=list)    # (n, path) of each replaced file: stat-ed before commit
    renamed: list = field(default_factory=list)   # (src, dst) of each rename done: where settle finds a file
    skipped_units: set = field(default_factory=set)  # sessions and project folders skipped while applying
    unit_done: dict = field(default_factory=dict)  # session or folder -> its finished file operations (takeback)

    @property
    def txid(self) -> str:
        return self.journal.txid

    def staging_dir(self, dev: int) -> str:
        """The journal's ``t/`` folder when it lies on device ``dev``, else "" (temps then go next
        to their file). rename(2) moves a temp into place atomically from any folder of the same
        file system, and creating files in a fresh folder is about ten times cheaper on ext4 than in
        a long-lived one (a new inode is placed in its parent's block group, which an old folder
        has filled); a crash also leaves nothing beside the user's files."""
        if dev not in self.staging:
            folder = str(self.journal.folder / "t")
            if os.stat(self.journal.folder).st_dev != dev:
                self.staging[dev] = ""
            else:
                if not os.path.isdir(folder):
                    self.fs.mkdir(folder, 0o700, label=folder)
                self.staging[dev] = folder
        return self.staging[dev]

    def warn(self, code: str, detail: str, path: str | None = None) -> None:
        self.result.warnings.append(Warning(code, detail, path))


def pre_state(st: os.stat_result, sha: str | None, fd: int | None) -> dict:
    return {"dev": st.st_dev, "ino": st.st_ino, "size": st.st_size, "mtime_ns": st.st_mtime_ns,
            "atime_ns": st.st_atime_ns, "mode": stat.S_IMODE(st.st_mode), "uid": st.st_uid,
            "gid": st.st_gid, "nlink": st.st_nlink, "sha256": sha,
            "xattrs": {k: b64(v) for k, v in read_xattrs(fd).items()} if fd is not None else {}}


def read_xattrs(fd: int) -> dict[str, bytes]:
    try:
        return {k: os.getxattr(fd, k) for k in os.listxattr(fd)
                if not k.startswith("security.") or os.geteuid() == 0}
    except OSError:
        return {}


# -- replace ----------------------------------------------------------------------------------------
def changed_since_check(ctx: Ctx, prep: Prepared, st: os.stat_result, src: int):
    """The file changed after precheck. A pure append (same inode, longer, old prefix intact) is
    retried with the new tail; anything else skips the file. A ``.zst`` has no appendable tail
    (its patches address the decompressed bytes; precheck refuses a grown one too): skipped."""
    old = prep.st
    if (st.st_dev, st.st_ino) == (old.st_dev, old.st_ino) and st.st_size > old.st_size \
            and prep.plain_sha is None:
        cur = os.fstat(src)
        if prep.pre_sha is not None:
            intact = sha_range(src, 0, old.st_size) == prep.pre_sha
        else:      # a streamed rewrite of a plan applied directly, before its temp was written
            intact = bool(prep.op.expect.spans) and prefix_intact(prep.op, src, old.st_size)
        if intact and cur.st_size >= st.st_size:
            _refresh(ctx, prep, src)
            return RETRY
    return Skip(prep.op.paths()[0], "changed during apply; re-plan", "changed")


def _refresh(ctx: Ctx, prep: Prepared, src: int) -> None:
    prep.st = Stat(os.fstat(src))
    prep.pre_sha, prep.post_sha, prep.post_size = digest(prep, src, prep.st.st_size, ctx.opts)


def salvage(ctx: Ctx, prep: Prepared, dfd: int, src: int, st0, sha: str, size: int, still_held: bool) -> dict:
    """Appends that reached the old inode after our last check: copy their complete lines to the
    new file (docs/specs/safety.md §3.3). The hard-link backup keeps the raw bytes for undo. ``still_held``:
    a writer still has the old inode open (from the batch's scan after the renames)."""
    grown = os.fstat(src).st_size - st0.st_size
    post = {"sha256": sha, "size": size}
    if grown > 0:
        data = os.pread(src, grown, st0.st_size)
        extra = data[:data.rfind(b"\n") + 1]
        if extra:
            out = ctx.opts.transform_tail(prep.op, extra)
            afd = ctx.fs.open_write(prep.name, dir_fd=dfd, flags=os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW
                                    | os.O_CLOEXEC, label=prep.path)
            try:
                ctx.fs.write(afd, out, prep.path)
                ctx.fs.fsync(afd, prep.path)
            finally:
                os.close(afd)
            nfd = fsio.open_read(prep.name, dir_fd=dfd)
            try:
                post = {"sha256": sha_range(nfd, 0, os.fstat(nfd).st_size), "size": os.fstat(nfd).st_size}
            finally:
                os.close(nfd)
            ctx.journal.append("salvaged", n=prep.n, raw=len(extra), post=post)
            ctx.result.salvaged[prep.path] = len(extra)
            ctx.warn("salvaged", f"salvaged {len(extra)} bytes appended during the replace", prep.path)
        if len(extra) < len(data):
            ctx.warn("partial-append", f"{len(data) - len(extra)} bytes of an unfinished line stay in the backup",
                     prep.path)
    if still_held:
        ctx.warn("lost-append-risk", "a process still writes to the replaced file; quit it, then run "
                 "histmig undo to get its appends back from the backup", prep.path)
    return post


def verify(dfd: int, name: str, sha: str, size: int, label: str) -> None:
    """Re-read the (durable) temp once, streaming, and compare size and sha256 with the plan."""
    fd = fsio.open_read(name, dir_fd=dfd)
    try:
        h = hashlib.sha256()
        if os.fstat(fd).st_size == size:
            for chunk in Window(fd, file_size=size).chunks(0, size):
                h.update(chunk)
        if os.fstat(fd).st_size != size or h.hexdigest() != sha:
            raise VerifyError(errno.EIO, "written file does not read back as written", label)
    finally:
        os.close(fd)


def copy_meta(ctx: Ctx, st0, src: int | None, tfd: int, label: str, xattrs: dict | None = None) -> None:
    fs = ctx.fs
    try:
        fs.fchown(tfd, st0.st_uid, st0.st_gid, label + " (temp)")
    except PermissionError:
        try:
            fs.fchown(tfd, -1, st0.st_gid, label + " (temp)")
            ctx.warn("owner-not-kept", f"could not keep owner uid {st0.st_uid} (kept gid {st0.st_gid})", label)
        except PermissionError:
            ctx.warn("owner-not-kept", f"could not keep owner {st0.st_uid}:{st0.st_gid}", label)
    fs.fchmod(tfd, stat.S_IMODE(st0.st_mode), label + " (temp)")
    for k, v in (read_xattrs(src) if xattrs is None else xattrs).items():
        try:
            fs.setxattr(tfd, k, v, label + " (temp)")
        except OSError as e:
            if e.errno not in (errno.ENOTSUP, errno.EPERM, errno.EACCES):
                raise
            ctx.warn("xattr-not-kept", f"could not copy xattr {k} ({e.strerror})", label)


def unlink_quiet(fs: fsio.FS, name: str, dfd: int | None) -> None:
    try:
        os.unlink(name, dir_fd=dfd)  # cleanup is not a counted step: it must not fault
    except FileNotFoundError:
        pass


# -- backups --------------------------------------------------------------------------------------
def make_backup(ctx: Ctx, bname: str, dfd: int, name: str, src: int, st0, sha: str | None,
                sync: bool = True) -> dict:
    """A hard link in the journal's ``b/`` (the old inode itself), else an fsynced, verified copy
    created 0600. A failed copy is removed before the error propagates. ``sync=False``: the caller
    fsyncs ``b/`` once for a whole batch, before any intent of it is journaled."""
    fs, bdir = ctx.fs, str(ctx.journal.backups)
    try:
        fs.link(name, os.path.join(bdir, bname), src_dir_fd=dfd, label=os.path.join(bdir, bname))
        ctx.backup = os.path.join(bdir, bname)
        if sync:
            fs.fsync_dir(bdir)
        return {"name": bname, "kind": "link"}
    except OSError as e:
        if e.errno not in _LINK_FALLBACK:
            raise
    path = os.path.join(bdir, bname)
    bfd = fs.open_write(path)
    try:
        got = hashlib.sha256()
        for chunk in read_range(src, 0, st0.st_size):
            fs.write(bfd, chunk, path)
            got.update(chunk)
        fs.fsync(bfd, path)
        if sha and got.hexdigest() != sha:
            raise VerifyError(errno.EIO, "backup copy differs from the original", path)
    except BaseException:
        os.close(bfd)
        unlink_quiet(fs, path, None)
        raise
    os.close(bfd)
    ctx.backup = path
    if sync:
        fs.fsync_dir(bdir)
    return {"name": bname, "kind": "copy"}
