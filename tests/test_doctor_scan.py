"""doctor_scan (byte searches, parse only what is used) gives what the strict reading of every line
(adapter.scan_thread) gives: the same ThreadFacts and the same resolved offset rows, on awkward files."""
from __future__ import annotations

import random

import orjson
import pytest
import zstandard

from histmig.tools.codex import doctor_scan
from histmig.tools.codex.adapter import scan_thread
from histmig.tools.codex.doctor_history import _add
from histmig.tools.codex.doctor_scan import UNFIXABLE, Needs, scan_rollout

TID = "019e0000-0000-7000-8000-000000000001"
FACTS = ("id", "provider", "row_provider", "meta_cwd", "resume_cwd", "git_url", "providers", "history_base")


def _line(ordinal, kind, payload, **extra) -> bytes:
    return orjson.dumps({"timestamp": "t", "ordinal": ordinal, "type": kind, "payload": payload, **extra}) + b"\n"


def rollout(rng: random.Random, n: int = 40) -> bytes:
    out = [_line(0, "session_meta", {"id": TID, "model_provider": "openai", "cwd": "/a", "git": {"repository_url": "u"}})]
    for i in range(1, n):
        kind = rng.choice(["turn_context", "response_item", "event_msg", "event_msg"])
        payload = {"cwd": f"/c{i}"} if kind == "turn_context" else {"type": "x", "text": "y" * rng.randint(0, 3000)}
        if kind == "event_msg" and rng.random() < 0.1:
            payload = {"type": "thread_settings_applied", "thread_settings": {"model_provider_id": "other", "cwd": "/s"}}
        out.append(_line(i, kind, payload))
    return b"".join(out)


def oracle(path, rows):
    """The former doctor_db reading: every line strictly parsed, spans of every ordinal line."""
    facts, spans = scan_thread(path)
    out = []
    for table, row in rows:
        by = spans.by_ordinal
        if table == "thread_turns":
            s, e = by.get(row["rollout_ordinal"]), by.get(row["rollout_end_ordinal"])
            expect = {"rollout_byte_offset": s[0] if s else None, "rollout_end_byte_offset": e[1] if e else None}
        else:
            n = row["next_rollout_ordinal"]
            prev = by.get(n - 1) if isinstance(n, int) else None
            expect = {"next_rollout_byte_offset": by[n][0] if n in by else (prev[1] if prev else None)}
        cols = {}
        for col, want in expect.items():
            have = row.get(col)
            if have is None:
                continue
            if want is None:
                want = have if have in spans.starts else UNFIXABLE
            cols[col] = (have, want)
        out.append(cols)
    return facts, out


def check(tmp_path, data: bytes, rows, *, name="r.jsonl"):
    path = tmp_path / name
    path.write_bytes(zstandard.ZstdCompressor().compress(data) if name.endswith(".zst") else data)
    needs = Needs()
    for table, row in rows:
        _add(needs, "h", table, (row["thread_id"],), row)
    facts, resolved = scan_rollout(path, lambda tid: needs if tid == TID and needs.rows else None)
    want_facts, want_cols = oracle(path, rows)
    assert {f: getattr(facts, f) for f in FACTS} == {f: getattr(want_facts, f) for f in FACTS}
    if facts.id == TID:
        assert [r.cols for r in resolved] == want_cols


