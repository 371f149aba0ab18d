"""A listing of many session files on every CPU (histmig/core/forkmap.py ``fork_map``), for a tool whose
``discover`` reads each file on its own (Codex's rollouts, Qwen's session files).

Files go in batches (``BATCH``: bounds what is held, keeps the listing lazy); in each, the scan index's
hits are answered here first, so a repeat scan forks nothing, and only the files to read are shared
out (a batch under fork_map's 32 MB runs here). A worker sees the index read-only: what it would store
comes back with its ref and is filed here, in the one index that is saved. Refs come out in the
order of the paths."""
from __future__ import annotations

import os
from typing import Any, Callable, Iterable, Iterator

BATCH = 1024


def list_files(paths: Iterable[Any], index: Any, hit: Callable[[Any, Any], Any],
               make: Callable[[Any, Any], Any], path_of: Callable[[Any], Any] = lambda p: p) -> Iterator[Any]:
    """``make(path, index)`` for each path (a ref, or None for a file that is not the tool's), but
    ``hit(path, index)`` first when there is an index (the ref of an unchanged file, or None).
    ``path_of``: the file behind an item of ``paths`` when an item carries more than its path (Codex:
    (path, archived, shadowed)), for its weight."""
    batch: list[Any] = []
    for path in paths:
        batch.append(path)
        if len(batch) >= BATCH:
            yield from _batch(batch, index, hit, make, path_of)
            batch = []
    yield from _batch(batch, index, hit, make, path_of)


def _batch(batch: list[Any], index: Any, hit: Callable, make: Callable, path_of: Callable) -> Iterator[Any]:
    if not batch:
        return
    hits = [None if index is None else hit(path, index) for path in batch]
    todo = [path for path, ref in zip(batch, hits) if ref is None]
    recorder = None if index is None else _Recorder(index)

    def one(path: Any) -> tuple[Any, tuple | None]:
        if recorder is not None:
            recorder.stored = None
        ref = make(path, recorder)
        return ref, None if recorder is None else recorder.stored
    read: Iterator = iter(())
    if todo:
        from histmig.core.forkmap import file_size, fork_map
        read = iter(fork_map(one, todo, [file_size(path_of(p)) for p in todo]))
    for ref in hits:
        if ref is not None:
            yield ref
            continue
        ref, stored = next(read)
        if index is not None and ref is not None:        # (None: not the tool's file, no ref)
            index.touched.add(os.fspath(ref.path))
            if stored is not None:
                index.store(*stored[0], **stored[1])
        yield ref


class _Recorder:
    """The scan index as a (forked) worker sees it: look-ups answered, a store handed back."""

    def __init__(self, index: Any):
        self.index, self.stored = index, None

    def hit(self, *a: Any) -> Any:
        return self.index.hit(*a)

    def grown(self, *a: Any) -> Any:
        return self.index.grown(*a)

    def store(self, *a: Any, **kw: Any) -> None:
        self.stored = (a, kw)
