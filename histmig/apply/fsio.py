"""The one file-system facade: every mutating call histmig makes goes through an :class:`FS`.

Why one facade (docs/specs/safety.md §0.1, chezmoi's ``System``): fault injection, crash simulation and
operation-order spying then come for free, and the write protocol can be tested at every step.

* Every *mutating* operation (open-for-write, write, copy (copy_file_range), fsync, fchown, fchmod, setxattr, utime,
  replace, rename, link, unlink, mkdir, rmdir, truncate, sql) is counted; reads are not.
* ``FS.faults``: raise ``OSError(errno)`` at counted operation k (optionally counting only one
  operation name or paths containing a string) — SQLite's ``do_ioerr_test``.
* ``HISTMIG_CRASH_AT=k`` (test-only): ``SIGKILL`` ourselves just before counted operation k.
* ``FS.log``: ``(name, label)`` of every counted operation, in order (the spy). The process's own
  facade (``from_env``) keeps none: an apply's memory does not grow with its operations.
* ``FS.hooks``: callables run at named points (``point(name, label)``), never counted: tests use
  them to append to a file "between the last check and the replace" and similar races.
"""
from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import signal
import stat
import threading
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator

from histmig.core.fsread import open_read  # noqa: F401 (re-exported: reads are not counted, so not the facade's)

TMP_SUFFIX = ".histmig-tmp"
_COUNT_LOCK = threading.Lock()
WRITE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def temp_name(name: str, txid: str) -> str:
    """``.<name>.<txid>.histmig-tmp``: matches no agent's discovery glob (rollout-*.jsonl, *.jsonl)."""
    return f".{name}.{txid}{TMP_SUFFIX}"


@dataclass
class Fault:
    """Raise ``OSError(err)`` at the ``at``-th matching operation (1-based), once."""

    at: int
    err: int = errno.EIO
    op: str | None = None          # count only this operation name ("write", "fsync", ...)
    path_contains: str | None = None
    seen: int = 0
    fired: bool = False

    def matches(self, name: str, label: str) -> bool:
        return (self.op is None or self.op == name) and (self.path_contains is None or self.path_contains in label)


