"""``[fn(x) for x in items]`` on every CPU with forked workers, for CPU-bound planning (orjson and
byte searches hold the GIL, so threads help little).

The result is exactly the sequential one, in order: ``fn`` must be a pure function of its item
whose result pickles. A worker that fails for any reason (killed, out of memory, an exception)
only costs time: its items are done again in this process.

Progress (core/progress.py): a worker's ``file`` events reach this process's listener through a
pipe, read between this process's own items, so the one progress line counts every worker's files.
A worker never waits on that pipe: when it is full the event is dropped (the count lags, nothing stalls).
"""
from __future__ import annotations

import os
import struct
import sys
from typing import Any, Callable, Sequence

from histmig.core import progress

MAX_WORKERS = 4


def cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def file_size(path) -> int:
    """A weight for :func:`fork_map`: the file's size, 0 when it cannot be read (the task itself
    reports that)."""
    try:
        return os.lstat(path).st_size
    except OSError:
        return 0


def fork_map(fn: Callable[[Any], Any], items: Sequence[Any], weights: Sequence[int], *,
             min_weight: int = 32 << 20, ncpu: int | None = None,
             encode: Callable[[Any], Any] | None = None, decode: Callable[[Any], Any] | None = None) -> list[Any]:
    """``fn`` over ``items``; ``weights`` (bytes to read, say) balance the shares, and a total
    under ``min_weight`` runs here (a fork would cost more than it saves). ``encode``/``decode``
    (both or neither) compact what a worker sends through its pipe."""
    workers = min(cpus() if ncpu is None else ncpu, MAX_WORKERS, len(items))
    if workers < 2 or sum(weights) < min_weight or not hasattr(os, "fork") or sys.platform != "linux":
        return [fn(x) for x in items]
    groups = balance(weights, workers)
    results: list[Any] = [_MISSING] * len(items)
    events = _Events() if progress.listening() else None
    children = [_spawn(fn, items, g, encode, events) for g in groups[1:]]
    if events is not None:
        events.started()
    finished = False
    try:
        for i in groups[0]:
            results[i] = fn(items[i])
            if events is not None:
                events.drain()
        for (_pid, fd), group in zip(children, groups[1:]):
            for i, r in zip(group, _collect(fd, len(group))):
                results[i] = r if r is _MISSING or decode is None else decode(r)
        finished = True
    finally:
        for pid, fd in children:
            _reap(pid, fd, kill=not finished)
        if events is not None:
            events.close()
    return [fn(items[i]) if r is _MISSING else r for i, r in enumerate(results)]


_MISSING = object()


def balance(weights: Sequence[int], n: int) -> list[list[int]]:
    """Item indices per worker, heaviest first onto the least loaded one; each group in order."""
    loads, groups = [0] * n, [[] for _ in range(n)]
    for i in sorted(range(len(weights)), key=lambda i: -weights[i]):
        w = loads.index(min(loads))
        loads[w] += weights[i] + 4096
        groups[w].append(i)
    return [sorted(g) for g in groups]


class _Events:
    """The workers' ``file`` events, 8 bytes each (one write, so never interleaved), relayed here."""

    RECORD = struct.Struct("<q")

    def __init__(self):
        self.r, self.w = os.pipe()
        os.set_blocking(self.r, False)
        os.set_blocking(self.w, False)
        self.rest = b""

    def forward(self) -> None:
        """In a worker: send its ``file`` events up the pipe instead of to the inherited listener."""
        os.close(self.r)

        def send(event: str, value: Any) -> None:
            if event == "file":
                try:
                    os.write(self.w, self.RECORD.pack(value or 0))
                except OSError:               # full (or the parent is gone): drop it, never wait
                    pass
        progress.listen(send)

    def started(self) -> None:
        os.close(self.w)                      # the workers hold the write ends now

    def drain(self) -> None:
        while True:
            try:
                data = os.read(self.r, 1 << 16)
            except BlockingIOError:
                return
            if not data:
                return
            data, n = self.rest + data, self.RECORD.size
            cut = len(data) - len(data) % n
            for (size,) in self.RECORD.iter_unpack(data[:cut]):
                progress.note("file", size)
            self.rest = data[cut:]

    def close(self) -> None:
        try:
            self.drain()
        finally:
            os.close(self.r)


def _spawn(fn, items, group: list[int], encode, events: _Events | None = None) -> tuple[int, int]:
    import pickle                                    # (only when work is shared: a small listing never forks)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:                                     # the worker: compute, send, exit without cleanup
        code = 1
        try:
            os.close(r)
            if events is not None:
                events.forward()
            out = [fn(items[i]) if encode is None else encode(fn(items[i])) for i in group]
            with os.fdopen(w, "wb") as fh:
                pickle.dump(out, fh, protocol=pickle.HIGHEST_PROTOCOL)
            code = 0
        except BaseException:   # noqa: BLE001 - any failure: the parent redoes this share
            pass
        finally:
            os._exit(code)
    os.close(w)
    return pid, r


def _collect(fd: int, n: int) -> list[Any]:
    """A worker's results, or ``_MISSING`` for each when it did not deliver all of them."""
    import pickle
    try:
        with os.fdopen(os.dup(fd), "rb") as fh:
            out = pickle.load(fh)
        return out if len(out) == n else [_MISSING] * n
    except Exception:  # noqa: BLE001 - a truncated or missing result: redo it here
        return [_MISSING] * n


def _reap(pid: int, fd: int, *, kill: bool) -> None:
    """Close the pipe and wait for the worker; when this process is unwinding (an error, ^C) the
    worker is stopped first rather than left computing."""
    try:
        os.close(fd)
    except OSError:
        pass
    try:
        if kill:
            os.kill(pid, 9)
        os.waitpid(pid, 0)
    except (ChildProcessError, ProcessLookupError):
        pass
