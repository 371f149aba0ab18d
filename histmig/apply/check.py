"""Before anything is written: validate the plan, re-check every operation's expectation.

Two passes, both read-only:

* :func:`validate_plan` — structural (paths absolute, normalised, under ``plan.roots``, roots under
  the homes; SQL identifiers). Failure: ``RefusedError("invalid plan: ...")``.
* :func:`precheck` — against the disk. A file that is not what the plan expected (grew, changed,
  missing, path changed) becomes a skip with a stable code, as do files that are merely unsafe to
  touch now (symlink, hard link, open writer, live session); each skip takes its whole session and
  project folder with it, and the rest of the plan applies. Database rows that no longer hold the
  expected values skip their session; only rows outside any session (and unreadable databases) are
  collected and raised together as one ``StalePlanError``, before anything is written.
"""
from __future__ import annotations

import errno
import os
import re
import stat
from pathlib import Path
from typing import Mapping

from histmig.apply import fsio
from histmig.apply.content import digest
from histmig.apply.guards import LiveProbe, default_guards
from histmig.apply.options import ApplyOptions, Prepared, Stat
from histmig.apply.ranges import prefix_intact, sha_range
from histmig.apply.skipping import (check_active, check_sessions, check_sql, check_writers,
                                    propagate_session_skips, mark_skip)
from histmig.core.diagnostics import HistmigInputError, RefusedError, Skip, StalePlanError
from histmig.core.homes import Homes
from histmig.core.plan import (CreateFile, Delete, Fingerprint, MkDir, Op, Plan, Rename, RmDir, SQL_OPS, SqlInsert,
                          SqlShift, SqlUpdate, WriteFile)

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class Stale(Exception):
    """One operation's expectation failed: it is skipped with ``code`` (``grew``, ``changed``,
    ``missing``, ``path-changed``), and its session and folder with it."""

    def __init__(self, msg: str, code: str = "changed"):
        super().__init__(msg)
        self.code = code


def _why_code(why: str) -> str:
    """The skip code of a :func:`_fp_diff` reason."""
    return "grew" if why.startswith("grew") else "path-changed" if why.startswith("path changed") else "changed"


def _invalid(msg: str) -> RefusedError:
    return RefusedError(f"invalid plan: {msg}; nothing written")


def _clean(p: object) -> str:
    if not isinstance(p, str) or not p or "\0" in p or not os.path.isabs(p):
        raise _invalid(f"path {p!r} is not an absolute path")
    if os.path.normpath(p) != p or ".." in p.split(os.sep):
        raise _invalid(f"path {p!r} is not normalised (contains '..', '.' or '//')")
    return p


def _under(p: str, root: str) -> bool:
    """``p`` is ``root`` or below it (both absolute and normalised: a prefix test is exact)."""
    return p == root or p.startswith(root if root.endswith("/") else root + "/")


def validate_plan(plan: Plan, homes: Homes) -> dict[str, str]:
    """``{plan root: its real path}``; raises ``invalid plan`` for anything outside the homes."""
    # the trash: where undo --force moves a session continued since the change it undoes
    allowed = [os.path.realpath(r) for r in [*homes.roots(), Path(homes.state) / "trash"]]
    files = {os.path.realpath(f) for f in homes.root_files()}    # ~/.claude.json: a root by itself
    roots: dict[str, str] = {}
    for r in plan.roots:
        real = os.path.realpath(_clean(r))
        if not (real in files or any(_under(real, a) for a in allowed)):
            raise _invalid(f"root {r} is outside the tool homes")
        roots[r] = real
    if not plan.operations:
        return roots
    inside: set[str] = set()        # paths (a database: every row op names it) and identifiers checked once
    idents: set[tuple] = set()
    for op in plan.operations:
        for p in op.paths():
            if p not in inside:
                if not any(_under(_clean(p), r) for r in roots):
                    raise _invalid(f"{p} is outside the plan's roots")
                inside.add(p)
        if isinstance(op, SqlShift):
            _check_shift(op)
        if isinstance(op, SQL_OPS):
            cols = (op.table, *_sql_columns(op))
            if cols in idents:
                continue
            bad = [c for c in cols if not _IDENT.match(str(c))]
            if bad:
                raise _invalid(f"bad SQL identifier {bad[0]!r}")
            idents.add(cols)
        if isinstance(op, WriteFile):
            _check_patches(op)
            if op.restore_from is not None:
                _check_restore_from(op, homes)
    return roots


