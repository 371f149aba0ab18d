"""The Gemini log replay past its in-memory limit (issue 16): ``records.resolve`` moves the message list
to an on-disk store (``records.Spill``) past ``spill_at`` messages, and must give exactly what the
in-memory replay gives -- order, the line (and ``$set`` index) that defines each message, its span,
whether scan counts it, the metadata -- on logs of random redefinitions, ``$set`` lists, rewinds to
old, new and missing ids, and broken lines. The oracle is the replay as it was before the store
(``reference_resolve``, kept here verbatim in substance)."""
from __future__ import annotations

import io
import random

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from histmig.jsonio.jsonl import iter_lines
from histmig.tools.gemini import adapter as gem
from histmig.tools.gemini import records
from histmig.tools.gemini.records import counts, line_kind, resolve

IDS = [f"m{i}" for i in range(8)] + [3, "3"]          # 3 and "3" are the same message (str(id))


def reference_resolve(lines):
    """The replay with every structure in memory, as records.resolve was before the spill."""
    order, where, spans, counted, meta, metas = [], {}, {}, {}, {}, 0
    for line in lines:
        obj = None if line.blank or line.oversize else line.obj
        if not isinstance(obj, dict):
            continue
        kind = line_kind(obj)
        if kind == "message":
            mid = str(obj["id"])
            if mid not in where:
                order.append(mid)
            where[mid] = (line.number, None)
            spans[line.number] = (line.offset, line.length or 0)
            counted[mid] = counts(obj)
        elif kind == "$set" and isinstance(obj["$set"], dict):
            sets = obj["$set"]
            meta.update({k: v for k, v in sets.items() if k != "messages"})
            if isinstance(sets.get("messages"), list):
                order, where = [], {}
                spans[line.number] = (line.offset, line.length or 0)
                for i, m in enumerate(sets["messages"]):
                    if isinstance(m, dict) and "id" in m:
                        mid = str(m["id"])
                        if mid not in where:
                            order.append(mid)
                        where[mid] = (line.number, i)
                        counted[mid] = counts(m)
        elif kind == "$rewindTo":
            target = str(obj["$rewindTo"])
            if target in where:
                cut = order.index(target)
                for mid in order[cut:]:
                    del where[mid]
                order = order[:cut]
        else:
            metas += 1
            meta.update(obj)
    entries = [(mid, *where[mid], *spans[where[mid][0]], counted[mid]) for mid in order]
    return entries, meta, metas


def message(rng: random.Random, mid) -> dict:
    kind = rng.choice(["user", "gemini", "info", "user"])
    content = rng.choice(["hi", "", "  ", "<session_context>x", [{"text": "q"}], [{"text": "<hook_context>"}],
                          [{"inlineData": {"mimeType": "image/png", "data": ""}}], None])
    return {"id": mid, "type": kind, "content": content, "timestamp": "2026-01-02T03:04:05Z"}


def random_log(rng: random.Random, n: int, ids: list) -> bytes:
    out = [orjson.dumps({"sessionId": "s-1", "startTime": "2026-01-02T03:04:05Z", "kind": "main"})]
    for _ in range(n):
        op = rng.random()
        if op < 0.55:
            out.append(orjson.dumps(message(rng, rng.choice(ids))))
        elif op < 0.62:
            msgs = [message(rng, rng.choice(ids)) for _ in range(rng.randrange(0, 12))]
            msgs += rng.choice([[], [5, "x", {"no": "id"}]])
            out.append(orjson.dumps({"$set": {"messages": msgs, "lastUpdated": str(rng.random())}}))
        elif op < 0.68:
            out.append(orjson.dumps({"$set": {"lastUpdated": str(rng.random())}}))
        elif op < 0.72:
            out.append(orjson.dumps({"$set": rng.choice([[1], "x", None])}))
        elif op < 0.84:
            out.append(orjson.dumps({"$rewindTo": rng.choice(ids + ["missing", 7])}))
        elif op < 0.88:
            out.append(orjson.dumps({"lastUpdated": str(rng.random()), "kind": "main"}))
        else:
            out.append(rng.choice([b'{"id": "m1", "type": "user"', b"", b"  ", b"[1, 2]", b'"text"', b"{bad json}",
                                   b'{"id": "m2", "id": "m3"}']))
    end = rng.choice([b"\n", b""])
    return b"\n".join(out) + end


def lines_of(data: bytes):
    return list(iter_lines(io.BytesIO(data)))


def check(data: bytes, spill_at: int) -> None:
    lines = lines_of(data)
    want, meta, metas = reference_resolve(lines)
    got = resolve(lines, spill_at=spill_at)
    try:
        assert list(got.entries()) == want
        assert list(got.entries()) == want                # read twice: a stream reads its list on each pass
        assert (got.meta, got.metas) == (meta, metas)
        assert got.counted() == sum(1 for e in want if e[-1])
    finally:
        if got.store is not None:
            got.store.close()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(0, 120), spill_at=st.integers(0, 6),
       pool=st.integers(1, len(IDS)))
def test_spilled_replay_is_the_in_memory_replay(seed, n, spill_at, pool):
    rng = random.Random(seed)
    check(random_log(rng, n, IDS[:pool]), spill_at)


def test_long_random_logs_with_many_ids():
    """Longer logs over more ids, so the store sees batches, rewinds deep into them and new lists."""
    for seed in range(40):
        rng = random.Random(seed)
        ids = [f"id-{i}" for i in range(rng.choice([5, 50, 400]))]
        data = random_log(rng, rng.choice([200, 2000]), ids)
        for spill_at in (0, 3, 64):
            check(data, spill_at)


def test_a_log_past_the_batch_size():
    """More records than one batch of the store, then a rewind into the middle and redefinitions."""
    rows = [orjson.dumps({"sessionId": "s"})]
    rows += [orjson.dumps({"id": f"u{i}", "type": "user", "content": "q"}) for i in range(3 * records.Spill.BATCH)]
    rows += [orjson.dumps({"$rewindTo": f"u{records.Spill.BATCH + 7}"})]
    rows += [orjson.dumps({"id": f"u{i}", "type": "gemini", "content": "a"}) for i in range(0, 9000, 3)]
    check(b"\n".join(rows) + b"\n", 100)


def test_stream_over_the_store_gives_what_read_gives(tmp_path, monkeypatch):
    """The adapter past the limit: a streamed session's records (the second pass through one open file)
    are the ones ``read`` gives, on random logs written as session files."""
    monkeypatch.setattr(records, "SPILL_AT", 2)
    chats = tmp_path / "tmp" / "proj" / "chats"
    chats.mkdir(parents=True)
    for seed in range(30):
        rng = random.Random(seed)
        path = chats / f"session-2026-01-02T03-04-{seed:08d}.jsonl"
        path.write_bytes(random_log(rng, 150, [f"m{i}" for i in range(12)]))
        whole = gem.read(path)
        streamed = gem.stream(path)
        assert list(streamed.records) == whole.records
        assert (streamed.title, streamed.model, streamed.meta) == (whole.title, whole.model, whole.meta)
        assert streamed.warnings == whole.warnings
