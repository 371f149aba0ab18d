"""The inverse of each journaled file operation, computed against the disk as it is now.

Each function gets one journal intent and returns a :class:`Member`: the plan operations that
revert it (none when the file is already as it was), or the reason it cannot be reverted safely.
Nothing here writes; the operations go through the one apply path like any other plan.
"""
from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from histmig.apply import fsio
from histmig.apply.backups import verify_backup
from histmig.core.diagnostics import Warning
from histmig.toolkit.move.common import dir_fingerprint
from histmig.verbs.undo.diff import (Diff, DiffError, LinesDiffer, diff_against_backup, span_patch, stamp,
                                   starts_with, tail_patches, whole_patch)
from histmig.core.plan import CreateFile, Delete, Fingerprint, MkDir, Op, Patch, PatchList, Rename, WriteFile, patch_list, unb64

LineEdit = Callable[[Op, bytes], bytes]


@dataclass
class Member:
    """One journaled operation's part of the inverse plan."""

    path: str
    ops: list[Op] = field(default_factory=list)
    problem: tuple[str, str] | None = None          # (reason, code): the unit is kept whole
    grown: bool = False           # a file a client appended to since the apply
    warnings: list = field(default_factory=list)
    offsets: bool = False         # a journaled byte-offset row (thread_history_1.sqlite)
    via: Op | None = None         # the folder rename that takes it back with its folder's other entries

    @classmethod
    def kept(cls, path: str, reason: str, code: str) -> "Member":
        return cls(path, problem=(reason, code))

    @property
    def edits(self) -> list[tuple[int, int]]:
        """(offset, length delta) of its rewrite's patches: asked only of a file a client appended to
        (a tool's offset rows are recomputed from them), so a move's undo does not hold a second
        record per line it puts back."""
        return [e for op in self.ops if isinstance(op, WriteFile) for e in op.patches.deltas()]


@dataclass
class Env:
    """What every inverse needs: the journal folder, the user's choices, where files went."""

    folder: Path
    txid: str
    force: bool
    restore_deleted: bool
    tail_edit: LineEdit | None
    locate: Callable[[str], str | None]
    left_at: Callable[[str], str]
    trash: Path
    begin: dict = field(default_factory=dict)     # the undone transaction's begin record
    made_dirs: list[str] = field(default_factory=list)   # folders its renames and creates made

    def backup(self, rec: dict) -> Path:
        return self.folder / "b" / rec["backup"]["name"]


def _old_bytes(env: Env, rec: dict) -> bytes:
    """The file's bytes before the transaction (the backup was verified first)."""
    with open(env.backup(rec), "rb") as fh:
        return fh.read(rec["pre"]["size"])


def _fingerprint(st: os.stat_result, sha: str) -> Fingerprint:
    """The file as it was read, with the hash the caller computed while reading it. ``st`` is taken
    before that read (and checked after it): the apply trusts the hash while the ctime is unchanged
    (``ApplyOptions.trust_plan_hash``)."""
    return Fingerprint(dev=st.st_dev, ino=st.st_ino, size=st.st_size, mtime_ns=st.st_mtime_ns,
                       sha256=sha, ctime_ns=st.st_ctime_ns)


def _write(path: str, rec: dict, patches: list[Patch], expect: Fingerprint, tail: bool, reason: str,
           in_place_ok: bool = False, restore_from: tuple[str, str, int] | None = None) -> WriteFile:
    """The inverse rewrite; the old mtime comes back unless a client wrote to the file since."""
    patches = patch_list(patches)
    return WriteFile(path=path, expect=expect, patches=patches,
                     in_place_ok=in_place_ok and patches.same_length(),
                     session=rec.get("session"), reason=reason,
                     mtime_ns=None if tail else rec["pre"]["mtime_ns"], restore_from=restore_from)


