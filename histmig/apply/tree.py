"""Create, rename (never replacing; EXDEV → copy, verify, delete), delete and rmdir, through the facade."""
from __future__ import annotations

import errno
import hashlib
import os
import stat
import time

from histmig.apply import fsio
from histmig.apply.ranges import sha_range
from histmig.apply.files import Ctx, VerifyError, unlink_quiet, make_backup, pre_state, verify
from histmig.apply.options import Prepared, key
from histmig.core.diagnostics import RefusedError, Skip
from histmig.core.plan import CreateFile


def dirs_to_make(ctx: Ctx, prep: Prepared) -> list[str]:
    """Planned folders minus those an earlier operation of this transaction already created
    (two new files in one new folder); each folder is journaled by the operation that makes it."""
    return [d for d in prep.dirs if d not in ctx.made_dirs]


def make_dirs(ctx: Ctx, dirs: list[str], mode: int | None = None) -> None:
    """Create ``dirs`` (outermost first). ``mode`` None: 0777 minus the umask, like the agents' own
    folders; otherwise exactly ``mode`` (set with fchmod, so the umask cannot narrow it)."""
    for d in dirs:
        ctx.fs.mkdir(d, 0o777 if mode is None else mode, label=d)
        ctx.made_dirs.add(d)
        if mode is not None:
            fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
            try:
                ctx.fs.fchmod(fd, mode, d)
            finally:
                os.close(fd)
        ctx.fs.fsync_dir(os.path.dirname(d))


def create(ctx: Ctx, prep: Prepared) -> Skip | None:
    op: CreateFile = prep.op
    if op.sha256 is not None and op.data_path is None:
        raise RefusedError(f"{prep.path}: planned without its data (a dry run's plan); nothing written")
    tmp = fsio.temp_name(prep.name, ctx.txid)
    sha, size = op.digest(), op.nbytes
    dirs = dirs_to_make(ctx, prep)
    ctx.journal.append("intent", n=prep.n, method="create", path=prep.path, dirs=dirs, tmp=tmp,
                       post={"sha256": sha, "size": size}, session=prep.session)
    make_dirs(ctx, dirs, op.dir_mode)
    dfd = fsio.open_dir(prep.root, prep.parts)
    try:
        write_new(ctx, dfd, tmp, op.data, op.mode, op.mtime_ns, prep.path, spool=op.data_path, sha=sha, size=size)
        try:
            ctx.fs.rename_noreplace(tmp, prep.name, src_dir_fd=dfd, dst_dir_fd=dfd, label=prep.path)
        except FileExistsError:
            unlink_quiet(ctx.fs, tmp, dfd)
            raise RefusedError(f"{prep.path} appeared during apply; nothing replaced") from None
        ctx.fs.fsync(dfd, os.path.dirname(prep.path))
    finally:
        os.close(dfd)
    ctx.journal.append("done", n=prep.n, post={"sha256": sha, "size": size})
    return None


def write_new(ctx: Ctx, dfd: int, tmp: str, data: bytes, mode: int, mtime_ns: int | None, label: str,
              atime_ns: int | None = None, *, spool: str | None = None, sha: str | None = None,
              size: int | None = None) -> None:
    """Temp file with ``data`` (or the spool file's bytes, copied in chunks and hashed on the way),
    ``mode`` and times, fsynced and verified against ``sha``/``size`` (the caller renames it)."""
    fs = ctx.fs
    if spool is None:
        sha, size = hashlib.sha256(data).hexdigest(), len(data)
    tfd = fs.open_write(tmp, dir_fd=dfd, label=label + " (temp)")
    try:
        if spool is None:
            fs.write(tfd, data, label + " (temp)")
        else:
            copy_spool(fs, spool, tfd, sha, size, label)
        fs.fchmod(tfd, mode, label + " (temp)")
        now = time.time_ns()
        fs.utime(tfd, (atime_ns or now, mtime_ns or now), label + " (temp)")
        fs.fsync(tfd, label + " (temp)")
    except BaseException:
        os.close(tfd)
        unlink_quiet(fs, tmp, dfd)
        raise
    os.close(tfd)
    verify(dfd, tmp, sha, size, label)