@dataclass
class FS:
    faults: list[Fault] = field(default_factory=list)
    crash_at: int | None = None
    hooks: dict[str, Callable[[str], None]] = field(default_factory=dict)
    log: list[tuple[str, str]] | None = field(default_factory=list)     # None: not kept (from_env)
    count: int = 0
    # test-only switch used to prove the crash checker has teeth (a broken protocol must be caught)
    skip_fsync: bool = False

    @classmethod
    def from_env(cls) -> "FS":
        k = os.environ.get("HISTMIG_CRASH_AT")
        # HISTMIG_TEST_FSYNC=0 (like git's GIT_TEST_FSYNC=0): count fsyncs but do not run them; for
        # process-crash loops only, where the page cache survives the crash anyway
        return cls(crash_at=int(k) if k and k.isdigit() else None,
                   skip_fsync=os.environ.get("HISTMIG_TEST_FSYNC") == "0", log=None)

    @property
    def fired(self) -> bool:
        return any(f.fired for f in self.faults)

    # -- bookkeeping --------------------------------------------------------------------------
    def _op(self, name: str, label) -> None:
        label = os.fsdecode(label) if not isinstance(label, str) else label
        with _COUNT_LOCK:       # temps are filled two at a time: each k stays exactly one operation
            self.count += 1
            if self.log is not None:
                self.log.append((name, label))
            if self.crash_at is not None and self.count == self.crash_at:
                os.kill(os.getpid(), signal.SIGKILL)
            for f in self.faults:
                if f.fired or not f.matches(name, label):
                    continue
                f.seen += 1
                if f.seen == f.at:
                    f.fired = True
                    raise OSError(f.err, os.strerror(f.err), label)

    def point(self, name: str, label: str = "") -> None:
        hook = self.hooks.get(name)
        if hook is not None:
            hook(label)

    # -- operations ---------------------------------------------------------------------------
    def open_write(self, name, *, dir_fd: int | None = None, flags: int = WRITE_FLAGS,
                   mode: int = 0o600, label=None) -> int:
        self._op("open", label or name)
        with _naming(label, dir_fd):
            return os.open(name, flags, mode, dir_fd=dir_fd)

    def write(self, fd: int, data: bytes, label: str) -> None:
        self._op("write", label)
        view = memoryview(data)
        with _naming(label):
            while view:
                n = os.write(fd, view)
                view = view[n:]

    def write_parts(self, fd: int, parts: Iterable[bytes], label: str) -> None:
        """Several buffers written back to back as one counted write (no joined copy in memory; a
        generator's are written as they come)."""
        self._op("write", label)
        with _naming(label):
            for data in parts:
                view = memoryview(data)
                while view:
                    n = os.write(fd, view)
                    view = view[n:]

    def pwrite(self, fd: int, data: bytes, offset: int, label: str) -> None:
        self._op("write", label)
        done = 0
        with _naming(label):
            while done < len(data):
                done += os.pwrite(fd, data[done:], offset + done)

    def copy_range(self, src: int, dst: int, count: int, offset_src: int, label: str) -> int:
        """``os.copy_file_range`` (in-kernel copy); the caller falls back on EXDEV/ENOSYS/EINVAL."""
        self._op("copy", label)
        with _naming(label):
            return os.copy_file_range(src, dst, count, offset_src)

    def fsync(self, fd: int, label: str) -> None:
        self._op("fsync", label)
        if not self.skip_fsync:
            with _naming(label):
                os.fsync(fd)

    def fchown(self, fd: int, uid: int, gid: int, label: str) -> None:
        self._op("fchown", label)
        os.fchown(fd, uid, gid)

    def fchmod(self, fd: int, mode: int, label: str) -> None:
        self._op("fchmod", label)
        with _naming(label):
            os.fchmod(fd, mode)

    def setxattr(self, fd: int, key: str, value: bytes, label: str) -> None:
        self._op("setxattr", label)
        with _naming(label):
            os.setxattr(fd, key, value)

    def utime(self, fd: int, ns: tuple[int, int], label: str) -> None:
        self._op("utime", label)
        with _naming(label):
            os.utime(fd, ns=ns)

    def truncate(self, fd: int, size: int, label: str) -> None:
        self._op("truncate", label)
        with _naming(label):
            os.ftruncate(fd, size)

    def replace(self, src: str, dst: str, *, dir_fd: int | None = None, label=None) -> None:
        self._op("replace", label or dst)
        with _naming(label, dir_fd):
            os.replace(src, dst, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)

    def rename_noreplace(self, src: str, dst: str, *, src_dir_fd: int | None = None,
                         dst_dir_fd: int | None = None, label=None) -> None:
        self._op("rename", label or dst)
        rename_noreplace(src, dst, src_dir_fd=src_dir_fd, dst_dir_fd=dst_dir_fd)

    def link(self, src: str, dst: str, *, src_dir_fd=None, dst_dir_fd=None, label=None) -> None:
        self._op("link", label or dst)
        with _naming(label, src_dir_fd):
            os.link(src, dst, src_dir_fd=src_dir_fd, dst_dir_fd=dst_dir_fd, follow_symlinks=False)

    def unlink(self, name: str, *, dir_fd: int | None = None, label=None) -> None:
        self._op("unlink", label or name)
        os.unlink(name, dir_fd=dir_fd)

    def mkdir(self, name: str, mode: int = 0o777, *, dir_fd: int | None = None, label=None) -> None:
        self._op("mkdir", label or name)
        os.mkdir(name, mode, dir_fd=dir_fd)

    def rmdir(self, name: str, *, dir_fd: int | None = None, label=None) -> None:
        self._op("rmdir", label or name)
        os.rmdir(name, dir_fd=dir_fd)

    def sql(self, what: str, label: str) -> None:
        """A counted marker before a database step (backup, commit): SQLite does its own I/O."""
        self._op(what, label)

    def fsync_batch(self, items: list[tuple[int, str]]) -> None:
        """Make several open files (or folders) durable together (docs/specs/safety.md §1.x).

        Each item counts as one ``fsync`` operation, so faults, crash points and the order spy see
        every file's durability step; then one ``syncfs(2)`` per file system does the work (one
        journal commit instead of one per file). Where ``syncfs`` is missing or cannot report
        write-back errors (Linux < 5.8 returned 0 regardless), each item is fsynced instead."""
        for _fd, label in items:
            self._op("fsync", label)
        if self.skip_fsync:
            return
        by_dev: dict[int, list[int]] = {}
        for fd, _label in items:
            by_dev.setdefault(os.fstat(fd).st_dev, []).append(fd)
        with _naming(items[0][1] if len(by_dev) == 1 and len(items) == 1 else None):
            for fds in by_dev.values():
                if not syncfs(fds[0]):
                    for fd in fds:
                        os.fsync(fd)

    def fsync_dir(self, path: str) -> None:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
        try:
            self.fsync(fd, path)
        finally:
            os.close(fd)


@contextlib.contextmanager
def _naming(label, dir_fd: int | None = None) -> Iterator[None]:
    """An ``OSError`` of a call on a descriptor names no file, and one relative to a folder
    descriptor names only the entry (a temp's bare name): name the file the operation is for, so
    the user's one error line says which file (docs/safety.md "Faults mid-apply")."""
    try:
        yield
    except OSError as e:
        if label and (e.filename is None or dir_fd is not None):
            e.filename, e.filename2 = os.fsdecode(label), None
        raise