def _check_restore_from(op: WriteFile, homes: Homes) -> None:
    """A file to rename into place lies in a transaction's folder of this state dir (undo names the
    undone apply's backup), never in a tool's home or anywhere else."""
    src = _clean(op.restore_from[0])
    if not _under(os.path.realpath(src), os.path.realpath(Path(homes.state) / "tx")):
        raise _invalid(f"{src} is not in the state dir's transactions")


def _check_shift(op: SqlShift) -> None:
    """A shift names its rows by a key and moves at least one column, with integer edits and an
    integer count (a saved plan may have been edited by hand)."""
    if not op.where or not op.columns:
        raise _invalid(f"{op.db}: a shift of {op.table} names no key or no column")
    exp = op.expect if isinstance(op.expect, dict) else {}
    if exp.get("count").__class__ is not int or not isinstance(exp.get("digest"), str):
        raise _invalid(f"{op.db}: a shift of {op.table} expects no count and digest")


def _sql_columns(op) -> list[str]:
    if isinstance(op, SqlShift):
        return [*op.where, *op.order, *op.columns]
    if isinstance(op, SqlUpdate):
        return [*op.key, *op.set, *op.expect]
    if isinstance(op, SqlInsert):
        return [*op.row, *op.key]
    return list(op.where)


def _check_patches(op: WriteFile) -> None:
    if not op.patches.ordered():
        raise _invalid(f"{op.path}: patches overlap or are not sorted")
    if op.patches and op.new_bytes is not None:
        raise _invalid(f"{op.path}: both patches and new_bytes")


def root_of(path: str, roots: dict[str, str]) -> tuple[str, list[str]]:
    """(real folder to walk from, components below it) for ``path``'s parent. ``validate_plan`` saw
    both normalised (``_clean``), so what follows the root's text is the relative path (``relpath``
    was most of a large create plan's precheck)."""
    given = max((r for r in roots if _under(path, r)), key=len)
    real = roots[given]
    rel = path[len(given):].lstrip("/") or "."
    if rel == ".":  # the root is the file itself (~/.claude.json)
        return os.path.dirname(real), []
    parts = rel.split(os.sep)[:-1]
    return real, parts


def real_target(path: str, roots: dict[str, str]) -> str:
    base, parts = root_of(path, roots)
    return os.path.join(base, *parts, os.path.basename(path))


# -- precheck -------------------------------------------------------------------------------------
def precheck(plan: Plan, homes: Homes, roots: dict[str, str], opts: ApplyOptions,
             live: Mapping[str, LiveProbe] | None = None) -> list[Prepared]:
    """Every operation prepared, or skipped with a stable code. A file that is no longer what the
    plan expected (grew, changed, missing, path changed) is skipped and named, and its whole session
    and folder with it; the rest of the plan applies. Only plan-level problems refuse (raise)."""
    dsts: dict[str, str] = {}
    folders: dict[tuple, list[str]] = {}     # creates in one folder: its missing part looked up once

    def one(n: int, op: Op) -> Prepared:
        try:
            return _prepare(n, op, roots, opts, dsts, homes, folders)
        except Stale as e:
            return _stale_skip(n, op, roots, e)
    ops = list(enumerate(plan.operations))
    writes = [(n, op) for n, op in ops if isinstance(op, WriteFile)]
    done: dict[int, Prepared] = {n: one(n, op) for n, op in ops if not isinstance(op, WriteFile)}
    done.update(zip((n for n, _ in writes), parallel_map(lambda w: one(*w), writes)))
    preps = [done[n] for n, _op in ops]
    stale: list[str] = []
    _skip_outside_dbs(preps, roots)
    check_sql(preps, stale)
    if stale:
        raise StalePlanError("plan is stale, nothing was changed:\n  " + "\n  ".join(stale))
    check_writers(preps)
    check_sessions(preps, default_guards(homes).live if live is None else live)
    check_active(preps, opts)
    propagate_session_skips(preps)
    return preps


