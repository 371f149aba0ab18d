"""Scan many files at once on every CPU: the move's planning is CPU-bound (each edited line is parsed
twice, once to find its fields and once to verify the edit), and orjson holds the GIL, so threads do
not help; forked worker processes do.

The result is exactly the sequential one: each task is an independent, read-only ``scan_file`` (or
``scan_json_file``) call and results are returned in task order. A worker that fails for any reason
(killed, out of memory, an unexpected exception) only costs time: its tasks are scanned again in
this process.
"""
from __future__ import annotations

import os
import pickle
import sys
from typing import Callable, Sequence

from histmig.ops.move_scan import FileScan
from histmig.plan import Patch

Task = tuple[Callable[..., FileScan], tuple, dict]      # (scanner, args, kwargs)

MIN_PARALLEL_BYTES = 32 << 20     # below this a fork costs more than it saves
MAX_WORKERS = 4


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _size(path: str) -> int:
    try:
        return os.lstat(path).st_size
    except OSError:
        return 0


def scan_all(tasks: Sequence[Task]) -> list[FileScan]:
    """Run every task; the same list a sequential loop would return, in the same order."""
    sizes = [_size(t[1][0]) for t in tasks]
    workers = min(_cpus(), MAX_WORKERS, len(tasks))
    if workers < 2 or sum(sizes) < MIN_PARALLEL_BYTES or not hasattr(os, "fork") or sys.platform != "linux":
        return [fn(*args, **kw) for fn, args, kw in tasks]
    groups = _balance(sizes, workers)
    results: list[FileScan | None] = [None] * len(tasks)
    children = [_spawn(tasks, g) for g in groups[1:]]
    finished = False
    try:
        for i in groups[0]:
            fn, args, kw = tasks[i]
            results[i] = fn(*args, **kw)
        for (pid, fd), group in zip(children, groups[1:]):
            for i, scan in zip(group, _collect(fd, len(group))):
                results[i] = scan
        finished = True
    finally:
        for pid, fd in children:
            _reap(pid, fd, kill=not finished)
    for i, r in enumerate(results):
        if r is None:                       # that worker failed: do its share here
            fn, args, kw = tasks[i]
            results[i] = fn(*args, **kw)
    return results   # type: ignore[return-value]


def _balance(sizes: list[int], n: int) -> list[list[int]]:
    """Task indices per worker, largest first onto the least loaded one; each group in task order."""
    loads, groups = [0] * n, [[] for _ in range(n)]
    for i in sorted(range(len(sizes)), key=lambda i: -sizes[i]):
        w = loads.index(min(loads))
        loads[w] += sizes[i] + 4096
        groups[w].append(i)
    return [sorted(g) for g in groups]


def _spawn(tasks: Sequence[Task], group: list[int]) -> tuple[int, int]:
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:                                     # the worker: scan, send, exit without cleanup
        code = 1
        try:
            os.close(r)
            out = [_pack(fn(*args, **kw)) for fn, args, kw in (tasks[i] for i in group)]
            with os.fdopen(w, "wb") as fh:
                pickle.dump(out, fh, protocol=pickle.HIGHEST_PROTOCOL)
            code = 0
        except BaseException:   # noqa: BLE001 - any failure: the parent redoes this share
            pass
        finally:
            os._exit(code)
    os.close(w)
    return pid, r


def _collect(fd: int, n: int) -> list[FileScan | None]:
    """A worker's results, or Nones when it did not deliver all of them."""
    try:
        with os.fdopen(os.dup(fd), "rb") as fh:
            packed = pickle.load(fh)
        if len(packed) != n:
            return [None] * n
        return [_unpack(p) for p in packed]
    except Exception:  # noqa: BLE001 - a truncated or missing result: redo it here
        return [None] * n


def _reap(pid: int, fd: int, *, kill: bool) -> None:
    """Close the pipe and wait for the worker; when this process is unwinding (an error, ^C) the
    worker is stopped first rather than left scanning."""
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


# ---- compact transfer: one shared copy of each recurring value, plain ints for offsets ---------

def _pack(scan: FileScan) -> tuple:
    values: dict[bytes, int] = {}
    offsets, olds, news = [], [], []
    for p in scan.patches:
        offsets.append(p.offset)
        olds.append(values.setdefault(p.old, len(values)))
        news.append(values.setdefault(p.new, len(values)))
    return (scan.path, list(values), offsets, olds, news, scan.fields, scan.content, scan.lines,
            scan.fingerprint, scan.compressed, scan.skip, scan.warnings, scan.first)


def _unpack(t: tuple) -> FileScan:
    path, values, offsets, olds, news, fields, content, lines, fp, compressed, skip, warnings, first = t
    patches = [Patch(o, values[a], values[b]) for o, a, b in zip(offsets, olds, news)]
    return FileScan(path=path, patches=patches, fields=fields, content=content, lines=lines, fingerprint=fp,
                    compressed=compressed, skip=skip, warnings=warnings, first=first)

