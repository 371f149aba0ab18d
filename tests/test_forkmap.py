"""fork_map gives exactly the sequential result, in order, also when a worker dies; the flip's
file scan run through it fills every target as the sequential scan does."""
from __future__ import annotations

import os

import pytest

from histmig.core import forkmap
from histmig.core.forkmap import fork_map

PARENT = os.getpid()


def _square(x: int) -> tuple[int, bool]:
    return x * x, os.getpid() != PARENT


def _dies_in_worker(x: int) -> int:
    if os.getpid() != PARENT and x % 3 == 0:
        os._exit(9)                         # a worker killed mid-share
    return -x


@pytest.fixture(autouse=True)
def _two_workers(monkeypatch):
    monkeypatch.setattr(forkmap, "cpus", lambda: 2)


def test_fork_map_returns_the_sequential_results_in_order():
    items = list(range(50))
    out = fork_map(_square, items, [100 + i for i in items], min_weight=0)
    assert [v for v, _ in out] == [x * x for x in items]
    assert any(in_worker for _, in_worker in out) and not all(in_worker for _, in_worker in out)


def test_a_worker_that_dies_costs_time_not_results():
    items = list(range(30))
    assert fork_map(_dies_in_worker, items, [1] * 30, min_weight=0) == [-x for x in items]
    # the worker's share really was forked (and then redone here): its group holds multiples of 3
    assert any(i % 3 == 0 for i in forkmap.balance([1] * 30, 2)[1])


def test_small_inputs_run_in_this_process():
    seen = []
    assert fork_map(lambda x: seen.append(os.getpid()) or x, [1, 2, 3], [1, 1, 1]) == [1, 2, 3]
    assert seen == [PARENT] * 3


def test_flip_scan_through_forked_workers_equals_the_sequential_scan(tmp_path, monkeypatch):
    from codex_fixtures import home_with, rollout, session_meta, settings, tid
    from histmig.tools import resolve_homes
    from histmig.tools.codex import flip as codex_flip
    from histmig.verbs import flip
    sessions = {tid(i): rollout(tid(i), extra_lines=[session_meta(tid(i), "openai"), settings("openai")] * i)
                for i in range(1, 9)}
    home_with(tmp_path / ".codex", sessions)
    h = resolve_homes(codex_home=tmp_path / ".codex", env={"HOME": str(tmp_path)})
    sequential = flip.plan_flip(h, "openai", "my-provider").to_dict()
    real = codex_flip.fork_map
    monkeypatch.setattr(codex_flip, "fork_map", lambda fn, items, weights: real(fn, items, weights, min_weight=0))
    forked = flip.plan_flip(h, "openai", "my-provider").to_dict()
    assert forked == sequential
    assert sum(len(o.get("patches", [])) for o in forked["operations"]) >= 8 * 2


def _reads(x: int) -> int:
    from histmig.core import progress
    progress.note("file", x)                # what opening a file for reading reports
    return x


def test_a_workers_progress_reaches_the_listener_of_this_process():
    """One progress line counts every worker's files (core/forkmap.py), and a worker never prints."""
    from histmig.core import progress
    seen = []
    previous = progress.listen(lambda event, value: seen.append((event, value, os.getpid())))
    try:
        items = list(range(1, 41))
        assert fork_map(_reads, items, [100] * 40, min_weight=0) == items
    finally:
        progress.listen(previous)
    assert sorted(v for _, v, _ in seen) == items and {(e, pid) for e, _, pid in seen} == {("file", PARENT)}
    assert fork_map(_reads, [1, 2], [1, 1], min_weight=0) == [1, 2]      # nobody listening: no pipe, same result


def _events(x: int):
    for k in range(x % 5 * 150):            # some items span several frames (forkmap.STREAM_CHUNK)
        yield x, k, os.getpid() != PARENT


def _events_dying(x: int):
    for k, ev in enumerate(_events(x)):
        if os.getpid() != PARENT and x == 7 and k == 300:
            os._exit(9)                     # a worker killed in the middle of an item
        yield ev


