"""Going back by restoring journaled bytes: ``recover`` (roll back an unfinished apply, or finish an
undo an older histmig began) and the automatic rollback of a failed apply. ``histmig undo`` is an
inverse plan instead (:mod:`histmig.verbs.undo`), applied like any other plan.

Restores put back journaled bytes and metadata and never run a transform backwards. Every step
first looks at the disk and does nothing if the old state is already there, so a rollback is
idempotent and safe to crash: run it again and it finishes.
"""
from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from histmig.apply import fsio
from histmig.apply.backups import unnamed_backups, verify_backup
from histmig.apply.ranges import sha_range
from histmig.apply.files import unlink_quiet
from histmig.apply.sqlops import revert_db
from histmig.core.diagnostics import Skip, Warning
from histmig.apply.journal import TAKEN_BACK, Journal, read_records
from histmig.core.plan import unb64


@dataclass
class Undo:
    """What to do when a file is not exactly as the apply left it."""

    # True: finishing an undo an older histmig began (it leaves anything changed since alone);
    # False: rolling back an unfinished apply (whatever is ours goes back). Undo itself is an
    # inverse plan now (histmig/verbs/undo/__init__.py) and does not come here.
    strict: bool
    restored: list[str] = field(default_factory=list)
    skips: list[Skip] = field(default_factory=list)
    warnings: list[Warning] = field(default_factory=list)
    fixups: list = field(default_factory=list)   # run after every revert (folder times)

    def skip(self, path: str, reason: str, code: str = "undo-skipped") -> None:
        self.skips.append(Skip(path, reason, code))