def _skip_outside_dbs(preps: list[Prepared], roots: dict[str, str]) -> None:
    """A database whose real path is outside the roots (a symlink out of a home) is not written
    through, as a file is not (:func:`_follow`): its operations are skipped, once realpath per database."""
    inside: dict[str, bool] = {}
    for p in preps:
        if p.method != "sql" or p.skip is not None:
            continue
        if p.path not in inside:
            real = os.path.realpath(p.path)
            inside[p.path] = any(_under(real, r) for r in roots.values())
        if not inside[p.path]:
            mark_skip(p, "database is a symlink to outside the roots; not followed", "symlink")


def _stale_skip(n: int, op: Op, roots: dict[str, str], e: Stale) -> Prepared:
    """A prepared-but-skipped operation for an expectation that failed. A file that only grew or
    changed keeps its current stat (its path was walked safely just before), so the open-writer and
    live-session checks can give the better reason; a changed path is not followed."""
    path = op.paths()[0]
    reason = str(e).removeprefix(f"{path}: ")
    method = _METHOD.get(type(op), "sql")
    real = real_target(path, roots) if method != "sql" else path
    prep = Prepared(n, op, method, real, skip=Skip(path, reason, e.code))
    if method == "replace" and e.code in ("grew", "changed"):
        try:
            prep.st = Stat(os.lstat(real))
        except OSError:
            pass
    return prep


_METHOD = {WriteFile: "replace", CreateFile: "create", Rename: "rename", Delete: "delete", RmDir: "rmdir"}

WORKERS = min(4, os.cpu_count() or 1)


def parallel_map(fn, items: list, *, workers: int = WORKERS) -> list:
    """``[fn(x) for x in items]`` on a few threads: the work is hashing, reading and writing, which
    release the GIL (hashlib does for buffers over 2 KiB). The first error is raised once every
    started call has finished."""
    workers = min(workers, WORKERS)
    if workers < 2 or len(items) < 2:
        return [fn(x) for x in items]
    from concurrent.futures import ThreadPoolExecutor
    out: list = []
    with ThreadPoolExecutor(workers) as ex:
        for i in range(0, len(items), MAP_WINDOW):     # Executor.map makes every call's future at once
            out += ex.map(fn, items[i:i + MAP_WINDOW])
    return out


# calls handed to the threads at a time: a future each (~1.5 KB with its lock and condition) for the
# 7,220 files of a flip's precheck was 11 MB at once (docs/bench.md, "The two rounds since the run before")
MAP_WINDOW = 512


def _prepare(n: int, op: Op, roots, opts, dsts, homes: Homes, folders: dict) -> Prepared:
    if isinstance(op, WriteFile):
        return _prepare_write(n, op, roots, opts)
    if isinstance(op, CreateFile):
        base, parts = root_of(op.path, roots)     # real_target's, once (a convert prepares thousands)
        path = os.path.join(base, *parts, os.path.basename(op.path))
        key = (base, *parts)
        dirs = folders.get(key)
        if dirs is None:
            dirs = folders[key] = _missing_root(base, homes) + _missing_dirs(op.path, base, parts)
        return Prepared(n, op, "create", path, base, dirs=list(dirs))
    if isinstance(op, MkDir):
        path = real_target(op.path, roots)
        base, parts = root_of(op.path, roots)
        if os.path.lexists(op.path):
            raise RefusedError(f"target exists: {op.path} (histmig never replaces; nothing written)")
        return Prepared(n, op, "mkdir", path, base, dirs=_missing_dirs(op.path, base, parts))
    if isinstance(op, RmDir):
        prep = _prepare_existing(n, op, op.path, op.expect, roots, "rmdir")
        if not stat.S_ISDIR(prep.st.st_mode):
            raise Stale(f"{op.path}: not a folder any more")
        return prep
    if isinstance(op, Rename):
        return _prepare_rename(n, op, roots, dsts)
    if isinstance(op, Delete):
        prep = _prepare_existing(n, op, op.path, op.expect, roots, "delete")
        if prep.skip is None and prep.st is not None and not stat.S_ISREG(prep.st.st_mode):
            raise RefusedError(f"deleting folders is not supported: {op.path}")
        return prep
    return Prepared(n, op, "sql", op.db)