# -- rewritten files -------------------------------------------------------------------------------
def inverse_replace(env: Env, rec: dict) -> Member:
    path = env.locate(rec["path"])
    if path is None:
        return _deleted(env, rec)
    if put_back(path, rec, str(env.backup(rec))):
        return Member(path)              # undone already, by an undo that renamed the backup into place
    # the sizes now; the backup's hash once its bytes were read for the diff (one read, not two)
    if bad := verify_backup(env.folder, rec, hashed=_is_zst(path)):
        return Member.kept(path, bad, "bad-backup")
    pre, post = rec["pre"], rec.get("post") or {}
    backup = str(env.backup(rec))
    notes = []
    if os.path.getsize(backup) > pre["size"]:     # a process kept appending to the replaced inode
        notes.append(Warning("backup-has-more", f"{os.path.getsize(backup) - pre['size']} bytes appended to the "
                             f"replaced file after the apply are kept in {backup}", path))
    if _is_zst(path):
        return _inverse_whole(env, rec, path, backup)
    trusted = backup_unchanged(backup, rec)
    left = as_left(path, rec)
    if left is not None and trusted and (back := journaled_inverse(rec)) is not None:
        # the file is the apply's bytes and the backup its original: the apply's own edits, reversed;
        # apply may rename the backup, the original inode, into place instead (histmig/apply/batch.py)
        op = _write(path, rec, back, _fingerprint(left, post["sha256"]), False, "undo",
                    restore_from=(backup, pre["sha256"], pre["size"]) if pre.get("sha256") else None)
        return Member(path, [op], warnings=notes)
    try:
        d = diff_against_backup(path, backup, post.get("size", 0), post.get("sha256"), pre["size"],
                                salvaged=bool(rec.get("salvaged_raw")), backup_trusted=trusted,
                                known=(stamp(left), post["sha256"]) if left is not None else None)
    except DiffError as e:
        if bad := verify_backup(env.folder, rec):
            return Member.kept(path, bad, "bad-backup")
        return _changed(env, rec, path, backup, str(e))
    except LinesDiffer:
        if bad := verify_backup(env.folder, rec):
            return Member.kept(path, bad, "bad-backup")
        now = Fingerprint.of(path)          # stat, then hash: a change while hashing moves the ctime
        d = Diff(patches=PatchList([whole_patch(path, backup, post["size"], pre["size"])]), tail_start=post["size"],
                 size=now.size, sha256=now.sha256)
        if d.patches[0].old and hashlib.sha256(d.patches[0].old).hexdigest() != post.get("sha256"):
            return _changed(env, rec, path, backup, "changed since the transaction (not only appended to)")
        expect = now
    else:
        # a trusted backup was compared with the file, not hashed: its sizes are still checked
        if bad := verify_backup(env.folder, rec, prefix_sha=d.old_sha256, hashed=not trusted):
            return Member.kept(path, bad, "bad-backup")
        expect = _fingerprint(d.st, d.sha256)
    tail = tail_patches(path, d.tail_start, d.size, _line_edit(env, rec))
    patches = d.patches
    patches += tail
    grown = d.size > post.get("size", 0)
    op = _write(path, rec, patches, expect, grown, "undo" + (" (appended lines kept)" if grown else ""),
                restore_from=_original(rec, backup, left, trusted, grown))
    return Member(path, [op], grown=grown, warnings=notes)


def _original(rec: dict, backup: str, left: os.stat_result | None, trusted: bool,
              grown: bool) -> tuple[str, str, int] | None:
    """The backup to rename into place (``WriteFile.restore_from``) when the diffed file is still
    the apply's bytes (``left``, nothing appended) and the backup its original inode (``trusted``):
    the inverse patches then turn it into exactly those bytes, as for a journaled inverse (a move's
    one edit per line is never journaled: histmig/apply/batch.py ``EDITS_MAX``)."""
    pre = rec["pre"]
    if left is None or not trusted or grown or not pre.get("sha256"):
        return None
    return backup, pre["sha256"], pre["size"]


def put_back(path: str, rec: dict, backup: str) -> bool:
    """True when an earlier undo put the file back by renaming its hard-link backup, the original
    inode, into place (histmig/apply/batch.py "Putting an inode back"): the backup's name is gone,
    the path holds the journaled original inode, and it begins with the journaled original bytes
    (lines appended since are a client's). That undo did not cover the operation when another
    file of its session was skipped while it applied (histmig/verbs/undo/__init__.py
    ``coverage.reverted``); a later undo finds the file undone, as it finds one written back as a temp
    (``_changed``), instead of a missing backup."""
    pre = rec.get("pre") or {}
    if (rec.get("backup") or {}).get("kind") != "link" or os.path.lexists(backup):
        return False
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return ((st.st_dev, st.st_ino) == (pre.get("dev"), pre.get("ino"))
            and starts_with(path, backup, pre.get("size", 0), pre.get("sha256")))


