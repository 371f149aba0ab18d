"""Scan many files at once on every CPU: the move's planning is CPU-bound (each edited line is parsed
twice, once to find its fields and once to verify the edit), and orjson holds the GIL, so threads do
not help; forked worker processes do.

The result is exactly the sequential one: each task is an independent, read-only ``scan_file`` (or
``scan_json_file``) call and results are returned in task order. A worker that fails for any reason
(killed, out of memory, an unexpected exception) only costs time: its tasks are scanned again in
this process.
"""
from __future__ import annotations

from typing import Callable, Sequence

from histmig.core.forkmap import cpus, file_size, fork_map
from histmig.toolkit.move.scan import FileScan
from histmig.core.plan import PatchList, patch_list

Task = tuple[Callable[..., FileScan], tuple, dict]      # (scanner, args, kwargs)

MIN_PARALLEL_BYTES = 32 << 20     # below this a fork costs more than it saves


def _cpus() -> int:
    return cpus()


def scan_all(tasks: Sequence[Task]) -> list[FileScan]:
    """Run every task; the same list a sequential loop would return, in the same order. A worker's
    refused values (``FileScan.refused``) are recorded in this process's path map (``args[1]``)."""
    out = fork_map(_run, tasks, [file_size(t[1][0]) for t in tasks], min_weight=MIN_PARALLEL_BYTES,
                   ncpu=_cpus(), encode=_pack, decode=_unpack)
    for (_, args, _), scan in zip(tasks, out):
        for value, why, where in scan.refused:
            args[1].refuse(value, why, scan.path, where)
    return out


def _run(task: Task) -> FileScan:
    fn, args, kw = task
    scan = fn(*args, **kw)
    if isinstance(scan.patches, PatchList):
        scan.patches.spill()     # one file's at a time: this process's share is not held until the end
    return scan


# ---- compact transfer: the patches as columns (histmig/core/patches.py), the rest as plain values ---

def _pack(scan: FileScan) -> tuple:
    return (scan.path, patch_list(scan.patches), scan.fields, scan.content, scan.lines,
            scan.fingerprint, scan.compressed, scan.skip, scan.warnings, scan.first, scan.refused)


def _unpack(t: tuple) -> FileScan:
    path, packed, fields, content, lines, fp, compressed, skip, warnings, first, refused = t
    # one file's patches at a time into the spool (histmig/core/spool.py), not a share's at once
    return FileScan(path=path, patches=packed.spill(), fields=fields, content=content, lines=lines,
                    fingerprint=fp, compressed=compressed, skip=skip, warnings=warnings, first=first, refused=refused)
