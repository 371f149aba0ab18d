"""The inverses of the rewritten files, made before the planning loop reaches them.

A file that must be read (diffed against its backup, or hashed) is the expensive part of an undo:
a move's undo diffs every transcript it rewrote, one patch per line. Files that add up to
``FORK_MIN`` bytes are shared out to forked workers, one per CPU (histmig/core/forkmap.py: the
line pairing holds the GIL, so threads share one core); fewer go to two threads, whose reads and
hashes release the GIL while the main thread inverts the database rows. A file still as the apply
left it with its edits journaled (:func:`~histmig.verbs.undo.files.as_left`) is not read at all:
its inverse is a few stats, cheaper than a hand-off, so the loop makes it in its turn.
"""
from __future__ import annotations

import dataclasses
import functools
from typing import Any, Iterable, Iterator

from histmig.core.forkmap import cpus, file_size, fork_map
from histmig.core.plan import WriteFile, patch_list
from histmig.verbs.undo import files as uf

FORK_MIN = 32 << 20      # bytes to read under which a fork costs more than it saves


class _Done:
    """A worker's result where the loop expects a future."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def result(self) -> Any:
        return self.value


def replaced_ahead(env: uf.Env, intents: list[dict], *, fork: bool | None = None) -> tuple[dict[int, Any], Any]:
    """By ``id`` of its intent: a future of the file's Member (or of the exception to raise in its
    turn); and the thread pool, for the caller to shut down (None when forked workers did it).
    ``fork``: whether to fork, decided for the whole transaction (:func:`forks`) when ``intents`` is
    one window of it; None: by these intents' weight."""
    todo = list(_to_read(env, intents))
    weights = [file_size(path) for _, path in todo]
    if len(todo) >= 2 and cpus() > 1 and (sum(weights) >= FORK_MIN if fork is None else fork):
        recs = [r for r, _ in todo]
        out = fork_map(functools.partial(_one, env), recs, weights, min_weight=0, encode=_pack, decode=_unpack)
        return {id(r): _Done(m) for r, m in zip(recs, out)}, None
    # the threads take what they read and hash: files not provably as the apply left them
    todo = [(r, path) for r, path in todo if path == r["path"] and uf.as_left(path, r) is None]
    if len(todo) < 2:
        return {}, None
    from concurrent.futures import ThreadPoolExecutor
    from histmig.apply.check import WORKERS
    pool = ThreadPoolExecutor(min(2, WORKERS))
    return {id(r): pool.submit(_one, env, r) for r, _ in todo}, pool


def _to_read(env: uf.Env, intents: list[dict]) -> Iterator[tuple[dict, str]]:
    """The replaced files whose inverse needs their bytes read, with where they are now."""
    return ((r, path) for r in intents if r["method"] == "replace" and (path := env.locate(r["path"])) is not None
            and not (r.get("patches") and uf.as_left(path, r) is not None))


def forks(env: uf.Env, intents: Iterable[dict]) -> bool:
    """Whether the files to read add up to ``FORK_MIN`` (each window of them then goes to forked
    workers, as all of them at once would), stopping at the first intent that gets there."""
    if cpus() < 2:
        return False
    total = 0
    for _r, path in _to_read(env, intents):
        total += file_size(path)
        if total >= FORK_MIN:
            return True
    return False


def _one(env: uf.Env, rec: dict) -> Any:
    try:
        return uf.inverse_replace(env, rec)
    except Exception as e:       # raised where the sequential loop would have raised it
        return e


def _pack(m: Any) -> tuple:
    """A Member with its rewrites' patches as columns (histmig/core/patches.py: a ``PatchList`` pickles
    as its arrays, where 200,000 :class:`Patch` objects cost a second each way)."""
    if not isinstance(m, uf.Member):
        return m, []
    packed = []
    for i, op in enumerate(m.ops):
        if isinstance(op, WriteFile) and op.patches:
            packed.append((i, patch_list(op.patches)))
            m.ops[i] = dataclasses.replace(op, patches=())
    return m, packed


def _unpack(t: tuple) -> Any:
    m, packed = t
    for i, patches in packed:
        m.ops[i] = dataclasses.replace(m.ops[i], patches=patches)
    return m