@pytest.mark.parametrize("fn", [_events, _events_dying])
def test_fork_stream_gives_every_items_events_in_order(fn):
    items = list(range(20))
    got = [list(evs) for evs in forkmap.fork_stream(fn, items, [1000] * 20, min_weight=0)]
    assert [[ev[:2] for ev in evs] for evs in got] == [[(x, k) for k in range(x % 5 * 150)] for x in items]


def test_fork_stream_skips_what_a_reader_leaves_of_an_item():
    items = list(range(20))
    got = []
    for evs in forkmap.fork_stream(_events, items, [1000] * 20, min_weight=0):
        got.append(next(iter(evs), None))   # the first event of each, the rest dropped
    assert [ev[:2] if ev else None for ev in got] == [(x, 0) if x % 5 else None for x in items]


def _slow_in_worker(x: int):
    import time
    # a busy worker: this process takes several items while it waits for one
    time.sleep(0.02 if os.getpid() != PARENT else 0.003)
    for k in range(x % 3 * 200 + 1):
        yield x, k, os.getpid() != PARENT


def test_fork_stream_works_ahead_while_the_worker_is_slow():
    items = list(range(40))
    got = [list(evs) for evs in forkmap.fork_stream(_slow_in_worker, items, [1000] * 40, min_weight=0)]
    assert [[ev[:2] for ev in evs] for evs in got] == [[(x, k) for k in range(x % 3 * 200 + 1)] for x in items]
    by_worker = {evs[0][0] for evs in got if evs and evs[0][2]}
    assert by_worker and len(by_worker) < len(items) / 2     # this process made most of them


def _reaps(monkeypatch) -> list[bool]:
    """The ``kill`` flag of each worker reaped from now on."""
    kills: list[bool] = []
    real = forkmap._reap

    def reap(pid, fd, *, kill):
        kills.append(kill)
        real(pid, fd, kill=kill)
    monkeypatch.setattr(forkmap, "_reap", reap)
    return kills


def test_a_stream_read_to_its_end_waits_for_its_worker(monkeypatch):
    kills = _reaps(monkeypatch)
    items = list(range(20))
    # the callers' pattern (doctor, convert): the stream first in the zip, so zip takes its end
    got = [list(evs) for evs, _ in zip(forkmap.fork_stream(_events, items, [1000] * 20, min_weight=0), items)]
    assert len(got) == 20 and kills == [False]


def test_a_stream_dropped_before_its_end_kills_its_worker(monkeypatch):
    kills = _reaps(monkeypatch)
    stream = forkmap.fork_stream(_events, list(range(20)), [1000] * 20, min_weight=0)
    for _ in range(3):
        list(next(stream))
    stream.close()
    assert kills == [True]


def test_every_tools_listing_through_forked_workers_equals_the_one_process_listing(isolated_homes, monkeypatch):
    """Codex, Claude Code, Qwen, Pi and Gemini share the files a scan reads out to workers
    (histmig/toolkit/forklist.py): forced to fork at any size, every sample (damaged ones too) is listed
    as one process lists it, cold and from the scan index."""
    import json
    from clirun import histmig
    from histmig.cli import samples
    samples.install(isolated_homes["HOME"], include_broken=True)
    alone = [histmig("scan", "--json", *extra).stdout for extra in (["--no-index"], [])]
    real = forkmap.fork_map
    forked_calls = []

    def always(fn, items, weights, **kw):
        forked_calls.append(len(items))
        return real(fn, items, weights, **{**kw, "min_weight": 0})
    monkeypatch.setattr(forkmap, "fork_map", always)
    (isolated_homes["HISTMIG_STATE_DIR"] / "scan-index.json").unlink()
    forked = [histmig("scan", "--json", *extra).stdout for extra in (["--no-index"], [])]
    assert forked == alone and json.loads(alone[0])["sessions"]
    assert len(forked_calls) >= 5                     # one per tool at least, cold
