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

    def work(w: int) -> None:
        if events is not None:
            events.forward()
        out = [fn(items[i]) if encode is None else encode(fn(items[i])) for i in group]
        with os.fdopen(w, "wb") as fh:
            pickle.dump(out, fh, protocol=pickle.HIGHEST_PROTOCOL)
    return _fork(work, *os.pipe())


def _fork(work: Callable[[int], None], r: int, w: int) -> tuple[int, int]:
    """A forked worker that runs ``work(w)`` and exits without cleanup (status 0 once it returned);
    the parent gets its pid and the pipe's read end."""
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.close(r)
            work(w)
            code = 0
        except BaseException:   # noqa: BLE001 - any failure: the parent redoes the worker's share
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


# ---- streamed: results in order while the worker still computes ------------------------------

STREAM_CHUNK = 256          # events per frame the worker sends
PIPE_BYTES = 1 << 20        # the worker runs this far ahead of the reader (Linux's default pipe: 64 KiB)
AHEAD_MAX = 4 * STREAM_CHUNK  # events of items of its own this process holds while it waits for the worker
AHEAD_ITEMS = 8             # items of its own begun while it waits (each holds a block of its file)
_TOKEN = struct.Struct("<I")


def fork_stream(fn: Callable[[Any], Any], items: Sequence[Any], weights: Sequence[int], *,
                min_weight: int = 32 << 20, ncpu: int | None = None):
    """``(fn(x) for x in items)`` shared with one forked worker, for a reader that consumes as it goes
    (``search``: output starts before the last file is read). ``fn(x)`` yields picklable events; this
    yields, per item and in order, an iterator over its events.

    The items are handed out as they are wanted, never split in advance (on a busy machine either
    process may be slowed): their indices wait in a pipe, and this process and the worker each take
    the next one when free, so the worker's items are those it took. The worker sends its events in
    frames through a second pipe; while this process waits for one of them it works on items of its
    own taken meanwhile, holding at most ``AHEAD_MAX`` of their events. Memory: frames, never a whole
    result. A worker that fails costs time only: its items (the events given skipped) are done here.
    Each iterator must be consumed, or dropped, before the next one is taken. A reader takes the
    stream's end too (one ``next`` past the last item; ``zip`` with the stream first does), so the
    worker, done by then, is waited for: a stream dropped before its end (an error, ^C) kills it."""
    n = len(items)
    if (min(cpus() if ncpu is None else ncpu, 2, n) < 2 or sum(weights) < min_weight or n * _TOKEN.size > PIPE_BYTES
            or not hasattr(os, "fork") or sys.platform != "linux"):
        for x in items:
            yield fn(x)
        return
    tokens = _Tokens(n)
    pid, fd = _spawn_stream(fn, items, tokens)
    frames = _Frames(fd)
    finished = False
    try:
        yield from _ordered(fn, items, tokens, frames)
        finished = True
    finally:
        frames.close()
        tokens.close()
        _reap(pid, fd, kill=not finished)


def _ordered(fn, items, tokens: "_Tokens", frames: "_Frames"):
    from collections import deque
    seen = 0                    # one past the last index taken here: below it, what is not ours is the worker's
    ahead: deque = deque()      # ours, taken while waiting: [index, its events so far, the rest or None]
    held = 0                    # events held in ``ahead``
    p = 0
    while p < len(items):
        if ahead and ahead[0][0] == p:
            _, got, rest = ahead.popleft()
            held -= len(got)
            yield _chain(got, rest)
            p += 1
        elif p < seen:
            # the worker's: while it is still on it, work on ours (the last taken, then a new one)
            while held < AHEAD_MAX and not frames.ready():
                if ahead and ahead[-1][2] is not None:
                    ev = next(ahead[-1][2], _END)
                    if ev is _END:
                        ahead[-1][2] = None
                    else:
                        ahead[-1][1].append(ev)
                        held += 1
                    continue
                t = tokens.take() if len(ahead) < AHEAD_ITEMS else None
                if t is None:
                    break
                seen = t + 1
                ahead.append([t, [], iter(fn(items[t]))])
            it = _Replay(frames, fn, items[p])
            yield it
            it.finish()
            p += 1
        else:
            t = tokens.take()
            if t is None:                          # the worker took every one left
                seen = len(items)
            elif t == p:
                seen = p + 1
                yield fn(items[p])
                p += 1
            else:
                seen = t + 1
                ahead.append([t, [], iter(fn(items[t]))])


