"""Issue 15: a convert run of many sessions is shared with one forked worker (verbs/convert/shared.py),
and gives what converting them one after the other gives: the same files (ids aside: they are
random), outcomes, warnings and loss in the same order, a source met twice converted once, and an
error raised at its own session's turn."""
from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest

from histmig import api
from histmig.core import forkmap
from histmig.verbs.convert import ConvertOptions
from histmig.verbs.convert import shared

from convert_fixtures import codex_lines, homes, proj, write_codex  # noqa: F401 (fixtures)

IDS = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|msg_01[0-9A-Za-z]{22}")
N = 40


@pytest.fixture
def many(homes, proj):
    """N Codex sessions in four folders, each its own id."""
    for i in range(N):
        cwd = f"{proj}-{i % 4}"
        Path(cwd).mkdir(exist_ok=True)
        sid = f"019e9625-802f-7e91-840a-{i:012x}"
        write_codex(homes.codex, cwd, sid, codex_lines(cwd, sid))
    return api.convert_sessions(homes, "claude-code", from_tool="codex", all_=True)


def _mode(monkeypatch, share: bool) -> list[int]:
    """Force sharing (two CPUs, any size) or a run in this process alone; returns the pids that converted."""
    pids: list[int] = []
    monkeypatch.setattr(shared, "MIN_SESSIONS", 2 if share else 10**9)
    monkeypatch.setattr(forkmap, "cpus", lambda: 2)
    monkeypatch.setattr(shared, "runnable", lambda: 1)        # a machine with a CPU to spare
    real, here = shared.convert_one, os.getpid()

    def convert_one(run, ref):
        if os.getpid() == here and not pids:
            time.sleep(0.2)              # the worker takes its share meanwhile, however busy the machine
        pids.append(os.getpid())
        out, ops = real(run, ref)
        out.pid = os.getpid()
        return out, ops
    monkeypatch.setattr(shared, "convert_one", convert_one)
    return pids


def _norm(text: str) -> str:
    seen: dict[str, str] = {}
    return IDS.sub(lambda m: seen.setdefault(m.group(0), f"ID{len(seen)}"), text)


def _run(homes, refs, monkeypatch, share: bool, **kw):
    _mode(monkeypatch, share)
    seen = []
    done = api.convert(homes, refs, ConvertOptions("claude-code", **kw), apply=True, on_outcome=seen.append)
    files = {}
    for p in sorted(Path(homes.claude, "projects").rglob("*.jsonl")):
        text = p.read_text()
        key = (p.parent.name, re.search(r'"sourceSession":"([^"]+)"', text).group(1))
        files[key] = _norm(re.sub(r'"convertedAt":"[^"]*"', "", text))       # (the time of the run)
    return done, seen, files


def _undo_all(homes, done) -> None:
    for tx in done.transactions:
        api.undo(homes, tx["txid"])


def _outcomes(seen) -> list[str]:
    return [_norm(str({k: v for k, v in o.to_dict().items() if k != "new_id"})) for o in seen]


def test_a_shared_run_writes_and_reports_what_a_sequential_one_does(homes, many, monkeypatch):
    done, seen, files = _run(homes, many, monkeypatch, share=False, keep_times=True)
    assert len(files) == N
    _undo_all(homes, done)
    assert not list(Path(homes.claude, "projects").rglob("*.jsonl"))
    done2, seen2, files2 = _run(homes, many, monkeypatch, share=True, keep_times=True)
    assert len({o.pid for o in seen2}) == 2              # both processes converted sessions
    assert files2 == files
    assert _outcomes(seen2) == _outcomes(seen)
    assert done2.total.summary == done.total.summary and done2.exit_code == done.exit_code
    # --keep-times: an "old-mtime" warning per session, in the sessions' order
    assert [_norm(w.describe()) for w in done2.total.warnings] == [_norm(w.describe()) for w in done.total.warnings]
    assert len(done2.total.warnings) == N
    assert not list(Path(homes.state, "spool").glob("*/*"))
    _undo_all(homes, done2)                                # undo removes what the shared run wrote
    assert not list(Path(homes.claude, "projects").rglob("*.jsonl"))


def test_a_source_met_twice_is_converted_once_as_in_sequence(homes, many, monkeypatch):
    twice = many + many
    done, seen, files = _run(homes, twice, monkeypatch, share=True)
    assert [o.status for o in seen] == ["convert"] * N + ["already"] * N
    assert [o.paths for o in seen[N:]] == [o.paths for o in seen[:N]]
    assert len(files) == N and done.total.summary["converted"] == N
    assert not list(Path(homes.state, "spool").glob("*/*"))     # the dropped conversions' spool files too