def _lstat_in(path: str, roots) -> tuple[int, os.stat_result | None]:
    base, parts = root_of(path, roots)
    try:
        dfd = fsio.open_dir(base, parts)
    except fsio.PathChanged as e:
        raise Stale(f"{path}: path changed since plan ({e.why})", "path-changed") from None
    try:
        return dfd, os.stat(os.path.basename(path), dir_fd=dfd, follow_symlinks=False)
    except FileNotFoundError:
        return dfd, None


def _fp_diff(fp: Fingerprint, st: os.stat_result, *, dir_ok: bool = False) -> str | None:
    if fp.absent:
        return "exists, plan expected it absent"
    if (fp.dev is not None and fp.dev != st.st_dev) or (fp.ino is not None and fp.ino != st.st_ino):
        return "path changed since plan (dev/ino)"
    if dir_ok and stat.S_ISDIR(st.st_mode):
        return None
    if fp.size is not None and fp.size != st.st_size:
        return "grew since plan (append)" if st.st_size > fp.size else "changed since plan (size)"
    if fp.mtime_ns is not None and fp.mtime_ns != st.st_mtime_ns:
        return "changed since plan (mtime)"
    return None


def _prepare_existing(n, op, path, fp, roots, method) -> Prepared:
    dfd, st = _lstat_in(path, roots)
    os.close(dfd)
    if st is None:
        raise Stale(f"{path}: missing (deleted since plan)", "missing")
    why = _fp_diff(fp, st, dir_ok=True)
    if why:
        raise Stale(f"{path}: {why}", _why_code(why))
    base, _ = root_of(path, roots)
    return Prepared(n, op, method, real_target(path, roots), base, st=Stat(st))


def _prepare_rename(n, op: Rename, roots, dsts) -> Prepared:
    if op.dst in dsts:
        raise RefusedError(f"two operations move to the same target {op.dst}: {dsts[op.dst]} and {op.src}")
    dsts[op.dst] = op.src
    prep = _prepare_existing(n, op, op.src, op.expect, roots, "rename")
    base, parts = root_of(op.dst, roots)
    try:
        dfd = fsio.open_dir(base, parts)
    except fsio.PathChanged as e:
        if e.why != "folder missing":
            raise Stale(f"{op.dst}: path changed since plan ({e.why})", "path-changed") from None
    else:
        try:
            os.stat(os.path.basename(op.dst), dir_fd=dfd, follow_symlinks=False)
            raise RefusedError(f"target exists: {op.dst} (histmig never replaces; nothing moved)")
        except FileNotFoundError:
            pass
        finally:
            os.close(dfd)
    prep.dirs = _missing_dirs(op.dst, base, parts)
    prep.dst = real_target(op.dst, roots)
    return prep


def _missing_root(base: str, homes: Homes) -> list[str]:
    """Folders to create (outermost first) when the plan's root itself does not exist yet (convert
    into a tool that never ran). Allowed only when the nearest existing ancestor lies inside the
    user's home stand-in, so writes still never leave the homes."""
    missing: list[str] = []
    cur = base
    while not os.path.lexists(cur):
        missing.insert(0, cur)
        cur = os.path.dirname(cur)
    if not missing:
        return []
    home = os.path.realpath(homes.home)
    if not (os.path.isdir(cur) and not os.path.islink(cur) and _under(os.path.realpath(cur), home)):
        raise RefusedError(f"invalid plan: {base} does not exist and is not inside the home {home}; nothing written")
    return missing


def _missing_dirs(path: str, base: str, parts: list[str]) -> list[str]:
    """Folders to create (outermost first) for ``path``'s parent; the existing part is walked
    without following symlinks."""
    missing: list[str] = []
    if not os.path.lexists(base):        # the root itself is created first (_missing_root)
        return [os.path.join(base, *parts[:i]) for i in range(1, len(parts) + 1)]
    for i in range(len(parts), -1, -1):
        try:
            os.close(fsio.open_dir(base, parts[:i]))
            break
        except fsio.PathChanged as e:
            if e.why != "folder missing":
                raise Stale(f"{path}: path changed since plan ({e.why})", "path-changed") from None
            missing.insert(0, os.path.join(base, *parts[:i]))
    return missing


