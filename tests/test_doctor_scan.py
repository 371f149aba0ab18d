"""doctor_scan (byte searches, parse only what is used) gives what the strict reading of every line
(adapter.scan_thread) gives: the same ThreadFacts and the same resolved offset rows, on awkward files."""
from __future__ import annotations

import random
import re

import orjson
import pytest
import zstandard
from hypothesis import given, settings, strategies as st

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
    # read_rollout's read: only the rows that are off, unless a repair may edit the file
    for keep in (False, True):
        facts2, kept = scan_rollout(path, lambda tid: needs if tid == TID and needs.rows else None,
                                    keep_all=lambda f: keep)
        assert facts2 == facts
        assert kept == [r for r in resolved if keep or r.off]


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


def stored_rows(data: bytes, rng: random.Random):
    """Rows as a history database stored them when it was written: each offset the start or end of
    the line whose head has its ordinal (the lines doctor_scan takes without a strict parse,
    _trusted), whether or not that line parses now; a few stored as a float or a string."""
    heads: dict[int, list[tuple[int, int]]] = {}
    at = 0
    for line in data.splitlines(keepends=True):
        m = doctor_scan.HEAD.match(line)
        if m and m[1] is not None:
            heads.setdefault(int(m[1]), []).append((at, at + len(line)))
        at += len(line)
    span = {n: rng.choice([spans[0], spans[-1]]) for n, spans in heads.items()}
    ordinals = sorted(span) or [0]
    rows = []
    for _ in range(10):
        a, b = sorted(rng.choice(ordinals) for _ in range(2))
        start, end = span.get(a, (0, 0))[0], span.get(b, (0, None))[1]
        kind = rng.random()
        rows.append(("thread_turns", {"thread_id": TID, "rollout_ordinal": a, "rollout_end_ordinal": b,
                                      "rollout_byte_offset": float(start) if kind < 0.15 else start,
                                      "rollout_end_byte_offset": str(end) if kind > 0.85 else end}))
    n = rng.choice(ordinals)
    rows.append(("thread_history_projection_state", {"thread_id": TID, "next_rollout_ordinal": n,
                                                      "next_rollout_byte_offset": span.get(n, (len(data),))[0]}))
    return rows


@pytest.mark.parametrize("seed", range(4))
def test_stored_offsets_of_lines_that_do_not_parse(tmp_path, seed):
    """A line the rows point at exactly is taken by its head without a parse: the resolved rows are
    still the strict reading's when that line (or another with its ordinal) is torn, invalid or
    repeated, before or after it."""
    rng = random.Random(seed)
    data = rollout(rng, 30)
    lines = data.splitlines(keepends=True)
    invalid = lines[5][:-2] + b',"ordinal":5}\n'          # a duplicate key: never parses
    variants = {
        "plain": data,
        "used line invalid": b"".join(lines[:5] + [invalid] + lines[6:]),
        "used line torn": b"".join(lines[:5] + [lines[5][:30] + b"\n"] + lines[6:]),
        "valid copy before": b"".join(lines[:3] + [lines[5]] + lines[3:]),
        "invalid copy before": b"".join(lines[:3] + [invalid] + lines[3:]),
        "valid copy after": data + lines[5],
        "invalid copy after": data + invalid,
        "copy before, used line invalid": b"".join(lines[:3] + [lines[5]] + lines[3:5] + [invalid] + lines[6:]),
        "a line between, used line invalid": b"".join(lines[:5] + [lines[9], invalid] + lines[6:]),
    }
    for name, body in variants.items():
        for _ in range(8):
            check(tmp_path, body, stored_rows(body, rng), name=f"{seed}-{len(name)}.jsonl")


def _turn(a, start, b, end):
    return ("thread_turns", {"thread_id": TID, "rollout_ordinal": a, "rollout_end_ordinal": b,
                             "rollout_byte_offset": start, "rollout_end_byte_offset": end})


def _next(n, offset):
    return ("thread_history_projection_state", {"thread_id": TID, "next_rollout_ordinal": n,
                                                "next_rollout_byte_offset": offset})


