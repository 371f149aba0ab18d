"""Which processes hold a file open for writing (Linux ``/proc``; a no-op elsewhere).

Codex keeps its rollout open ``O_APPEND`` for a whole session; replacing such a file loses every later
append (docs/specs/safety.md §3.2). We look for the file's ``(st_dev, st_ino)`` among ``/proc/<pid>/fd/*`` and read
``/proc/<pid>/fdinfo/<fd>`` ``flags:`` (octal): access mode ``& 3 != 0`` means writable. This works
unprivileged for the user's own processes, which is what matters (agents run as the user).
"""
from __future__ import annotations

import os
from typing import Iterable

from histmig.core.valueclass import value

PROC = "/proc"


@value(frozen=True)
class Holder:
    pid: int
    name: str

    def __init__(self, pid: int, name: str) -> None:
        object.__setattr__(self, "pid", pid)
        object.__setattr__(self, "name", name)

    def describe(self) -> str:
        return f"pid {self.pid} ({self.name})"


def supported() -> bool:
    return os.path.isdir(os.path.join(PROC, "self", "fd"))


def open_writers(inodes: Iterable[tuple[int, int]]) -> dict[tuple[int, int], list[Holder]]:
    """Map each ``(dev, ino)`` held open for writing to its holders (one /proc scan for all)."""
    wanted = set(inodes)
    found: dict[tuple[int, int], list[Holder]] = {}
    if not wanted or not supported():
        return found
    for entry in os.listdir(PROC):
        if entry.isdigit():
            for key in _writable_matches(int(entry), wanted):
                holders = found.setdefault(key, [])
                if all(h.pid != int(entry) for h in holders):
                    holders.append(Holder(int(entry), _comm(int(entry))))
    return found


def _writable_matches(pid: int, wanted: set[tuple[int, int]]) -> list[tuple[int, int]]:
    fd_dir = f"{PROC}/{pid}/fd"
    try:
        fds = os.listdir(fd_dir)
    except OSError:  # process gone or not ours
        return []
    hits = []
    for fd in fds:
        try:
            st = os.stat(f"{fd_dir}/{fd}")
        except OSError:
            continue
        key = (st.st_dev, st.st_ino)
        if key in wanted and _writable(pid, fd):
            hits.append(key)
    return hits


def _writable(pid: int, fd: str) -> bool:
    try:
        with open(f"{PROC}/{pid}/fdinfo/{fd}") as fh:
            for line in fh:
                if line.startswith("flags:"):
                    return int(line.split()[1], 8) & 3 != 0
    except (OSError, ValueError):
        return False
    return False


def _comm(pid: int) -> str:
    try:
        with open(f"{PROC}/{pid}/comm") as fh:
            return fh.read().strip()
    except OSError:
        return "?"


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class OpenFiles:
    """One /proc scan of every open file, asked file by file afterwards (``pack`` streams its sessions:
    it cannot list every file first). Holds ``(dev, ino) -> [(pid, fd)]`` of the files open now, bounded
    by the system's open files; whether one is open for writing is read only for the files asked about."""

    def __init__(self) -> None:
        self.fds: dict[tuple[int, int], list[tuple[int, str]]] = {}
        if not supported():
            return
        for entry in os.listdir(PROC):
            if not entry.isdigit():
                continue
            fd_dir = f"{PROC}/{entry}/fd"
            try:
                fds = os.listdir(fd_dir)
            except OSError:  # process gone or not ours
                continue
            for fd in fds:
                try:
                    st = os.stat(f"{fd_dir}/{fd}")
                except OSError:
                    continue
                self.fds.setdefault((st.st_dev, st.st_ino), []).append((int(entry), fd))

    def writers(self, key: tuple[int, int]) -> list[Holder]:
        """Who holds this file open for writing (as :func:`open_writers` says it)."""
        out: list[Holder] = []
        for pid, fd in self.fds.get(key, ()):
            if _writable(pid, fd) and all(h.pid != pid for h in out):
                out.append(Holder(pid, _comm(pid)))
        return out