# -- WriteFile ------------------------------------------------------------------------------------
def _prepare_write(n, op: WriteFile, roots, opts) -> Prepared:
    dfd, lst = _lstat_in(op.path, roots)
    try:
        base, _ = root_of(op.path, roots)
        prep = Prepared(n, op, "replace", real_target(op.path, roots), base)
        if lst is None:
            raise Stale(f"{op.path}: missing (deleted since plan)", "missing")
        if stat.S_ISLNK(lst.st_mode):
            if not _follow(prep, op, roots, opts):
                return prep
            src = _open_src(prep)          # the target's own folder, walked from its root
        elif not stat.S_ISREG(lst.st_mode):
            return mark_skip(prep, "not a regular file")
        else:                              # the folder just walked: no second walk
            src = fsio.open_read(prep.name, dir_fd=dfd)
    finally:
        os.close(dfd)
    try:
        st = os.fstat(src)
        prep.st = Stat(st)
        if not stat.S_ISREG(st.st_mode):
            return mark_skip(prep, "not a regular file")
        if st.st_nlink > 1 and not opts.break_hardlinks:
            return mark_skip(prep, f"hardlinked (nlink={st.st_nlink}); use --break-hardlinks", "hardlinked")
        fp_st = lst if stat.S_ISLNK(lst.st_mode) and op.expect.ino == lst.st_ino else st
        _expect(prep, op, fp_st, src, opts)
        _digest(prep, src, opts)
    finally:
        os.close(src)
    return prep


def _follow(prep: Prepared, op: WriteFile, roots, opts) -> bool:
    """Point ``prep`` at a symlink's target if allowed; otherwise mark it skipped."""
    if not opts.follow_symlinks:
        mark_skip(prep, "symlink", "symlink")
        return False
    try:
        target = os.path.realpath(op.path, strict=True)
    except OSError as e:
        why = "symlink loop (ELOOP)" if e.errno == errno.ELOOP else f"broken symlink ({e.strerror})"
        mark_skip(prep, why, "symlink")
        return False
    inside = [r for r in roots.values() if _under(target, r)]
    if not inside:
        mark_skip(prep, "symlink to outside the roots", "symlink")
        return False
    if os.lstat(target).st_uid != os.geteuid():
        mark_skip(prep, "symlink target not owned by you", "symlink")
        return False
    prep.path, prep.root = target, max(inside, key=len)
    return True


def _open_src(prep: Prepared) -> int:
    dfd = fsio.open_dir(prep.root, prep.parts)
    try:
        return fsio.open_read(prep.name, dir_fd=dfd)
    finally:
        os.close(dfd)


def _expect(prep: Prepared, op: WriteFile, st: os.stat_result, src: int, opts: ApplyOptions) -> None:
    """Size, mtime and identity against the plan; a pure append is allowed with --allow-appended
    (its old prefix is hashed here; the whole-file hash is checked in :func:`_digest`)."""
    fp = op.expect
    why = _fp_diff(fp, st)
    prep.base_size = prep.st.st_size
    if why == "grew since plan (append)" and (fp.sha256 or fp.spans) and op.compression is None:
        if not prefix_intact(op, src, fp.size):
            raise Stale(f"{op.path}: content changed since plan")
        if not opts.allow_appended:
            raise Stale(f"{op.path}: grew since plan (appended to since the plan); re-run the command "
                        "when it is idle, or add --allow-appended to include the new lines", "grew")
        prep.base_size = fp.size
    elif why:
        raise Stale(f"{op.path}: {why}", _why_code(why))
    elif fp.spans and fp.ctime_ns != st.st_ctime_ns:    # no whole-file hash to prove the rest unchanged
        raise Stale(f"{op.path}: changed since plan (ctime)")