def as_left(path: str, rec: dict) -> os.stat_result | None:
    """The file's lstat when it is provably still the bytes the apply wrote (``post.sha256``), so
    undo need not hash it (docs/safety.md "What undo reads"); None: read and hash it as before.

    The apply's ``settled`` record (histmig/apply/batch.py ``settle``) holds the stat it took of the
    file after its last write, and ``t_s``, the wall clock read just before. Trusted when the file's
    (dev, ino, size, mtime, ctime) are still those, its size is what the apply wrote (nothing
    salvaged into it) and:

    - its ctime lies more than two clock ticks (and the timestamp's granule) before ``t_s``. File
      times are the coarse clock (one tick: ``res``): any write after the stat gets a ctime of at
      least ``t_s`` less a tick, so it shows; a ctime closer to ``t_s`` could hide a write in the
      same tick (git's racy-clean rule) and is not trusted;
    - its mtime is the one the apply gave the temp (the original's, ``pre.mtime_ns``) and lies as
      far before the intent (``t``, journaled before the temp was written and renamed): a write
      between the rename and the stat would have set the mtime to its own, later time.

    Journals of older versions have no ``settled`` record: None."""
    settled, post = rec.get("settled"), rec.get("post") or {}
    if not settled or rec.get("salvaged_raw") or not post.get("sha256") or not rec.get("t"):
        return None
    (dev, ino, size, mtime, ctime), t_s, res = settled
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode) or (st.st_dev, *stamp(st)) != (dev, ino, size, mtime, ctime):
        return None
    if size != post.get("size") or mtime != rec["pre"].get("mtime_ns"):
        return None
    return st if settled_before(ctime, t_s, res) and settled_before(mtime, rec["t"], res) else None


def settled_before(stamp_ns: int, wall_ns: int, res_ns: int) -> bool:
    """True when a file timestamp lies far enough before the wall clock reading ``wall_ns`` that a
    later write cannot carry the same timestamp: two ticks of the coarse clock plus the granule of
    the file system's timestamps (guessed from the value: whole seconds may be all it keeps, 2 s
    on FAT)."""
    return stamp_ns <= wall_ns - 2 * res_ns - _granule(stamp_ns)


def _granule(ns: int) -> int:
    if ns % 1_000_000_000 == 0:
        return 2_000_000_000
    return next((g for g in (100_000_000, 10_000_000, 1_000_000, 1_000) if ns % g == 0), 1)


COMPACT_MIN = 4     # patches under which a PatchList's columns cost more than the JSON lists


def compact_patches(rec: dict) -> None:
    """An intent's journaled patches (``[offset, old, new]``, base64) decoded into one PatchList as
    the journal is read: a move's undo reads thousands of intents with up to 64 each, ~250 bytes a
    patch as JSON objects against a few as columns. Patches that do not decode are left as they are
    (:func:`journaled_inverse` then fails on them as before)."""
    raw = rec.get("patches")
    if not isinstance(raw, list) or len(raw) < COMPACT_MIN:
        return
    out = PatchList()
    try:
        for offset, old, new in raw:
            out.add(offset, unb64(old), unb64(new))
    except (ValueError, TypeError, AttributeError, OverflowError):   # not base64 text, no int64 offset
        return
    rec["patches"] = out


def journaled_inverse(rec: dict) -> list[Patch] | None:
    """The apply's own patches (journaled with its intent: histmig/apply/batch.py ``_edits``)
    reversed into the file's coordinates, each trimmed to the bytes that differ; None when the
    intent has none or they do not account for the sizes."""
    raw, pre, post = rec.get("patches"), rec.get("pre") or {}, rec.get("post") or {}
    if not raw:
        return None
    out, shift = [], 0
    rows = raw.rows() if isinstance(raw, PatchList) else ((o, unb64(a), unb64(b)) for o, a, b in raw)
    for offset, old, new in rows:
        if (p := span_patch(offset + shift, new, old)) is not None:
            out.append(p)
        shift += len(new) - len(old)
    return out if pre.get("size") is not None and pre["size"] + shift == post.get("size") else None