_END = object()


def _chain(got: list, rest):
    yield from got
    if rest is not None:
        yield from rest


class _Tokens:
    """The items' indices in a pipe, taken one by one by either process (a read of 4 bytes from a pipe
    is never split or shared: each index goes to one reader)."""

    def __init__(self, n: int):
        import fcntl
        self.r, w = os.pipe()
        if n * _TOKEN.size > 65536:
            fcntl.fcntl(w, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
        os.write(w, b"".join(_TOKEN.pack(i) for i in range(n)))
        os.close(w)                                # once they are all taken: end of file

    def take(self) -> int | None:
        data = os.read(self.r, _TOKEN.size)
        return _TOKEN.unpack(data)[0] if len(data) == _TOKEN.size else None

    def close(self) -> None:
        os.close(self.r)


def _spawn_stream(fn, items, tokens: _Tokens) -> tuple[int, int]:
    import fcntl
    import pickle
    r, w = os.pipe()
    try:
        fcntl.fcntl(w, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
    except OSError:
        pass                                         # the default size: the worker waits sooner

    def work(w: int) -> None:
        with os.fdopen(w, "wb", buffering=0) as fh:
            while (i := tokens.take()) is not None:
                chunk = []
                for ev in fn(items[i]):
                    chunk.append(ev)
                    if len(chunk) >= STREAM_CHUNK:
                        _send(fh, pickle.dumps((False, chunk), pickle.HIGHEST_PROTOCOL))
                        chunk = []
                _send(fh, pickle.dumps((True, chunk), pickle.HIGHEST_PROTOCOL))
    return _fork(work, r, w)


def _send(fh, data: bytes) -> None:
    fh.write(_TOKEN.pack(len(data)) + data)


class _Frames:
    """The worker's frames, read in order; ``broken`` once it stopped delivering."""

    def __init__(self, fd: int):
        self.fd = fd
        self.buf = bytearray()
        self.broken = False

    def _whole(self) -> int:
        """The length of the first frame when all of it is here, else 0."""
        if len(self.buf) < _TOKEN.size:
            return 0
        n = _TOKEN.size + _TOKEN.unpack_from(self.buf)[0]
        return n if len(self.buf) >= n else 0

    def ready(self) -> bool:
        """A frame (or the end) can be read without waiting."""
        import select
        if self.broken or self._whole():
            return True
        if select.select([self.fd], [], [], 0)[0]:
            return self._fill()
        return False

    def _fill(self) -> bool:
        try:
            data = os.read(self.fd, PIPE_BYTES)
        except OSError:
            data = b""
        if not data:
            self.broken = True
        self.buf += data
        return True

    def next(self) -> tuple[bool, list] | None:
        import pickle
        while not self.broken and not self._whole():
            self._fill()
        n = self._whole()
        if not n:
            self.broken = True
            return None
        try:
            frame = pickle.loads(memoryview(self.buf)[_TOKEN.size:n])
        except Exception:  # noqa: BLE001 - a torn frame: the worker is gone
            self.broken = True
            return None
        del self.buf[:n]
        return frame

    def close(self) -> None:
        self.buf = bytearray()


class _Replay:
    """One of the worker's items; when the worker fails, the item is done here, the events already
    given skipped (``fn`` is a pure function of its item)."""

    def __init__(self, frames: _Frames, fn, item):
        self.frames, self.fn, self.item = frames, fn, item
        self.given, self.done = 0, False

    def __iter__(self):
        while not self.done:
            frame = self.frames.next()
            if frame is None:
                break
            self.done, events = frame
            for ev in events:
                self.given += 1
                yield ev
        if not self.done:
            self.done = True
            for k, ev in enumerate(self.fn(self.item)):
                if k >= self.given:
                    self.given += 1
                    yield ev

    def finish(self) -> None:
        """Skip what the reader left of this item, so the next frame is the next item's."""
        while not self.done:
            frame = self.frames.next()
            if frame is None:
                self.done = True        # nothing more is needed of this item
                return
            self.done = frame[0]