def _digest(prep: Prepared, src: int, opts: ApplyOptions) -> None:
    """Pre hash (checked against the plan), patch check and expected post hash, in one read."""
    op: WriteFile = prep.op
    if op.compression == "zstd":
        return _digest_zstd(prep, op, src, opts)
    if op.new_bytes is not None:
        prep.content = op.new_bytes
    prep.patches = op.patches
    same_len = op.patches.same_length()
    if (op.in_place_ok and same_len and op.patches and prep.content is None
            and prep.base_size == prep.st.st_size):
        prep.method = "inplace"
    if _streamable(prep, op):
        return _check_spans(prep, src, read=not (opts.trust_plan_hash and op.expect.sha256))
    prep.pre_sha, prep.post_sha, prep.post_size = digest(prep, src, prep.st.st_size, opts, stale=Stale)
    if op.expect.sha256 and prep.base_size == prep.st.st_size and prep.pre_sha != op.expect.sha256:
        raise Stale(f"{op.path}: content changed since plan (sha256)")


def _digest_zstd(prep: Prepared, op: WriteFile, src: int, opts: ApplyOptions) -> None:
    """A ``.zst`` rewrite: the compressed source's hash (checked against the plan), every patch's
    old bytes and the patched content's hash, in one bounded decompression. The recompressed
    bytes are hashed while the temp is written (streamed, see :mod:`histmig.apply.zstdfill`)."""
    from histmig.apply import zstdfill
    prep.pre_sha = sha_range(src, 0, prep.st.st_size)
    if op.expect.sha256 and prep.pre_sha != op.expect.sha256:
        raise Stale(f"{op.path}: content changed since plan (sha256)")
    try:
        prep.plain_sha, prep.plain_size = zstdfill.expect(op, src, opts)
    except HistmigInputError as e:
        mark_skip(prep, str(e), "bad-zstd")
        return
    prep.patches = op.patches
    prep.streamed = True
    prep.post_sha, prep.post_size = None, None


def _streamable(prep: Prepared, op: WriteFile) -> bool:
    """A plain patched rewrite of a file untouched since the plan hashed it (same ctime): its
    hashes are taken while the temp is written (one read of the file instead of three), see
    :func:`histmig.apply.content.stream_segments`. In-place patches, recompressed and
    whole-content writes, and appended tails keep the full precheck digest."""
    fp = op.expect
    if not (fp.sha256 or fp.spans) or fp.ctime_ns != prep.st.st_ctime_ns:
        return False      # not provably untouched since the plan read it: digest it now
    return (prep.method == "replace" and op.compression is None and prep.content is None
            and bool(op.patches) and prep.base_size == prep.st.st_size)


def _check_spans(prep: Prepared, src: int, *, read: bool = True) -> None:
    """Each patch's old bytes are still there (a small read each); the whole-file hash is compared
    with the plan's while the temp is written, before anything is replaced. Not read (``read``
    False) for a plan this process made from the file moments ago (undo's inverse plan,
    ``ApplyOptions.trust_plan_hash``) while the file's ctime is still the plan's: its bytes are the
    ones the plan hashed, and a move's undo would otherwise pay one read per line it puts back. The
    temp's writer checks every patch's old bytes as it copies (histmig/apply/content.py)."""
    op: WriteFile = prep.op
    pl = op.patches
    if pl and pl.old_end(len(pl) - 1) > prep.base_size:    # sorted, apart: the last one tells, the first is named
        first = next(k for k in range(len(pl)) if pl.old_end(k) > prep.base_size)
        raise Stale(f"{op.path}: content changed since plan (bytes at offset {pl.offsets[first]})")
    if read:
        for offset, old, _ in pl.rows():
            if os.pread(src, len(old), offset) != old:
                raise Stale(f"{op.path}: content changed since plan (bytes at offset {offset})")
    prep.streamed = True
    prep.pre_sha = op.expect.sha256
    prep.post_sha = None
    prep.post_size = prep.base_size + pl.delta()
    if op.restore_from is not None and op.restore_from[2] == prep.post_size:
        prep.restore = op.restore_from


def touches(preps: list[Prepared], folder: Path) -> bool:
    real = os.path.realpath(folder)      # once, not once per operation (a convert batch has hundreds)
    return any(_under(p.path, real) for p in preps if p.skip is None)