def backup_unchanged(backup: str, rec: dict) -> bool:
    """True when a hard-link backup is still the inode the apply replaced, untouched since: its
    (dev, ino) are the journaled original's and its size, mtime and ctime what the apply's ``done``
    record saw after the rename (``bst``; ctime moves on every write and cannot be set back, as in
    docs/safety.md "Plans applied directly"). Its bytes are then the ones the apply hashed while
    writing (``pre.sha256``), and undo's diff compares them without hashing them again. Journals of
    older versions have no ``bst``: their backups are hashed."""
    bst, pre = rec.get("bst"), rec.get("pre") or {}
    if not bst or (rec.get("backup") or {}).get("kind") != "link":
        return False
    try:
        st = os.lstat(backup)
    except OSError:
        return False
    return ((st.st_dev, st.st_ino) == (pre.get("dev"), pre.get("ino")) and st.st_size == pre.get("size")
            and [st.st_size, st.st_mtime_ns, st.st_ctime_ns] == bst)


def _line_edit(env: Env, rec: dict) -> Callable[[bytes], bytes] | None:
    if env.tail_edit is None:
        return None
    probe = WriteFile(path=rec["path"], expect=Fingerprint(), session=rec.get("session"))
    return lambda line: env.tail_edit(probe, line)


def _is_zst(path: str) -> bool:
    return path.endswith(".zst")


def _inverse_whole(env: Env, rec: dict, path: str, backup: str) -> Member:
    """A compressed file is put back whole, and only when it is exactly what the apply wrote."""
    now = Fingerprint.of(path)
    if now.sha256 != (rec.get("post") or {}).get("sha256"):
        return _changed(env, rec, path, backup, "changed since the transaction")
    op = WriteFile(path=path, expect=now, new_bytes=_old_bytes(env, rec), session=rec.get("session"),
                   reason="undo", mtime_ns=rec["pre"]["mtime_ns"])
    return Member(path, [op])


def _changed(env: Env, rec: dict, path: str, backup: str, why: str) -> Member:
    """Changed in a way other than appending: kept, or with --force put back whole (the bytes it
    holds now stay in the undo transaction's own backup)."""
    if starts_with(path, backup, rec["pre"]["size"], rec["pre"].get("sha256")):
        return Member(path)          # begins with the old bytes: undone already (an earlier undo)
    if not env.force:
        return Member.kept(path, f"{why}; kept as it is (histmig undo {env.txid} --force puts the old "
                                 f"bytes back and keeps these in the undo's backup)", "modified")
    op = WriteFile(path=path, expect=Fingerprint.of(path), new_bytes=_old_bytes(env, rec),
                   session=rec.get("session"), reason="undo --force", mtime_ns=rec["pre"]["mtime_ns"])
    return Member(path, [op])


def _deleted(env: Env, rec: dict) -> Member:
    path = rec["path"]
    if not env.restore_deleted:
        return Member.kept(path, f"deleted since the transaction; histmig undo {env.txid} --restore-deleted "
                                 "recreates it", "deleted")
    return _recreate(env, rec, path, "undo --restore-deleted")


def _recreate(env: Env, rec: dict, path: str, reason: str) -> Member:
    """The file as it was before the transaction, made again from its verified backup."""
    if bad := verify_backup(env.folder, rec):
        return Member.kept(path, bad, "bad-backup")
    pre = rec["pre"]
    return Member(path, [CreateFile(path=path, data=_old_bytes(env, rec), mode=pre["mode"], mtime_ns=pre["mtime_ns"],
                                    session=rec.get("session"), reason=reason)])


def inverse_inplace(env: Env, rec: dict) -> Member:
    """Same-length spans written into the file: write the old bytes back into the same spans;
    lines appended since get the edit backwards."""
    path = env.locate(rec["path"])
    if path is None:
        return Member.kept(rec["path"], "deleted since the transaction", "deleted")
    spans = [(s["offset"], unb64(s["old"]), unb64(s["new"])) for s in rec["spans"]]
    post_size = (rec.get("post") or {}).get("size", rec["pre"]["size"])
    patches, h = [], hashlib.sha256()
    with os.fdopen(fsio.open_read(path), "rb") as fh:
        st = os.fstat(fh.fileno())        # before the read: the hash belongs to this stat
        size = st.st_size
        if size < post_size:
            return Member.kept(path, "shorter than the transaction left it", "modified")
        for off, old, new in spans:
            cur = os.pread(fh.fileno(), len(new), off)
            if cur == new:
                patches.append(Patch(off, new, old))
            elif cur != old:
                return Member.kept(path, f"changed since the transaction (bytes at offset {off})", "modified")
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
        if os.fstat(fh.fileno()).st_ctime_ns != st.st_ctime_ns:
            return Member.kept(path, "changed while being read", "modified")
    tail = tail_patches(path, post_size, size, _line_edit(env, rec))
    if not patches and not tail:
        return Member(path)
    op = _write(path, rec, patches + tail, _fingerprint(st, h.hexdigest()), size > post_size, "undo", in_place_ok=True)
    return Member(path, [op], grown=size > post_size)


