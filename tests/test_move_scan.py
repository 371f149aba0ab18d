"""The move's streaming scan (``move_scan``) and its parallel runner (``move_parallel``): chunk
boundaries, over-limit lines, BOM/CRLF/unterminated lines, escaped spellings, duplicate keys, and a
plan computed on forked workers equal to the sequential one, also when a worker fails."""
from __future__ import annotations

import os

import orjson
import pytest

from histmig.jsonio import jsonl
from histmig.toolkit.move import parallel as move_parallel
from histmig.verbs.move import plan_move
from histmig.tools.claude_code.move import claude_fields
from histmig.toolkit.move.common import make_pathmap, scan_file

from test_move_codex import codex_home
from test_move_fixtures import claude_session, homes

OLD, NEW = "/w/app", "/w/app-renamed"


def scan(tmp_path, data: bytes, **kw):
    path = tmp_path / "s.jsonl"
    path.write_bytes(data)
    pm, _ = make_pathmap(OLD, NEW)
    return data, scan_file(str(path), pm, claude_fields, **kw)


def applied(data: bytes, patches) -> bytes:
    out, pos = bytearray(), 0
    for p in patches:
        assert data[p.offset:p.offset + len(p.old)] == p.old    # each patch addresses its old bytes
        out += data[pos:p.offset] + p.new
        pos = p.offset + len(p.old)
    return bytes(out + data[pos:])


def rec(cwd: str, pad: int = 0) -> bytes:
    return orjson.dumps({"type": "user", "message": {"content": "x" * pad}, "cwd": cwd})


def test_lines_across_chunk_boundaries_get_exact_offsets(tmp_path):
    lines = [rec(OLD if i % 3 else "/elsewhere", pad=(i * 37_111) % 300_000) for i in range(40)]
    data, res = scan(tmp_path, b"\n".join(lines) + b"\n")
    assert len(data) > 3 * jsonl.CHUNK
    assert res.lines == len(res.patches) == sum(1 for i in range(40) if i % 3)
    out = applied(data, res.patches)
    assert [orjson.loads(x)["cwd"] for x in out.splitlines()] == [NEW if i % 3 else "/elsewhere" for i in range(40)]


def test_bom_crlf_and_unterminated_last_line_keep_their_bytes(tmp_path):
    data = jsonl.BOM + rec(OLD) + b"\r\n" + rec(OLD + "/sub") + b"\r\n" + rec(OLD)
    data, res = scan(tmp_path, data)
    out = applied(data, res.patches)
    assert out == jsonl.BOM + rec(NEW) + b"\r\n" + rec(NEW + "/sub") + b"\r\n" + rec(NEW)


def test_escaped_slash_spelling_is_found_and_rewritten(tmp_path):
    line = rec(OLD).replace(b"/", b"\\/")
    data, res = scan(tmp_path, b'{"a":1}\n' + line + b"\n")
    assert [orjson.loads(x).get("cwd") for x in applied(data, res.patches).splitlines()] == [None, NEW]


def test_over_limit_lines_are_reported_with_their_numbers_and_never_edited(tmp_path):
    big = rec(OLD, pad=5000)
    data, res = scan(tmp_path, rec(OLD) + b"\n" + big + b"\n" + rec(OLD) + b"\n" + big, max_line_bytes=1000)
    assert [(w.code, w.line) for w in res.warnings] == [("oversize-line", 2), ("oversize-line", 4)]
    assert f"({len(big) + 1} bytes)" in res.warnings[0].detail
    assert [p.offset for p in res.patches] == [data.index(b'"/w/app"'), data.rindex(rec(OLD)) + rec(OLD).index(b'"/w/app"')]


def test_over_limit_line_longer_than_a_chunk_is_skipped_without_holding_it(tmp_path):
    big = rec(OLD, pad=3 * jsonl.CHUNK)
    data, res = scan(tmp_path, big + b"\n" + rec(OLD) + b"\n", max_line_bytes=jsonl.CHUNK)
    assert [(w.code, w.line) for w in res.warnings] == [("oversize-line", 1)]
    assert applied(data, res.patches).endswith(rec(NEW) + b"\n")


def test_unparseable_line_mentioning_old_is_warned_with_its_reason_and_number(tmp_path):
    data, res = scan(tmp_path, rec(OLD) + b"\n" + b'{"cwd":"/w/app"\n' + rec(OLD) + b"\n")
    assert [(w.code, w.line) for w in res.warnings] == [("unparseable-line", 2)]
    assert "(not valid JSON)" in res.warnings[0].detail
    assert len(res.patches) == 2 and res.skip is None


def test_duplicated_target_key_refuses_the_file_naming_the_line(tmp_path):
    data, res = scan(tmp_path, rec(OLD) + b"\n" + b'{"cwd":"/w/app","cwd":"/w/app"}\n')
    assert res.skip == "line 2: key 'cwd' duplicated"


def test_a_file_changed_during_the_scan_is_skipped(tmp_path, monkeypatch):
    path = tmp_path / "s.jsonl"
    path.write_bytes(rec(OLD) + b"\n")
    pm, _ = make_pathmap(OLD, NEW)
    real = os.lstat
    calls = []

    def lstat(p, *a, **kw):
        calls.append(p)
        if len(calls) == 2:
            path.write_bytes(rec(OLD) + b"\n" + rec(OLD) + b"\n")
        return real(p, *a, **kw)
    monkeypatch.setattr(os, "lstat", lstat)     # the scan's second lstat: after reading
    assert scan_file(str(path), pm, claude_fields).skip.startswith("changed while being read")


def home_with_both(tmp_path):
    h = homes()
    old, new = str(tmp_path / "W/app"), str(tmp_path / "W/app-renamed")
    for n in range(6):
        claude_session(h, old, n, subagent=n % 2 == 0)
    codex_home(h, old, n=4)
    return h, old, new


def plan_bytes(h, old, new) -> bytes:
    d = plan_move(h, old, new).to_dict()
    d.pop("histmig_version")
    return orjson.dumps(d)


@pytest.fixture
def force_parallel(monkeypatch):
    monkeypatch.setattr(move_parallel, "MIN_PARALLEL_BYTES", 0)
    monkeypatch.setattr(move_parallel, "_cpus", lambda: 3)


def test_plan_on_forked_workers_equals_the_sequential_plan(tmp_path, monkeypatch, force_parallel):
    h, old, new = home_with_both(tmp_path)
    forks = []
    real_fork = os.fork
    monkeypatch.setattr(os, "fork", lambda: forks.append(1) or real_fork())
    parallel = plan_bytes(h, old, new)
    assert len(forks) == 4      # two workers beside this process, for Claude and for Codex
    monkeypatch.setattr(move_parallel, "_cpus", lambda: 1)
    sequential = plan_bytes(h, old, new)
    assert parallel == sequential
    assert b"app-renamed" in parallel and len(orjson.loads(parallel)["operations"]) > 10


def test_a_failing_worker_costs_time_not_results(tmp_path, monkeypatch, force_parallel):
    h, old, new = home_with_both(tmp_path)
    monkeypatch.setattr(move_parallel, "_cpus", lambda: 1)
    sequential = plan_bytes(h, old, new)
    monkeypatch.setattr(move_parallel, "_cpus", lambda: 3)
    monkeypatch.setattr(move_parallel, "_pack", lambda scan: 1 / 0)    # runs only in the workers
    assert plan_bytes(h, old, new) == sequential