def test_what_a_line_taken_by_its_head_may_not_decide(tmp_path, monkeypatch):
    """The cases where the stored offset matches a line's head and the strict reading still wants
    another offset, because the line does not parse: another line gave its ordinal a span first
    (here before the thread id was known), the ordinal is read by a ``next`` column (as n or as
    n - 1), or two rows store different offsets for it."""
    monkeypatch.setattr(doctor_scan, "CHUNK", 64)
    lines = [_line(0, "session_meta", {"id": TID, "model_provider": "openai", "cwd": "/a"})]
    lines += [_line(i, "response_item", {"type": "x", "text": "y" * (40 * i)}) for i in range(1, 12)]

    def broken(i):                     # line i with a duplicate key: it never parses
        return lines[i][:-2] + b',"ordinal":%d}\n' % i

    def at(body, line):                # (start, end) of that line in body
        start = body.index(line)
        return start, start + len(line)
    extra = _line(40, "event_msg", {"type": "y"})
    cases = []
    body = b"".join(lines[:7] + [broken(7)] + lines[9:])       # 7 does not parse, 8 is missing
    cases.append((body, [_turn(2, at(body, lines[2])[0], 7, at(body, broken(7))[1]), _next(8, len(body))]))
    body = b"".join(lines[:5] + [extra, broken(5)] + lines[6:])  # a line between 4 and 5, 5 does not parse
    cases.append((body, [_next(5, at(body, broken(5))[1])]))
    cases.append((body, [_next(5, at(body, broken(5))[0])]))
    body = lines[5] + b"".join(lines[:5] + [broken(5)] + lines[6:])   # 5 read before the session_meta
    cases.append((body, [_turn(5, at(body, broken(5))[0], 6, at(body, lines[6])[1])]))
    body = b"".join(lines[:5] + [broken(5)] + lines[6:])
    start = at(body, broken(5))[0]
    cases.append((body, [_turn(5, start + 1, 6, None), _turn(5, start, 6, None)]))
    cases.append((body, [_turn(5, float(start), 6, None)]))
    for i, (body, rows) in enumerate(cases):
        check(tmp_path, body, rows, name=f"case{i}.jsonl")


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


# ---- the fast paths against the plain ones (hypothesis) --------------------------------------

_SLOW_HEAD = re.compile(doctor_scan.HEAD.pattern.replace(b"*+", b"*").replace(b"++", b"+"))
_HEAD_PARTS = [b'{"timestamp":"', b"2026", b'"', b",", b'"ordinal":', b"-", b"5", b"0", b"x", b"\\", b"\n", b":",
               b'"type":"', b"session_meta", b"turn_context", b"event_msg", b"thread_settings_applied",
               b"response_item", b',"payload":{"type":"', b"{"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_HEAD_PARTS), max_size=14).map(b"".join), st.booleans())
def test_possessive_head_matches_as_the_backtracking_one(text, prefixed):
    """HEAD's repeats are possessive (doctor_scan): what it matches, the groups and the kind of
    line it says (``lastindex``) are those of the same pattern with ordinary repeats."""
    if prefixed:
        text = b'{"timestamp":"t",' + text
    fast, slow = doctor_scan.HEAD.match(text), _SLOW_HEAD.match(text)
    assert (fast is None) == (slow is None)
    if fast is not None:
        assert (fast.span(), fast.groups(), fast.lastindex) == (slow.span(), slow.groups(), slow.lastindex)


_VALUE = st.one_of(st.none(), st.integers(-3, 40), st.integers(2**62, 2**70),
                   st.floats(allow_nan=False), st.text(max_size=2))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([TID, "t2"]), st.text(max_size=3), _VALUE, _VALUE, _VALUE, _VALUE),
                max_size=8),
       st.lists(st.tuples(st.sampled_from([TID, "t2"]), _VALUE, _VALUE), max_size=3))
def test_rows_added_from_tuples_as_from_dicts(turns, projections):
    """doctor_history._add_rows (the thread's query rows as tuples) gives the Needs that ``_add``
    of each row as a dict gives."""
    from histmig.tools.codex.doctor_history import TABLES, _add_rows
    fast, slow = Needs(), Needs()
    for (table, cols, keys), rows in zip(TABLES, (turns, projections)):
        _add_rows(fast, "h", table, rows, len(keys))
        for r in rows:
            row = dict(zip(cols, r))
            _add(slow, "h", table, tuple([row[k] for k in keys]), row)
    assert fast == slow


# ---- the line walk against the one it replaced (hypothesis) ------------------------------------

# The walk as it was before it skipped lines (doctor_scan._Lines, 3e04ef5), with its head pattern
# (the optional ordinal as ``(?:…)?``): every line sorted by the same steps.
_OLD_HEAD = re.compile(rb'\{"timestamp":"[^"]*+",(?:"ordinal":(-?\d++),)?"type":"(?:(session_meta)"|(turn_context)"'
                       rb'|event_msg"(?:,"payload":\{"type":"(?:(thread_settings_applied)|\w*+)"|())|\w*+")')


def _old_lines(buf, end, wanted):
    ordered, tcs, ords = [], [], []
    start = 0
    while start < end:
        nl = buf.find(b"\n", start, end)
        stop = end if nl < 0 else nl + 1
        m = _OLD_HEAD.match(buf, start, stop)
        if m is None:
            if doctor_scan._holds(buf, start, stop, doctor_scan.ORDERED):
                ordered.append((start, stop))
            if buf.find(doctor_scan.TURN_CONTEXT, start, stop) >= 0:
                tcs.append((start, stop))
            if wanted is not None:
                ords.append((start, stop, None))
            start = stop
            continue
        if wanted is not None:
            n = m[1]
            if n is None:
                ords.append((start, stop, None))
            elif wanted is doctor_scan.ALL or n in wanted:
                ords.append((start, stop, int(n)))
        kind = m.lastindex
        if kind is not None and kind > 1:
            if kind == doctor_scan.TURN_CONTEXT_LINE:
                tcs.append((start, stop))
            elif kind != doctor_scan.UNTYPED or doctor_scan._holds(buf, start, stop, doctor_scan.ORDERED):
                ordered.append((start, stop))
        start = stop
    return ordered, tcs, ords