# -- created, deleted, renamed ---------------------------------------------------------------------
def inverse_create(env: Env, rec: dict) -> Member:
    """A created session is removed only while it is exactly what was written (a copy stays in the
    undo transaction's backups); one continued since is kept, or with --force moved to the trash."""
    path = env.locate(rec["path"])        # a rollout `codex archive` moved since is followed
    if path is None:
        return Member(rec["path"])
    post = rec.get("post") or {}
    now = Fingerprint.of(path)
    if now.sha256 == post.get("sha256"):
        # the folders it made are not this session's: other sessions may have been written into them
        # (a convert's day or project folder); they go once emptied (verbs/undo ``_emptied_dirs``)
        return Member(path, [Delete(path=path, expect=now, session=rec.get("session"),
                                    reason="undo: created by the transaction")])
    grown = os.path.getsize(path) - post.get("size", 0)
    what = f"continued since the transaction ({grown} bytes appended)" if grown > 0 else "changed since the transaction"
    if not env.force:
        return Member.kept(path, f"{what}; kept (histmig undo {env.txid} --force moves it to {env.trash}/)",
                           "kept-continued")
    dst = env.trash / f"{rec['n']}-{os.path.basename(path)}"
    return Member(path, [Rename(src=path, dst=str(dst), expect=now, session=rec.get("session"),
                                reason="undo --force: to the trash")])


def inverse_delete(env: Env, rec: dict) -> Member:
    path = rec["path"]
    if os.path.lexists(path):
        return Member.kept(path, "exists again since the transaction; kept", "modified")
    return _recreate(env, rec, path, "undo: deleted by the transaction")


def inverse_rmdir(env: Env, rec: dict) -> Member:
    """A folder the transaction removed comes back with its mode and times (before the entries
    that go back into it)."""
    path, pre = rec["path"], rec["pre"]
    if os.path.lexists(path):
        return Member(path)
    return Member(path, [MkDir(path=path, mode=pre["mode"], mtime_ns=pre["mtime_ns"], atime_ns=pre["atime_ns"],
                               session=rec.get("session"), reason="undo: removed by the transaction")])


@dataclass
class Renamed:
    """A journaled rename's inverse: per entry of a folder (``whole`` when the folder may go back
    in one rename: it holds nothing the transaction did not move and its old place is free)."""

    members: list[Member]
    whole: Rename | None = None


def inverse_rename(env: Env, rec: dict, session_of: Callable[[str], dict | None]) -> Renamed:
    """Move back exactly what the transaction moved: a folder's journaled entries one by one (a
    session a client started there since stays where it is)."""
    src, dst = rec["path"], rec["dst"]
    if not os.path.lexists(dst):
        if os.path.lexists(src):
            return Renamed([Member(src)])
        return Renamed([Member.kept(src, f"neither {src} nor {dst} exists", "deleted")])
    if not stat.S_ISDIR(os.lstat(dst).st_mode) or rec.get("entries") is None:
        return Renamed([_rename_back(dst, src, session_of(os.path.basename(dst)) or rec.get("session"))])
    now, moved = set(os.listdir(dst)), set(rec["entries"])
    members = [_rename_back(os.path.join(dst, e), os.path.join(src, e), session_of(e)) for e in sorted(now & moved)]
    whole = None
    if now <= moved and not os.path.lexists(src):
        whole = Rename(src=dst, dst=src, expect=dir_fingerprint(dst), session=rec.get("session"), reason="undo: move back")
    return Renamed(members, whole)


def _rename_back(cur: str, back: str, session: dict | None) -> Member:
    if os.path.lexists(back):
        return Member.kept(cur, f"{back} exists again; not moved back", "target-exists")
    op = Rename(src=cur, dst=back, expect=dir_fingerprint(cur), session=session, reason="undo: move back")
    return Member(cur, [op])