def test_an_error_is_raised_at_its_own_session(homes, many, monkeypatch):
    _mode(monkeypatch, True)
    counted = shared.convert_one

    def failing(run, ref):
        if ref is many[25]:
            raise OSError("disk on fire")
        return counted(run, ref)
    monkeypatch.setattr(shared, "convert_one", failing)
    seen = []
    with pytest.raises(OSError, match="disk on fire"):
        api.convert(homes, many, ConvertOptions("claude-code"), apply=True, on_outcome=seen.append)
    assert [o.source_path for o in seen] == [str(r.path) for r in many[:25]]
    assert not list(Path(homes.claude, "projects").rglob("*.jsonl"))    # one batch: nothing applied


def test_small_runs_seeded_runs_and_targets_with_tables_are_not_shared(homes, many, monkeypatch):
    _mode(monkeypatch, True)

    def no_fork(*a, **k):
        raise AssertionError("shared")
    monkeypatch.setattr(forkmap, "fork_stream", no_fork)
    assert api.convert(homes, many, ConvertOptions("claude-code", seed=3), apply=False).total.summary["converted"] == N
    assert api.convert(homes, many, ConvertOptions("codex"), apply=False).total.summary["skipped"] == N   # same tool
    assert api.convert(homes, many, ConvertOptions("gemini"), apply=False).total.summary["converted"] == N  # markers
    monkeypatch.setattr(shared, "MIN_SESSIONS", N + 1)
    assert api.convert(homes, many, ConvertOptions("mini-cc"), apply=False).total.summary["converted"] == N
    monkeypatch.setattr(shared, "MIN_SESSIONS", 2)
    monkeypatch.setattr(shared, "runnable", lambda: 2)        # no CPU to spare: a second task ready to run
    assert api.convert(homes, many, ConvertOptions("mini-cc"), apply=False).total.summary["converted"] == N
    looks = iter([2, 1, 2])                                    # the least of three looks
    monkeypatch.setattr(shared, "runnable", lambda: next(looks))
    with pytest.raises(AssertionError, match="shared"):
        api.convert(homes, many, ConvertOptions("mini-cc"), apply=False)


def test_a_cpu_is_spare_by_the_tasks_ready_now_not_by_the_last_minute(monkeypatch):
    assert shared.runnable() >= 0                               # this process at least, where /proc counts
    monkeypatch.setattr(forkmap, "cpus", lambda: 2)
    monkeypatch.setattr(os, "getloadavg", lambda: (1.9, 1.9, 1.9))     # a busy command just ended
    monkeypatch.setattr(shared, "runnable", lambda: 1)
    assert shared.spare_cpu()
    monkeypatch.setattr(shared, "runnable", lambda: 2)
    assert not shared.spare_cpu()

    def unreadable():
        raise OSError("no /proc")
    monkeypatch.setattr(shared, "runnable", unreadable)         # then the load average decides
    assert not shared.spare_cpu()
    monkeypatch.setattr(shared, "runnable", lambda: 0)          # a /proc that does not count: the same
    assert not shared.spare_cpu()
    monkeypatch.setattr(os, "getloadavg", lambda: (1.4, 0.5, 0.5))
    assert shared.spare_cpu()


MARKED = (b'{"timestamp":"2026-06-05T04:58:20.653Z","type":"session_meta","payload":{"id":"019e9625-802f-7e91-840a-'
          b'000000000001","cwd":"/w","histmig_source":{"tool":"claude-code","id":"3a7770b4","converted_at":"x"}}}')


@pytest.mark.parametrize("first", [MARKED + b"\n", MARKED.replace(b"histmig_source", b"other") + b"\n",
                                   b"\xef\xbb\xbf" + MARKED + b"\r\n", b"not json\n", b"\n", b'{"a":1,"a":2}\n',
                                   MARKED.replace(b'"session_meta"', b'"turn_context"') + b"\n", b""])
def test_codex_marker_of_a_session_read_whole_is_that_of_its_file(tmp_path, first):
    """convert asks a Codex session whether it is a conversion from the records it just read."""
    from histmig.tools.codex import adapter, provenance
    rest = b"".join(orjson_line(o) for o in codex_lines("/w", "019e9625-802f-7e91-840a-000000000001")[1:])
    path = tmp_path / "rollout-2026-06-05T04-58-20-019e9625-802f-7e91-840a-000000000001.jsonl"
    for data in (first + rest, first):
        path.write_bytes(data)
        session = adapter.stream(path)
        assert isinstance(session.records, list)
        assert provenance.marker_of_session(session) == provenance.marker_of(path)
    assert provenance.marker_of(path) == (("claude-code", "3a7770b4") if first.startswith((MARKED, b"\xef")) else None)


def orjson_line(obj) -> bytes:
    import orjson
    return orjson.dumps(obj) + b"\n"