# -- the current facade ------------------------------------------------------------------------
_current: FS | None = None


def current() -> FS:
    global _current
    if _current is None:
        _current = FS.from_env()
    return _current


@contextlib.contextmanager
def using(fs: FS) -> Iterator[FS]:
    """Run a block with ``fs`` as the facade (tests: faults, spies, hooks)."""
    global _current
    old, _current = _current, fs
    try:
        yield fs
    finally:
        _current = old


# -- syncfs ----------------------------------------------------------------------------------------
def _syncfs_fn():
    """libc ``syncfs`` when it reports write-back errors (Linux >= 5.8), else None. Python has no
    ``os.syncfs`` (3.11-3.13)."""
    fn = getattr(_libc, "syncfs", None) if _libc is not None else None
    try:
        major, minor = (int(x) for x in os.uname().release.split(".")[:2])
    except ValueError:
        return None
    return fn if fn is not None and (major, minor) >= (5, 8) else None


def syncfs(fd: int) -> bool:
    """Flush the whole file system holding ``fd``; False if unavailable (the caller fsyncs each
    file). Raises OSError on a write-back error."""
    fn = _SYNCFS
    if fn is None:
        return False
    if fn(fd) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL):
        return False
    raise OSError(err, os.strerror(err))


# -- rename without replace ----------------------------------------------------------------------
_AT_FDCWD = -100
_RENAME_NOREPLACE = 1
try:
    _libc = ctypes.CDLL(None, use_errno=True)
    _renameat2 = getattr(_libc, "renameat2", None)
except OSError:  # pragma: no cover - no libc (not Linux)
    _libc = None
    _renameat2 = None
_SYNCFS = _syncfs_fn()


def _sync_file_range_fn():
    fn = getattr(_libc, "sync_file_range", None) if _libc is not None else None
    if fn is not None:
        fn.argtypes = (ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint)
    return fn


_SYNC_FILE_RANGE = _sync_file_range_fn()
_SYNC_FILE_RANGE_WRITE = 2


def start_writeback(fd: int) -> None:
    """Ask the kernel to start writing ``fd``'s dirty pages now, without waiting
    (``sync_file_range(SYNC_FILE_RANGE_WRITE)``). Not a durability step (the batch's ``syncfs``
    is): the disk works while the next files are written, so that sync has less left to do."""
    if _SYNC_FILE_RANGE is not None:
        _SYNC_FILE_RANGE(fd, 0, 0, _SYNC_FILE_RANGE_WRITE)


def rename_noreplace(src: str, dst: str, *, src_dir_fd: int | None = None, dst_dir_fd: int | None = None) -> None:
    """Rename that fails with FileExistsError if ``dst`` exists — even an empty folder, which plain
    ``os.rename`` silently replaces. Linux: ``renameat2(RENAME_NOREPLACE)``; elsewhere a check done
    under histmig's global lock (agents do not create these names)."""
    if _renameat2 is not None:
        sfd = _AT_FDCWD if src_dir_fd is None else src_dir_fd
        dfd = _AT_FDCWD if dst_dir_fd is None else dst_dir_fd
        if _renameat2(sfd, os.fsencode(src), dfd, os.fsencode(dst), _RENAME_NOREPLACE) == 0:
            return
        err = ctypes.get_errno()
        if err not in (errno.ENOSYS, errno.EINVAL):
            raise OSError(err, os.strerror(err), dst)
    if _exists(dst, dst_dir_fd):
        raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), dst)
    os.rename(src, dst, src_dir_fd=src_dir_fd, dst_dir_fd=dst_dir_fd)


def _exists(name: str, dir_fd: int | None) -> bool:
    try:
        os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        return True
    except FileNotFoundError:
        return False


# -- walking without following symlinks ------------------------------------------------------------
class PathChanged(Exception):
    """A folder on the way to a target is missing, a symlink or not a folder."""

    def __init__(self, path: str, why: str):
        super().__init__(f"{path}: {why}")
        self.path, self.why = path, why


def open_dir(root: str, rel_parts: list[str]) -> int:
    """Open ``root/rel_parts...`` as a directory fd, one component at a time with O_NOFOLLOW, so a
    folder swapped for a symlink after planning is caught (docs/specs/safety.md §1.3)."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    where = root
    for part in rel_parts:
        where = os.path.join(where, part)
        try:
            nfd = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
        except OSError as e:
            os.close(fd)
            if e.errno in (errno.ELOOP, errno.ENOTDIR):
                raise PathChanged(where, "a folder on the path is now a symlink or a file") from None
            if e.errno == errno.ENOENT:
                raise PathChanged(where, "folder missing") from None
            raise
        os.close(fd)
        fd = nfd
    return fd


def is_regular(st: os.stat_result) -> bool:
    return stat.S_ISREG(st.st_mode)