def intents(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The latest intent per operation, newest first, with its salvage and done facts merged in."""
    latest: dict[int, dict[str, Any]] = {}
    for r in records:
        if r["kind"] == "intent":
            latest[r["n"]] = dict(r)
        elif r["kind"] in ("ready", "done", "salvaged", "copied") and r["n"] in latest:
            rec = latest[r["n"]]
            rec[r["kind"]] = True
            if r.get("post"):
                rec["post"] = r["post"]
            if r.get("pre_sha256"):      # a streamed rewrite learns its source hash while writing
                rec["pre"] = {**rec["pre"], "sha256": r["pre_sha256"]}
            if r["kind"] == "salvaged":
                rec["salvaged_raw"] = r["raw"]
        elif r["kind"] == TAKEN_BACK:     # already put back while its apply ran (apply/takeback.py),
            latest.pop(r["n"], None)      # but for the folders it made that stayed: still to remove
            if r.get("dirs"):
                latest[r["n"]] = {"n": r["n"], "method": "dirs", "dirs": r["dirs"]}
    return [latest[n] for n in sorted(latest, reverse=True)]


def revert_all(fs: fsio.FS, folder: Path, how: Undo, *, skip_ns=frozenset(), on_done=None) -> None:
    """Revert every journaled operation (newest first), calling ``on_done(n)`` after each one that
    is back to its old state."""
    records = read_records(folder)
    if not how.strict:
        _drop_orphan_backups(fs, folder, records, how)
    for rec in intents(records):
        if rec["n"] in skip_ns:
            continue
        before = len(how.skips)
        _REVERT[rec["method"]](fs, folder, rec, how)
        if len(how.skips) == before and on_done is not None:
            on_done(rec["n"])
    for fix in how.fixups:
        fix()


def take_back(fs: fsio.FS, folder: Path, ns: set[int]) -> tuple[dict[int, list[str]], Undo]:
    """Put back the finished operations ``ns`` of the apply still running in ``folder``, newest
    first (histmig/apply/takeback.py), with the rollback's steps. Those put back are returned, each
    with the folders it made that stay (another operation of the transaction put a file in them:
    journaled with it, so a rollback or undo of the transaction removes them once they are empty);
    one that left a skip or a warning was not put back (``how`` names it), nor is a written file
    changed since other than by appending: left as it is, ``histmig undo`` reverts it later."""
    how, back = Undo(strict=False), {}
    for rec in intents(read_records(folder)):
        if rec["n"] not in ns:
            continue
        if rec["method"] in ("replace", "inplace") and _changed_since(rec):
            how.skip(rec["path"], "changed since it was written; left as it is (histmig undo reverts it)",
                     "not-taken-back")
            continue
        before = (len(how.skips), len(how.warnings))
        _REVERT[rec["method"]](fs, folder, rec, how)
        if (len(how.skips), len(how.warnings)) == before:
            back[rec["n"]] = _made(rec)
    for fix in how.fixups:
        fix()
    return {n: [d for d in dirs if os.path.isdir(d)] for n, dirs in back.items()}, how


def _made(rec: dict) -> list[str]:
    """The folders an operation made (a create's or a rename's missing parents; a mkdir's folder too)."""
    return [*(rec.get("dirs") or ()), *([rec["path"]] if rec["method"] == "mkdir" else [])]


def _changed_since(rec: dict) -> bool:
    """The written file holds other bytes than the apply wrote, an append after them aside."""
    try:
        return _tail_after_post(rec["path"], rec) is None
    except FileNotFoundError:
        return False


def _drop_orphan_backups(fs, folder: Path, records: list[dict], how: Undo) -> None:
    """A crash between making a backup and journaling its intent leaves a backup nobody refers to;
    its file was not touched yet (the intent comes first), so the backup only adds a hard link.
    One whose file did change means the journal lost records: kept, and named."""
    drop, keep = unnamed_backups(folder, records)
    for p in drop:
        unlink_quiet(fs, str(p), None)
    for p, why in keep:
        how.skip(str(p), f"{why}; the backup is kept here (the journal lost records)", "journal-truncated")


# -- replaced files -------------------------------------------------------------------------------
def _revert_replace(fs: fsio.FS, folder: Path, rec: dict, how: Undo) -> None:
    path, pre = rec["path"], rec["pre"]
    unlink_quiet(fs, os.path.join(os.path.dirname(path), rec["tmp"]), None)
    backup = folder / "b" / rec["backup"]["name"]
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        st = None
    if rec.get("from") and st is not None and not _source_named(fs, rec, path, st, how):
        return
    if st is not None and (st.st_dev, st.st_ino) == (pre["dev"], pre["ino"]):
        _drop_link_backup(fs, backup, pre)
        return  # never replaced, or already put back
    if st is not None and _holds(path, pre):
        return  # already restored by an earlier (interrupted) run
    if not backup.exists():
        how.skip(path, "backup missing (purged?); not restored", "no-backup")
        return
    keep = pre["size"] + rec.get("salvaged_raw", 0)
    if st is None:
        if how.strict:
            return how.skip(path, "deleted since apply; not restored", "deleted")
        return _restore(fs, folder, rec, backup, keep, b"", how)
    tail = _tail_after_post(path, rec)
    if tail is None and how.strict:
        return how.skip(path, "modified since apply; not restored", "modified")
    if tail and how.strict:
        return how.skip(path, f"modified since apply ({len(tail)} bytes appended); not restored", "appended")
    _restore(fs, folder, rec, backup, keep if how.strict else None, tail or b"", how, st)


def _source_named(fs, rec: dict, path: str, st: os.stat_result, how: Undo) -> bool:
    """A file put back by renaming ``from`` into place (histmig/apply/batch.py): while the path
    holds that inode (``from_id``), ``from`` gets its name back (a hard link, made durable) before
    anything replaces the path, so the inode is never left without a name. False: ``from`` holds
    another file, and the path is left as it is (named)."""
    if [st.st_dev, st.st_ino] != rec.get("from_id"):
        return True                   # not renamed into place yet, or already replaced again
    src = rec["from"]
    try:
        other = os.lstat(src)
    except FileNotFoundError:
        folder = os.path.dirname(src)
        if not os.path.isdir(folder):      # ``gc`` took the undone apply's backups meanwhile (it was
            fs.mkdir(folder, 0o700, label=folder)   # still committed): the inode needs a name all the same
            fs.fsync_dir(os.path.dirname(folder))
        fs.link(path, src, label=src)
        fs.fsync_dir(folder)
        return True
    if (other.st_dev, other.st_ino) == (st.st_dev, st.st_ino):
        return True                   # linked by an earlier (interrupted) rollback
    how.skip(path, f"{src} holds another file; the restored file is left in place", "source-taken")
    return False


def _drop_link_backup(fs, backup: Path, pre: dict) -> None:
    """The file was never replaced: its hard-link backup would leave it with nlink 2."""
    try:
        st = os.lstat(backup)
    except FileNotFoundError:
        return
    if (st.st_dev, st.st_ino) == (pre["dev"], pre["ino"]):
        unlink_quiet(fs, str(backup), None)


def _holds(path: str, pre: dict) -> bool:
    fd = fsio.open_read(path)
    try:
        return os.fstat(fd).st_size == pre["size"] and sha_range(fd, 0, pre["size"]) == pre.get("sha256")
    finally:
        os.close(fd)


def _tail_after_post(path: str, rec: dict) -> bytes | None:
    """b"" if the file is exactly what apply wrote, the extra bytes if it only grew, else None."""
    post = rec.get("post") or {}
    fd = fsio.open_read(path)
    try:
        size = os.fstat(fd).st_size
        if post.get("sha256") is None or size < post["size"]:
            return None
        if sha_range(fd, 0, post["size"]) != post["sha256"]:
            return None
        return os.pread(fd, size - post["size"], post["size"]) if size > post["size"] else b""
    finally:
        os.close(fd)


def _restore(fs, folder, rec, backup: Path, keep: int | None, tail: bytes, how: Undo, st=None) -> None:
    """Put the backup's bytes (the first ``keep`` of them; ``None`` = all) back at the path."""
    path, pre = rec["path"], rec["pre"]
    if (bad := verify_backup(folder, rec)) is not None:
        return how.skip(path, bad, "bad-backup")
    bsize = backup.stat().st_size
    exact = rec["backup"]["kind"] == "link" and not tail and (keep is None or keep == bsize)
    if exact:  # the old inode itself: rename it back (mode, owner, xattrs, times are its own)
        fs.replace(str(backup), path, label=path)
    else:
        with open(backup, "rb") as fh:
            data = fh.read(bsize if keep is None else keep)
        if pre.get("sha256") and hashlib.sha256(data[:pre["size"]]).hexdigest() != pre["sha256"]:
            return how.skip(path, "backup does not match the journaled hash; not restored", "bad-backup")
        if keep is not None and bsize > keep:
            how.warnings.append(Warning("backup-has-more", f"{bsize - keep} bytes appended to the replaced "
                                        f"file after apply are kept in {backup}", path))
        mtime = st.st_mtime_ns if (tail and st is not None) else pre["mtime_ns"]
        _write_back(fs, folder, path, data + tail, pre, mtime)
    fs.fsync_dir(os.path.dirname(path))
    how.restored.append(path)


def _write_back(fs, folder: Path, path: str, data: bytes, pre: dict, mtime_ns: int) -> None:
    from histmig.apply.files import Ctx, copy_meta
    from histmig.apply.options import ApplyOptions, ApplyResult
    from histmig.apply.tree import write_new
    d, name = os.path.dirname(path), os.path.basename(path)
    tmp = fsio.temp_name(name, folder.name)
    dfd = os.open(d, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        ctx = Ctx(fs, _NoJournal(folder), ApplyOptions(), ApplyResult())
        unlink_quiet(fs, tmp, dfd)    # ours (the name holds the txid), left by an interrupted restore
        write_new(ctx, dfd, tmp, data, pre["mode"], mtime_ns, path, atime_ns=pre["atime_ns"])
        tfd = os.open(tmp, os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dfd)
        try:
            st = os.stat_result((pre["mode"], 0, 0, 1, pre["uid"], pre["gid"], 0, 0, 0, 0))
            copy_meta(ctx, st, None, tfd, path, {k: unb64(v) for k, v in pre.get("xattrs", {}).items()})
            fs.utime(tfd, (pre["atime_ns"], mtime_ns), path)
            fs.fsync(tfd, path)
        finally:
            os.close(tfd)
        fs.replace(tmp, name, dir_fd=dfd, label=path)
    finally:
        os.close(dfd)


class _NoJournal:
    """Restores need a ``txid`` for temp names, not a journal."""

    def __init__(self, folder: Path):
        self.txid = folder.name


# -- in place, create, delete, rename, sql -------------------------------------------------------
def _revert_inplace(fs, folder, rec, how: Undo) -> None:
    path, pre = rec["path"], rec["pre"]
    try:
        fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return how.skip(path, "deleted since apply", "deleted")
    try:
        st = os.fstat(fd)
        if (st.st_dev, st.st_ino) != (pre["dev"], pre["ino"]):
            return how.skip(path, "replaced since apply; not restored", "modified")
        spans = [(s["offset"], unb64(s["old"]), unb64(s["new"])) for s in rec["spans"]]
        cur = [os.pread(fd, len(old), off) for off, old, _ in spans]
        if all(c == old for c, (_, old, _) in zip(cur, spans)):
            return how.restored.append(path)
        if how.strict and any(c != new for c, (_, _, new) in zip(cur, spans)):
            return how.skip(path, "modified since apply; not restored", "modified")
        for off, old, _ in spans:
            fs.pwrite(fd, old, off, path)
        grown = st.st_size > rec["post"]["size"]
        fs.utime(fd, (pre["atime_ns"], st.st_mtime_ns if grown else pre["mtime_ns"]), path)
        fs.fsync(fd, path)
        how.restored.append(path)
    finally:
        os.close(fd)


def _revert_create(fs, folder, rec, how: Undo) -> None:
    path = rec["path"]
    unlink_quiet(fs, os.path.join(os.path.dirname(path), rec["tmp"]), None)
    if os.path.lexists(path):
        with open(path, "rb") as fh:
            same = hashlib.sha256(fh.read()).hexdigest() == rec["post"]["sha256"]
        if not same and how.strict:
            return how.skip(path, "modified since apply; not removed", "modified")
        if not same and not how.strict:
            how.warnings.append(Warning("not-removed", "created file changed since; left in place", path))
            return
        fs.unlink(path, label=path)
        fs.fsync_dir(os.path.dirname(path))
        how.restored.append(path)
    _remove_dirs(fs, rec.get("dirs", []))


def _remove_dirs(fs, dirs: list[str]) -> None:
    for d in reversed(dirs):
        try:
            fs.rmdir(d, label=d)
            fs.fsync_dir(os.path.dirname(d))
        except (FileNotFoundError, OSError):
            pass  # not empty (someone put something there) or already gone: leave it


def _revert_delete(fs, folder, rec, how: Undo) -> None:
    path = rec["path"]
    if os.path.lexists(path):
        return
    backup = folder / "b" / rec["backup"]["name"]
    if (bad := verify_backup(folder, rec)) is not None:
        return how.skip(path, bad, "bad-backup")
    if rec["backup"]["kind"] == "link":
        fs.rename_noreplace(str(backup), path, label=path)
    else:
        with open(backup, "rb") as fh:
            _write_back(fs, folder, path, fh.read(), rec["pre"], rec["pre"]["mtime_ns"])
    fs.fsync_dir(os.path.dirname(path))
    how.restored.append(path)


def _revert_rmdir(fs, folder, rec, how: Undo) -> None:
    """Recreate a removed folder with its mode and owner; its times are set again after every
    other revert (moving the files back into it bumps its mtime)."""
    path, pre = rec["path"], rec["pre"]
    if not os.path.lexists(path):
        fs.mkdir(path, pre["mode"], label=path)
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            fs.fchmod(fd, pre["mode"], path)
            try:
                fs.fchown(fd, pre["uid"], pre["gid"], path)
            except PermissionError:
                pass
        finally:
            os.close(fd)
        fs.fsync_dir(os.path.dirname(path))
        how.restored.append(path)
    how.fixups.append(lambda: _dir_times(fs, path, pre))


def _dir_times(fs, path: str, pre: dict) -> None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return
    try:
        fs.utime(fd, (pre["atime_ns"], pre["mtime_ns"]), path)
        fs.fsync(fd, path)
    finally:
        os.close(fd)


def _revert_rename(fs, folder, rec, how: Undo) -> None:
    src, dst, pre = rec["path"], rec["dst"], rec["pre"]
    if os.path.lexists(rec["tmp"]):
        _rmtree(fs, rec["tmp"])            # an interrupted cross-device copy
    src_there = os.path.lexists(src)
    if rec.get("copied") and os.path.lexists(dst):
        _copy_back(fs, folder, dst, src)   # source partly deleted: refill it from the verified copy
        _rmtree(fs, dst)
        how.restored.append(src)
    elif not src_there and os.path.lexists(dst):
        st = os.lstat(dst)
        if (st.st_dev, st.st_ino) != (pre["dev"], pre["ino"]) and how.strict:
            return how.skip(dst, "replaced since apply; not moved back", "modified")
        fs.rename_noreplace(dst, src, label=f"{dst} -> {src}")
        fs.fsync_dir(os.path.dirname(src))
        fs.fsync_dir(os.path.dirname(dst))
        how.restored.append(src)
    elif not src_there:
        return how.skip(src, f"neither {src} nor {dst} exists", "deleted")
    _remove_dirs(fs, rec.get("dirs", []))


def _copy_back(fs, folder: Path, src_copy: str, dst: str) -> None:
    from histmig.apply.files import Ctx
    from histmig.apply.options import ApplyOptions, ApplyResult
    from histmig.apply.tree import copy_tree
    ctx = Ctx(fs, _NoJournal(folder), ApplyOptions(), ApplyResult())
    if not os.path.lexists(dst):
        copy_tree(ctx, src_copy, dst)
        return
    if os.path.isdir(dst) and not os.path.islink(dst):
        for entry in os.listdir(src_copy):
            _copy_back(fs, folder, os.path.join(src_copy, entry), os.path.join(dst, entry))


def _rmtree(fs, path: str) -> None:
    if os.path.isdir(path) and not os.path.islink(path):
        for entry in os.listdir(path):
            _rmtree(fs, os.path.join(path, entry))
        fs.rmdir(path, label=path)
    else:
        fs.unlink(path, label=path)
    fs.fsync_dir(os.path.dirname(path))


def _revert_sql(fs, folder, rec, how: Undo) -> None:
    warnings = revert_db(fs, rec, strict=how.strict)
    if warnings and how.strict:
        for w in warnings:
            how.skip(w.path or rec["path"], w.detail, "row-changed")
    else:
        how.warnings.extend(warnings)
    how.restored.append(rec["path"])


def _revert_mkdir(fs, folder, rec, how: Undo) -> None:
    _remove_dirs(fs, [*rec.get("dirs", []), rec["path"]])


def _revert_dirs(fs, folder, rec, how: Undo) -> None:
    """An operation put back while its apply ran left the folders it made (something else of the
    transaction was in them, reverted by now: newer operations go first)."""
    _remove_dirs(fs, rec["dirs"])


_REVERT = {"mkdir": _revert_mkdir, "replace": _revert_replace, "inplace": _revert_inplace, "create": _revert_create,
           "delete": _revert_delete, "rename": _revert_rename, "sql": _revert_sql, "rmdir": _revert_rmdir, "dirs": _revert_dirs}


def journal_for(fs: fsio.FS, folder: Path) -> Journal:
    return Journal.reopen(fs, folder)


def is_regular(path: str) -> bool:
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except FileNotFoundError:
        return False