_ORDINALS = st.sampled_from([b"0", b"-0", b"1", b"7", b"12", b"007", b"-3", b"99999999999999999999", b"", b"1.5"])
_TYPES = st.sampled_from([b"session_meta", b"turn_context", b"event_msg", b"response_item", b"x", b"", b"turn_context2",
                          b"event\\u005fmsg", b"session_meta\\\""])
_PAYLOADS = st.sampled_from([b',"payload":{"type":"thread_settings_applied"', b',"payload":{"type":"task_started"',
                             b',"payload":{"x":1,"type":"thread_settings_applied"', b',"payload":{"type":""',
                             b',"payload":{"type":"thread_settings_applied2"', b',"payload":{}', b"", b'}'])
_BODIES = st.sampled_from([b"}", b'"text":"turn_context session_meta"}}', b'"t":"\\"ordinal\\":7"}}',
                           b'"ordinal":7,"type":"turn_context"}', b'"note":"thread_settings_applied"}}', b"",
                           b'"payload":{"ordinal":1}}', b'\xef\xbb\xbf"x":1}'])
_TIMESTAMPS = st.sampled_from([b"2026-11-29T10:00:00.000Z", b"t\\\\", b"", b'a\\"b', b"x\ny"])


@st.composite
def _walk_line(draw) -> bytes:
    shape = draw(st.integers(0, 9))
    if shape == 0:     # no Codex head at all
        return draw(st.sampled_from([b"", b"{}", b'{"type":"turn_context","ordinal":3}', b"session_meta", b"\r",
                                     b'{"timestamp":"t","type":"event_msg","ordinal":2}', b"\xef\xbb\xbf{"]))
    head = b'{"timestamp":"' + draw(_TIMESTAMPS) + b'",'
    if draw(st.booleans()) or shape == 1:
        head += b'"ordinal":' + draw(_ORDINALS) + b","
    head += b'"type":"' + draw(_TYPES) + b'"'
    return head + draw(_PAYLOADS) + draw(_BODIES)


@settings(max_examples=500, deadline=None)
@given(st.lists(_walk_line(), max_size=12), st.sampled_from([b"\n", b"\r\n"]), st.booleans(), st.booleans(),
       st.sampled_from(["none", "all", "some"]), st.sets(st.integers(-4, 14), max_size=5))
def test_line_walk_sorts_lines_as_the_walk_it_replaced(lines, eol, final_eol, bom, mode, ordinals):
    """_Lines (which passes over lines a wanted-ordinal check and the head rule out) keeps what the
    former walk kept, in the same order, on lines of every head shape: a BOM, CRLF, escapes, heads
    without an ordinal or with ``-0``, markers quoted in bodies, keys repeated, no final newline."""
    data = (b"\xef\xbb\xbf" if bom else b"") + eol.join(lines) + (eol if final_eol and lines else b"")
    wanted = {"none": None, "all": doctor_scan.ALL, "some": doctor_scan._heads(ordinals)}[mode]
    buf = bytearray(data + b'\n{"timestamp":"t","ordinal":1,"type":"turn_context"}')   # bytes past the end
    new = doctor_scan._Lines(buf, len(data), wanted)
    assert (new.ordered, new.tcs, new.ords) == _old_lines(buf, len(data), wanted)


def test_old_and_new_head_patterns_agree_on_the_bench_shapes():
    """The head pattern's branch form gives what its ``(?:…)?`` form gave (groups and kind)."""
    for line in (b'{"timestamp":"t","ordinal":4,"type":"event_msg","payload":{"type":"x"}}',
                 b'{"timestamp":"t","type":"turn_context"}', b'{"timestamp":"t","ordinal":1,"type":"session_meta"}',
                 b'{"timestamp":"t","ordinal":,"type":"x"}', b'{"timestamp":"t","ordinal":-0,"type":"event_msg"}'):
        a, b = doctor_scan.HEAD.match(line), _OLD_HEAD.match(line)
        assert (a is None) == (b is None)
        if a is not None:
            assert (a.span(), a.groups(), a.lastindex) == (b.span(), b.groups(), b.lastindex)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_HEAD_PARTS), max_size=14).map(b"".join), st.booleans())
def test_head_branch_form_matches_the_optional_form(text, prefixed):
    """HEAD writes the optional ordinal as a branch with an empty side: the same matches as ``?``."""
    if prefixed:
        text = b'{"timestamp":"t",' + text
    a, b = doctor_scan.HEAD.match(text), _OLD_HEAD.match(text)
    assert (a is None) == (b is None)
    if a is not None:
        assert (a.span(), a.groups(), a.lastindex) == (b.span(), b.groups(), b.lastindex)