def copy_spool(fs, spool: str, tfd: int, sha: str, size: int, label: str) -> None:
    """Copy a converted session's spool file into the temp, 1 MiB at a time; it must still be the
    bytes that were planned (hashed here, and the temp is re-read by :func:`verify`)."""
    h, n = hashlib.sha256(), 0
    with open(spool, "rb", buffering=0) as src:
        while chunk := src.read(1 << 20):
            fs.write(tfd, chunk, label + " (temp)")
            h.update(chunk)
            n += len(chunk)
    if n != size or h.hexdigest() != sha:
        raise VerifyError(errno.EIO, f"spooled data changed since planning ({spool})", label)


def delete(ctx: Ctx, prep: Prepared) -> Skip | None:
    dfd = fsio.open_dir(prep.root, prep.parts)
    try:
        src = fsio.open_read(prep.name, dir_fd=dfd)
        try:
            st0 = os.fstat(src)
            if key(st0) != key(prep.st):
                return Skip(prep.op.paths()[0], "changed during apply; re-plan", "changed")
            sha = sha_range(src, 0, st0.st_size)
            backup = make_backup(ctx, f"{prep.n}.0", dfd, prep.name, src, st0, sha)
            ctx.journal.append("intent", n=prep.n, method="delete", path=prep.path, backup=backup,
                               pre=pre_state(st0, sha, src), session=prep.session)
        finally:
            os.close(src)
        ctx.fs.unlink(prep.name, dir_fd=dfd, label=prep.path)
        ctx.fs.fsync(dfd, os.path.dirname(prep.path))
    finally:
        os.close(dfd)
    ctx.journal.append("done", n=prep.n)
    return None


def rmdir(ctx: Ctx, prep: Prepared) -> Skip | None:
    """Remove the folder if it is empty now (the renames before it emptied it); else report it.
    The journal keeps its mode, owner and times as they were before the transaction."""
    st = os.lstat(prep.path)
    if (st.st_dev, st.st_ino) != (prep.st.st_dev, prep.st.st_ino):
        return Skip(prep.path, "changed during apply; re-plan", "changed")
    if os.listdir(prep.path):
        ctx.warn("folder-not-empty", "not empty any more; left in place", prep.path)
        return None
    pre = prep.st
    ctx.journal.append("intent", n=prep.n, method="rmdir", path=prep.path,
                       pre={"dev": st.st_dev, "ino": st.st_ino, "mode": stat.S_IMODE(pre.st_mode), "uid": pre.st_uid,
                            "gid": pre.st_gid, "mtime_ns": pre.st_mtime_ns, "atime_ns": pre.st_atime_ns})
    try:
        ctx.fs.rmdir(prep.path, label=prep.path)
    except OSError as e:
        if e.errno not in (errno.ENOTEMPTY, errno.EEXIST):
            raise
        ctx.warn("folder-not-empty", "not empty any more; left in place", prep.path)   # something appeared
        return None
    ctx.fs.fsync_dir(os.path.dirname(prep.path))
    ctx.journal.append("done", n=prep.n)
    return None


def mkdir(ctx: Ctx, prep: Prepared) -> Skip | None:
    """Create the folder (and missing parents) with its exact mode; its times wait for
    :func:`set_dir_times`, after every other operation."""
    op = prep.op
    dirs = dirs_to_make(ctx, prep)
    ctx.journal.append("intent", n=prep.n, method="mkdir", path=prep.path, dirs=dirs, session=prep.session)
    make_dirs(ctx, dirs)
    make_dirs(ctx, [prep.path], op.mode)
    if op.mtime_ns is not None:
        ctx.dir_times.append((prep.path, op.atime_ns or op.mtime_ns, op.mtime_ns))
    ctx.journal.append("done", n=prep.n)
    return None


def set_dir_times(ctx: Ctx) -> None:
    for path, atime, mtime in ctx.dir_times:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            ctx.fs.utime(fd, (atime, mtime), path)
            ctx.fs.fsync(fd, path)
        finally:
            os.close(fd)