def rows_for(data: bytes, rng: random.Random):
    starts = [0] + [i + 1 for i, b in enumerate(data) if b == 10]
    rows = []
    for _ in range(12):
        a, b = sorted(rng.randint(-2, 60) for _ in range(2))
        rows.append(("thread_turns", {"thread_id": TID, "rollout_ordinal": a, "rollout_end_ordinal": b,
                                      "rollout_byte_offset": rng.choice(starts + [5, len(data) + 9]),
                                      "rollout_end_byte_offset": rng.choice(starts + [None, 7])}))
    for n in (rng.randint(0, 60), 10**6, None):
        rows.append(("thread_history_projection_state", {"thread_id": TID, "next_rollout_ordinal": n,
                                                          "next_rollout_byte_offset": rng.choice(starts + [3])}))
    return rows


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("chunk", [64, 1000, 1 << 20])
def test_same_as_strict_reading(tmp_path, monkeypatch, seed, chunk):
    monkeypatch.setattr(doctor_scan, "CHUNK", chunk)
    rng = random.Random(seed)
    data = rollout(rng)
    variants = {
        "plain": data,
        "bom+crlf": b"\xef\xbb\xbf" + data.replace(b"\n", b"\r\n"),
        "torn tail": data + b'{"timestamp":"t","ordinal":7,"type":"turn_context","payload":{"cwd":"/torn"',
        "duplicate and out-of-order ordinals": data + _line(3, "event_msg", {"type": "y"})
        + _line(1, "turn_context", {"cwd": "/z"}),
        "nested ordinal and spaced key": data + b'{"ordinal" : 5, "type":"event_msg","payload":{"ordinal":9}}\n',
        "invalid lines": data + b'{"ordinal":4,"type":"turn_context","payload":{"cwd":"/bad"},"ordinal":4}\n{"x":\n',
        "meta not first": _line(1, "event_msg", {"type": "a"}) + _line(2, "turn_context", {"cwd": "/early"}) + data,
        "no newline at end": data.rstrip(b"\n"),
        "later session_meta": data + _line(90, "session_meta", {"id": TID, "model_provider": "p2", "cwd": "/late"}),
        "turn_context in text": data + _line(91, "response_item", {"text": "turn_context session_meta"}),
        # the line walk (doctor_scan._Lines) reads Codex's head; these lines have one of another shape,
        # or a body that quotes what the head says is not there
        "head shapes": data + _line(92, "event_msg", {"x": 1, "type": "thread_settings_applied",
                                                      "thread_settings": {"model_provider_id": "late"}})
        + b'{"type":"turn_context","timestamp":"t","ordinal":93,"payload":{"cwd":"/keys-moved"}}\n'
        + _line(94, "turn_context", {"cwd": "/tc-quotes", "note": "session_meta thread_settings_applied"})
        + _line(95, "response_item", {"payload": {"ordinal": 3}, "text": '"ordinal":4 thread_settings_applied'})
        + b'{"timestamp":"t\\\\","ordinal":96,"type":"turn_context","payload":{"cwd":"/backslash"}}\n'
        + b'{"timestamp":"t","ordinal":-0,"type":"event_msg","payload":{"type":"x"}}\n',
        "duplicate keys after a head": data + _line(97, "turn_context", {"cwd": "/dup"}).replace(b"}}", b'},"type":"x"}'),
    }
    for name, body in variants.items():
        check(tmp_path, body, rows_for(body, rng), name=f"{seed}-{len(name)}.jsonl")
    check(tmp_path, data, rows_for(data, rng), name="z.jsonl.zst")


def test_no_session_meta_and_empty(tmp_path):
    check(tmp_path, b"", [])
    check(tmp_path, _line(1, "event_msg", {"type": "a"}), [])


def test_forked_read_is_the_sequential_one(tmp_path, monkeypatch):
    """doctor_data.load on both CPUs (forked workers, each with its own history connections)
    returns exactly what one process reads."""
    import functools
    import sqlite3
    import sys
    from pathlib import Path

    from histmig.core import forkmap
    from histmig.tools import resolve_homes
    from histmig.tools.codex import doctor_data

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
    try:
        import gen_codex
    finally:
        sys.path.pop(0)
    gen_codex.generate(tmp_path, 12, 2)
    hist = sqlite3.connect(tmp_path / ".codex" / "thread_history_1.sqlite")
    hist.execute("UPDATE thread_turns SET rollout_byte_offset = rollout_byte_offset + 1 WHERE turn_id = 'turn-0002'")
    hist.commit()
    hist.close()
    homes = resolve_homes(home=tmp_path)
    one = doctor_data.load(homes).rollouts
    monkeypatch.setattr(doctor_data, "fork_stream", functools.partial(forkmap.fork_stream, min_weight=0, ncpu=2))
    two = doctor_data.load(homes).rollouts
    assert one == two and len(one) == 12
    assert any(r.offsets for r in one)
