"""Where a converted file's bytes go while a writer produces them, one line at a time.

A writer never holds the file it writes: each line goes to a :class:`Sink`, which counts and hashes
it and then, by mode, keeps it (``memory``: tests and ``--plan-out``, capped), writes it to a spool
file under ``<state dir>/spool/`` (``spool``: apply copies it from there in chunks), or drops it
(``count``: a dry run writes nothing at all, it only needs the size and hash). A spool sink given a
:class:`Hold` keeps a small file in memory instead, within the hold's budget, and opens its spool
file only when the file outgrows it (creating, writing and closing a spool file cost more system
time than converting a small session).
"""
from __future__ import annotations

import hashlib
import itertools
import os
import shutil
import tempfile
from pathlib import Path

from histmig.core.diagnostics import RefusedError
from histmig.core.valueclass import value


class TooLargeToEmbed(RefusedError):
    """``--plan-out`` embeds every converted file in the plan; this one is over the cap."""


class SpoolError(RefusedError):
    """The spool could not be written (a full disk for the state dir, ...): the run stops there,
    exit 1; the session being converted and the rest of its batch are not applied."""

    @classmethod
    def of(cls, e: OSError, path: str | None) -> "SpoolError":
        return cls(f"{e.strerror or e} while spooling a converted session; it and the rest of its batch were "
                   "not applied (nothing of them written)", path=path)


@value(frozen=True)
class Spooled:
    """A converted file that was not kept in memory: its spool file (None after a dry run), sha256, size."""

    path: str | None
    sha256: str
    size: int

    def __init__(self, path: str | None, sha256: str, size: int) -> None:
        object.__setattr__(self, "path", path)
        object.__setattr__(self, "sha256", sha256)
        object.__setattr__(self, "size", size)


class Hold:
    """How much converted data a run's spool sinks keep in memory: files of at most ``file_cap``
    bytes while ``used`` (the files held since the last :meth:`release`) stays within ``cap``."""

    def __init__(self, cap: int = 8 << 20, file_cap: int = 256 << 10):
        self.cap, self.file_cap, self.used = cap, file_cap, 0

    def fits(self, size: int) -> bool:
        return size <= self.file_cap and self.used + size <= self.cap

    def release(self) -> None:
        """The held files were applied (their batch's operations are dropped)."""
        self.used = 0


class Sink:
    def __init__(self, mode: str = "memory", spool_dir: str | None = None, cap: int | None = None,
                 hold: Hold | None = None):
        self.mode, self.cap, self.size = mode, cap, 0
        self.hash = hashlib.sha256()
        self.parts: list[bytes] = []
        self.path: str | None = None
        self.fh = None
        self.spool_dir, self.hold = spool_dir, hold
        if mode == "spool" and hold is None:
            self._open()

    def _open(self) -> None:
        try:
            fd, self.path = _new_part(self.spool_dir)
        except OSError as e:
            raise SpoolError.of(e, self.spool_dir) from None
        self.fh = os.fdopen(fd, "wb", buffering=BUFFER)

    def write(self, data: bytes) -> None:
        self.size += len(data)
        if self.mode == "memory":
            if self.cap is not None and self.size > self.cap:
                raise TooLargeToEmbed(f"--plan-out embeds each converted file in the plan, and this one is over "
                                      f"{self.cap >> 20} MiB; convert it without --plan-out (nothing written)")
            self.parts.append(data)
            return
        if self.hold is not None:        # held in memory while it fits, then spooled
            if self.hold.fits(self.size):
                self.parts.append(data)
                return
            self.hold, held, self.parts = None, b"".join(self.parts), []
            self._open()
            if held:
                self._spool(held)
        self._spool(data)

    def _spool(self, data: bytes) -> None:
        self.hash.update(data)
        if self.fh is not None:
            try:
                self.fh.write(data)
            except OSError as e:
                self.discard()
                raise SpoolError.of(e, self.path) from None

    def result(self) -> bytes | Spooled:
        """The bytes (memory mode, or a file a hold kept), else what apply needs to copy and verify them."""
        if self.mode == "memory" or (self.hold is not None and self.fh is None):
            data, self.parts = b"".join(self.parts), []
            if self.mode != "memory":
                self.hold.used += len(data)
            return data
        if self.fh is not None:
            try:
                self.fh.close()       # flushes the last buffer
            except OSError as e:
                self.discard()
                raise SpoolError.of(e, self.path) from None
            self.fh = None
        return Spooled(self.path, self.hash.hexdigest(), self.size)

    def extend(self, other: "Sink") -> None:
        """Append what ``other``, an unfinished sink of the same run, holds, and drop it: for a writer
        whose first bytes name what only the rest tells (Cline's ``updated_at``, the last message's time),
        so it writes the rest to ``other`` first. Held bytes move here as they are, a spool file is
        copied in chunks. A dry run's sinks (``count``) keep no bytes: only the size is added, so the
        hash then covers this sink's own bytes (a dry run is never applied)."""
        try:
            if other.fh is not None:
                fh, other.fh = other.fh, None
                try:
                    fh.close()                   # flushes its last buffer
                    with open(other.path, "rb") as src:
                        while chunk := src.read(COPY_CHUNK):
                            self.write(chunk)
                except OSError as e:
                    raise SpoolError.of(e, other.path) from None
            elif other.mode == "count":
                self.size += other.size
            else:
                for part in other.parts:
                    self.write(part)
        finally:
            other.parts = []
            other.discard()

    def discard(self) -> None:
        fh, self.fh = self.fh, None
        if fh is not None:
            try:
                fh.close()
            except OSError:
                pass                  # a full disk: the buffer is dropped with the file
        if self.path:
            Path(self.path).unlink(missing_ok=True)


BUFFER = 64 * 1024     # per spool file; a longer line is written straight through
COPY_CHUNK = 1 << 20   # Sink.extend copies a spool file this much at a time
_SEQ = itertools.count()


def _new_part(spool_dir: str | None) -> tuple[int, str]:
    """A new spool file (0600, never an existing one): named by a counter in the run's own 0700
    folder (a random name cost more than the rest of spooling a small session), else mkstemp."""
    if spool_dir is not None:
        path = os.path.abspath(os.path.join(spool_dir, f"{os.getpid()}-{next(_SEQ)}.part"))
        try:
            return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600), path
        except FileExistsError:
            pass
    return tempfile.mkstemp(dir=spool_dir, suffix=".part")


def size_of(data: bytes | Spooled) -> int:
    return len(data) if isinstance(data, bytes) else data.size


def discard(data: bytes | Spooled) -> None:
    if isinstance(data, Spooled) and data.path:
        Path(data.path).unlink(missing_ok=True)


class SpoolDir:
    """``<state>/spool/<pid>-<random>/`` (0700) for one convert run, removed with everything in it
    on close. A run that was killed leaves its folder; the next run removes it (its pid is gone)."""

    def __init__(self, state: Path):
        base = Path(state) / "spool"
        try:
            Path(state).mkdir(parents=True, exist_ok=True, mode=0o700)
            base.mkdir(exist_ok=True, mode=0o700)
            _remove_orphans(base)
            self.path = tempfile.mkdtemp(dir=base, prefix=f"{os.getpid()}-")        # 0700
        except OSError as e:
            raise SpoolError.of(e, base) from None

    def close(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)


def _remove_orphans(base: Path) -> None:
    """Spool folders of runs whose process no longer exists (spool files are copies, never the only bytes)."""
    for d in base.iterdir():
        pid = d.name.split("-", 1)[0]
        if d.is_dir() and pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(d, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:          # EPERM: someone else's process, alive
        return True
    return True