# -- rename ---------------------------------------------------------------------------------------
def rename(ctx: Ctx, prep: Prepared) -> Skip | None:
    src, dst = prep.path, prep.dst
    st = os.lstat(src)
    if (st.st_dev, st.st_ino) != (prep.st.st_dev, prep.st.st_ino) and not _rewritten_here(ctx, prep, st):
        return Skip(prep.op.paths()[0], "changed during apply; re-plan", "changed")
    tmp = os.path.join(os.path.dirname(dst), fsio.temp_name(os.path.basename(dst), ctx.txid))
    dirs = dirs_to_make(ctx, prep)
    # a folder's entries are journaled: undo moves back exactly these, never what a client adds later
    entries = sorted(os.listdir(src)) if stat.S_ISDIR(st.st_mode) else None
    ctx.journal.append("intent", n=prep.n, method="rename", path=src, dst=dst, dirs=dirs, tmp=tmp,
                       pre={"dev": st.st_dev, "ino": st.st_ino}, entries=entries, session=prep.session)
    make_dirs(ctx, dirs)
    try:
        ctx.fs.rename_noreplace(src, dst, label=f"{src} -> {dst}")
    except FileExistsError:
        raise RefusedError(f"target exists: {dst} (appeared during apply)") from None
    except OSError as e:
        if e.errno != errno.EXDEV:
            raise
        _copy_move(ctx, prep, src, dst, tmp)
    ctx.fs.fsync_dir(os.path.dirname(src))
    ctx.fs.fsync_dir(os.path.dirname(dst))
    ctx.journal.append("done", n=prep.n)
    return None


def _rewritten_here(ctx: Ctx, prep: Prepared, st: os.stat_result) -> bool:
    """The file was replaced by an earlier operation of this same transaction (a move rewrites a
    session's ``cwd`` and then renames it into another folder): its new inode is ours, not a change
    by someone else. The plan marks such a rename by expecting only the device (``move_folders._fp``)."""
    return (prep.op.expect.ino is None and st.st_dev == prep.st.st_dev and stat.S_ISREG(st.st_mode)
            and prep.path in ctx.result.done)


def _copy_move(ctx: Ctx, prep: Prepared, src: str, dst: str, tmp: str) -> None:
    """Across file systems: copy to a temp name, verify every file, rename into place, journal
    ``copied``, then delete the source (rsync's copy-then-unlink plus verification)."""
    copy_tree(ctx, src, tmp)
    ctx.fs.rename_noreplace(tmp, dst, label=dst)
    ctx.fs.fsync_dir(os.path.dirname(dst))
    ctx.journal.append("copied", n=prep.n)
    remove_tree(ctx, src)


def copy_tree(ctx: Ctx, src: str, dst: str) -> None:
    st = os.lstat(src)
    if stat.S_ISLNK(st.st_mode):
        os.symlink(os.readlink(src), dst)
        return
    if stat.S_ISREG(st.st_mode):
        _copy_file(ctx, src, dst, st)
        return
    ctx.fs.mkdir(dst, 0o700, label=dst)
    for entry in sorted(os.listdir(src)):
        copy_tree(ctx, os.path.join(src, entry), os.path.join(dst, entry))
    fd = os.open(dst, os.O_RDONLY | os.O_DIRECTORY)
    try:
        ctx.fs.fchmod(fd, stat.S_IMODE(st.st_mode), dst)
        ctx.fs.utime(fd, (st.st_atime_ns, st.st_mtime_ns), dst)
        ctx.fs.fsync(fd, dst)
    finally:
        os.close(fd)


def _copy_file(ctx: Ctx, src: str, dst: str, st) -> None:
    from histmig.apply.files import copy_meta
    sfd = fsio.open_read(src)
    try:
        sha = sha_range(sfd, 0, st.st_size)
        dfd = ctx.fs.open_write(dst, label=dst)
        try:
            pos = 0
            while pos < st.st_size:
                chunk = os.pread(sfd, min(1 << 20, st.st_size - pos), pos)
                ctx.fs.write(dfd, chunk, dst)
                pos += len(chunk)
            copy_meta(ctx, st, sfd, dfd, dst)
            ctx.fs.utime(dfd, (st.st_atime_ns, st.st_mtime_ns), dst)
            ctx.fs.fsync(dfd, dst)
        finally:
            os.close(dfd)
    finally:
        os.close(sfd)
    vfd = fsio.open_read(dst)
    try:
        if sha_range(vfd, 0, st.st_size) != sha:
            raise VerifyError(errno.EIO, "copy does not read back as the source", dst)
    finally:
        os.close(vfd)


def remove_tree(ctx: Ctx, path: str) -> None:
    st = os.lstat(path)
    if stat.S_ISDIR(st.st_mode):
        for entry in sorted(os.listdir(path)):
            remove_tree(ctx, os.path.join(path, entry))
        ctx.fs.rmdir(path, label=path)
    else:
        ctx.fs.unlink(path, label=path)
    ctx.fs.fsync_dir(os.path.dirname(path))
