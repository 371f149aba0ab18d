"""Issue 15: the scan index (histmig/core/scanindex.py, docs/scan-show.md "The scan index") and exact
message counts at any size (a byte search past the head, histmig/jsonio/marks.py).

The index is a cache: a hit gives what a full read gives, a changed file is read again, a grown one only
from where its count stopped, a corrupt index is rebuilt, an unwritable one never fails scan, and
``--no-index`` neither reads nor writes it."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from io import BytesIO

import orjson
import pytest
from clirun import histmig
from codex_fixtures import TS, rollout, tid, write_rollout
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from histmig.cli import samples
from histmig.core import scanindex
from histmig.core.scanindex import read_document, write_document
from histmig.tools import resolve_homes
from histmig.jsonio import marks
from histmig.jsonio.jsonl import read_lines
from histmig.tools.codex import adapter as codex_adapter
from histmig.tools.codex import listread
from histmig.tools.claude_code import adapter as cc
from histmig.tools.claude_family import listing as cc_listing
from histmig.tools.claude_code.records import count_messages, records_from_lines
from histmig.tools.codex import lines

FILLER = {"timestamp": TS, "type": "event_msg", "payload": {"type": "agent_message", "message": "y" * 4000}}


def scan(*extra) -> list[dict]:
    res = histmig("scan", "--json", *extra)
    assert res.exit_code == 0, res.stderr
    return json.loads(res.stdout)["sessions"]


def index_file() -> str:
    return os.path.join(os.fspath(resolve_homes().state), scanindex.FILE_NAME)


def big_rollout(n: int = 12, turns: int = 3) -> bytes:
    """A rollout past the 128 KB head, with messages beyond it."""
    more = [FILLER] * 40
    for i in range(turns):
        more.append({"timestamp": TS, "type": "response_item", "payload": {
            "type": "message", "role": "user", "content": [{"type": "input_text", "text": f"later {i}"}]}})
    return rollout(tid(n), turns=2, extra_lines=more)


def full_count(path) -> int:
    return sum(lines.is_conversation_message(ln.obj) for ln in read_lines(path) if not ln.opaque)


@pytest.fixture
def sample_home(isolated_homes):
    samples.install(isolated_homes["HOME"])
    write_rollout(isolated_homes["CODEX_HOME"], tid(12), big_rollout())
    return isolated_homes


# ---- hit, miss, no-index ------------------------------------------------------------------------

def test_a_repeat_scan_reads_no_session_file_and_prints_the_same(sample_home, monkeypatch):
    cold = histmig("scan", "--json").stdout
    assert os.stat(index_file()).st_mode & 0o777 == 0o600          # as every file of the state dir
    table = histmig("scan", "--no-index").stdout

    def no_read(*a, **k):
        raise AssertionError("an unchanged file was read again")
    monkeypatch.setattr(listread, "read", no_read)
    monkeypatch.setattr(codex_adapter, "make_ref", no_read)      # the hit is index_hit's, not make_ref's
    monkeypatch.setattr(cc_listing, "scan_ends", no_read)
    assert histmig("scan", "--json").stdout == cold
    assert histmig("scan").stdout == table


def test_a_changed_file_is_read_again(sample_home):
    before = {s["path"]: s for s in scan()}
    path = next(p for p in before if p.endswith(f"{tid(12)}.jsonl"))
    data = open(path, "rb").read().replace(b"later 0", b"LATER 0")   # same size, new bytes, new mtime
    with open(path, "wb") as fh:
        fh.write(data)
    os.utime(path, ns=(1_790_000_000_000_000_000,) * 2)
    after = {s["path"]: s for s in scan()}
    assert after[path]["updated"] != before[path]["updated"]
    assert scan() == scan("--no-index")


def test_no_index_neither_reads_nor_writes_it(sample_home):
    assert scan("--no-index") and not os.path.exists(index_file())
    scan()
    doc = read_document(index_file())
    for rec in doc["records"].values():
        rec[2]["title"] = "FROM THE INDEX"
    write_document(index_file(), doc)
    mtime = os.stat(index_file()).st_mtime_ns
    indexed = ("codex", "claude-code", "mini-cc")
    assert {s["title"] for s in scan() if s["tool"] in indexed} == {"FROM THE INDEX"}   # the index answers...
    assert "FROM THE INDEX" not in {s["title"] for s in scan("--no-index")}            # ...unless bypassed
    assert os.stat(index_file()).st_mtime_ns == mtime


@pytest.mark.parametrize("junk", [b"", b"{not json", b'{"version": 1, "records": []}', b'[1, 2]',
                                  b'{"version": 1, "records": {"/x": [1, 2]}}', b'{"version": 99, "records": {}}',
                                  b'{"version": 2, "ids": []}\n', b'{"version": 2, "ids": {"codex": 5}}\n"/x"\t[1]\n',
                                  b'{"version": 2}\n"/x"\t[1, 2]\nno tab\n5\t[]\n"/y\t[\n\t\n"/z"\t[[1,2,3,4],null,{},null,nu'])
def test_a_corrupt_index_is_rebuilt(sample_home, junk):
    expected = scan("--no-index")
    os.makedirs(os.path.dirname(index_file()), exist_ok=True)
    open(index_file(), "wb").write(junk)
    assert scan() == expected
    assert read_document(index_file())["version"] == scanindex.VERSION
    assert scan() == expected


def test_the_index_is_a_header_line_then_one_line_per_record(sample_home):
    """docs/scan-show.md, "The scan index": a listing splits each line at its tab and parses a record
    only when its file is looked up."""
    refs = scan()
    head, *rest = open(index_file(), "rb").read().splitlines()
    assert orjson.loads(head)["version"] == scanindex.VERSION
    paths = [orjson.loads(line.partition(b"\t")[0]) for line in rest]
    assert len(set(paths)) == len(paths) and {s["path"] for s in refs if s["tool"] == "codex"} <= set(paths)
    loaded = scanindex.ScanIndex.load(resolve_homes().state)
    assert all(type(raw) is bytes for raw in loaded.records.values())


def test_a_damaged_line_is_left_out_and_the_rest_still_answer(sample_home, monkeypatch):
    expected = scan()
    head, first, *rest = open(index_file(), "rb").read().splitlines(keepends=True)
    open(index_file(), "wb").write(b"".join([head, b"damaged line\n", first[:-9] + b"\n", *rest]))
    reads = []
    real = listread.read
    monkeypatch.setattr(listread, "read", lambda *a, **k: reads.append(a) or real(*a, **k))
    assert scan() == expected
    assert len(reads) <= 1                                # only the file of the damaged record
    assert len(read_document(index_file())["records"]) == len(rest) + 1


def test_a_damaged_record_is_read_again(sample_home):
    expected = scan("--no-index")
    scan()
    doc = read_document(index_file())
    for n, rec in enumerate(doc["records"].values()):
        rec[2] = [{}, {"state": 5, "id": 1, "extra": {}}, {"title": ["x"]}, {"cwd": "/x"}][n % 4]
    write_document(index_file(), doc)
    assert scan() == expected


def test_an_unwritable_state_dir_never_fails_scan(sample_home, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    expected = scan("--no-index")
    res = histmig("--state-dir", str(blocker / "state"), "scan", "--json")   # cannot be created
    assert res.exit_code == 0 and json.loads(res.stdout)["sessions"] == expected


def test_the_index_holds_no_conversation_text_beyond_the_title(sample_home):
    scan()
    text = open(index_file(), "rb").read()
    assert b"later 1" not in text and b"y" * 100 not in text


def test_files_gone_are_dropped_after_a_complete_scan(sample_home):
    refs = scan()
    gone = next(s["path"] for s in refs if s["tool"] == "codex")
    os.unlink(gone)
    scan("--tool", "claude-code")                     # a partial listing keeps what it did not see
    assert gone in read_document(index_file())["records"]
    scan()
    assert gone not in read_document(index_file())["records"]


def test_two_scans_at_once_leave_a_valid_index(sample_home):
    env = dict(os.environ)
    procs = [subprocess.Popen([sys.executable, "-m", "histmig", "scan", "--json"], env=env,
                              stdout=subprocess.PIPE) for _ in range(4)]
    outs = [p.communicate()[0] for p in procs]
    assert all(p.returncode == 0 for p in procs) and len(set(outs)) == 1
    doc = read_document(index_file())
    assert doc["version"] == scanindex.VERSION and doc["records"]
    assert not [n for n in os.listdir(os.path.dirname(index_file())) if n.endswith(".tmp")]
    assert json.loads(outs[0])["sessions"] == scan()


# ---- grown files --------------------------------------------------------------------------------

def test_a_grown_rollout_is_counted_from_where_the_count_stopped(isolated_homes, monkeypatch):
    path = write_rollout(isolated_homes["CODEX_HOME"], tid(12), big_rollout())
    first = scan()[0]
    starts = _count_starts(monkeypatch)
    with open(path, "ab") as fh:
        fh.write(orjson.dumps({"timestamp": TS, "type": "response_item", "payload": {
            "type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "more"}]}}) + b"\n")
    grown = scan()[0]
    assert starts == [len(big_rollout())]                 # only the appended bytes were searched
    assert grown["messages"] == first["messages"] + 1 == full_count(path)
    assert scan("--no-index") == scan()


def test_a_rewritten_file_that_grew_is_counted_whole(isolated_homes, monkeypatch):
    path = write_rollout(isolated_homes["CODEX_HOME"], tid(12), big_rollout())
    scan()
    with open(path, "r+b") as fh:                        # same inode, new first 4 KiB, larger
        data = fh.read().replace(b"/w/proj", b"/w/PROJ") + b"\n"
        fh.seek(0)
        fh.write(data)
    starts = _count_starts(monkeypatch)
    assert scan() == scan("--no-index") and starts[0] < len(big_rollout())    # from the head, not the old end


def _count_starts(monkeypatch) -> list[int]:
    """Where each Codex listing read starts its count: 0 from the head, else the stored end."""
    starts: list[int] = []
    real = listread._count
    monkeypatch.setattr(listread, "_count", lambda out, fh, data, eof, resume: starts.append(
        resume["end"] if resume else 0) or real(out, fh, data, eof, resume))
    return starts


def claude_big(n_fill: int = 300) -> list[dict]:
    from test_claude_format import assistant, conversation, user
    objs = conversation()
    for i in range(n_fill):
        objs.append(user(f"f{i}", None, "x" * 500))
        objs.append(assistant(f"a{i}", None, f"m{i}", {"type": "text", "text": "ok"}))
        objs.append(assistant(f"b{i}", None, f"m{i}", {"type": "text", "text": "more"}))
    return objs


def test_a_grown_claude_session_resumes_inside_an_assistant_turn(isolated_homes, monkeypatch):
    from test_claude_format import assistant, session_path, write_jsonl
    home = resolve_homes()
    path = write_jsonl(session_path(home), claude_big())
    assert scan()[0]["messages"] == count_messages(records_from_lines(read_lines(path)))
    calls = []
    real = cc_listing.count_messages_from
    monkeypatch.setattr(cc_listing, "count_messages_from", lambda p, **kw: calls.append(kw) or real(p, **kw))
    with open(path, "ab") as fh:     # the same message.id as the last line: still one message
        fh.write(orjson.dumps(assistant("c", None, "m299", {"type": "text", "text": "tail"})) + b"\n")
    assert scan()[0]["messages"] == count_messages(records_from_lines(read_lines(path)))
    assert calls and calls[0]["mid"] == "m299" and calls[0]["end"] > 128 * 1024
    assert scan() == scan("--no-index")


# ---- exact counts at any size -------------------------------------------------------------------

def test_codex_counts_are_exact_past_the_head_and_in_a_zst(isolated_homes):
    home = isolated_homes["CODEX_HOME"]
    plain = write_rollout(home, tid(12), big_rollout(12, turns=5))
    write_rollout(home, tid(13), big_rollout(13, turns=7), compressed=True)
    counts = {s["id"]: s["messages"] for s in scan()}
    assert counts[tid(12)] == full_count(plain) == 4 + 5
    assert counts[tid(13)] == 4 + 7


ROLES = st.sampled_from(["user", "assistant", "progress", "system", "broken", "blank", "spaced"])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kinds=st.lists(st.tuples(ROLES, st.integers(0, 3), st.integers(0, 3000)), min_size=1, max_size=60),
       chunk=st.sampled_from([7, 64, 4096, 1 << 20]), unterminated=st.booleans())
def test_claude_byte_count_equals_the_record_count(tmp_path_factory, kinds, chunk, unterminated):
    from test_claude_format import assistant, user
    lines = []
    for kind, mid, pad in kinds:
        if kind == "user":
            lines.append(orjson.dumps(user("u", None, "p" * pad)))
        elif kind == "assistant":
            lines.append(orjson.dumps(assistant("a", None, f"m{mid}", {"type": "text", "text": "t" * pad})))
        elif kind == "progress":     # a nested user record: a false match the parse drops
            lines.append(orjson.dumps({"type": "progress", "data": {"message": {"type": "user", "x": "p" * pad}}}))
        elif kind == "system":
            lines.append(orjson.dumps({"type": "system", "content": "s" * pad}))
        elif kind == "broken":
            lines.append(b'{"type":"assistant","message":{"id":"m1"')
        elif kind == "cut":          # broken, no marker: not parsed, named only as a torn last line
            lines.append(b'{"timestamp":"x","type":"event_msg","payload":{"type":"tok' + b"t" * pad)
        elif kind == "blank":
            lines.append(b"")
        else:                        # JSON whitespace around the colon still counts
            lines.append(b'{"type" : "assistant", "message": {"id": "m%d", "content": []}}' % mid)
    data = b"\n".join(lines) + (b"" if unterminated else b"\n")
    path = tmp_path_factory.mktemp("c") / "s.jsonl"
    path.write_bytes(data)
    expected = count_messages(records_from_lines(read_lines(path)))
    old = marks.CHUNK
    marks.CHUNK = chunk
    try:
        total, resume = cc_listing.count_messages_from(path)
        # resuming at any recorded point gives the same count
        again, _ = cc_listing.count_messages_from(path, **resume)
    finally:
        marks.CHUNK = old
    assert total == expected == again


@settings(max_examples=60, deadline=None)
@given(lines=st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")), max_size=30),
       tail=st.binary(max_size=20).map(lambda b: b.replace(b"\n", b"")), chunk=st.integers(1, 50),
       start=st.integers(0, 3))
def test_marked_lines_yields_exactly_the_lines_holding_the_marker(lines, tail, chunk, start):
    lines = [b"pre"] * start + lines
    data = b"".join(ln + b"\n" for ln in lines) + tail
    skip = sum(len(ln) + 1 for ln in lines[:start])
    pattern = re.compile(rb"a\s*b")
    fh = BytesIO(data)
    fh.seek(skip)
    found = marks.MarkedLines(fh, pattern, start=skip, chunk=chunk)
    got = list(found)
    want, off = [], 0
    for ln in lines:
        if off >= skip and pattern.search(ln):
            want.append((off, ln + b"\n"))
        off += len(ln) + 1
    if tail and pattern.search(tail):
        want.append((off, tail))
    assert got == want and found.end == len(data) - len(tail)


def test_over_long_lines_are_never_held_or_yielded():
    data = b"ab" + b"x" * 100 + b"\nab\n" + b"ab" + b"y" * 100
    got = list(marks.MarkedLines(BytesIO(data), re.compile(b"ab"), chunk=8, max_line=50))
    assert got == [(103, b"ab\n")]


def test_claude_adapter_discover_counts_big_files_exactly(isolated_homes):
    from test_claude_format import session_path, write_jsonl
    path = write_jsonl(session_path(resolve_homes()), claude_big(400))
    assert path.stat().st_size > 2 * cc.HEAD_TAIL
    ref = next(cc.discover(resolve_homes()))
    assert ref.messages == count_messages(records_from_lines(read_lines(path)))


def test_mini_cc_counts_are_exact_past_128_kb(isolated_homes):
    from histmig.tools.mini_cc import adapter as mini
    folder = mini.projects_root(resolve_homes()) / "-w-app"
    folder.mkdir(parents=True)
    path = folder / "5b1f3c2a-8d4e-4f6a-9b7c-0d1e2f3a4b5c.jsonl"
    lines = []
    for i in range(400):     # the Python build writes spaced JSON
        lines.append(json.dumps({"type": "user", "uuid": f"u{i}", "cwd": "/w/app",
                                 "message": {"role": "user", "content": "q" * 300}}))
        lines.append(json.dumps({"type": "assistant", "uuid": f"a{i}", "cwd": "/w/app",
                                 "message": {"role": "assistant", "content": [{"type": "text", "text": "a"}]}}))
    path.write_text("\n".join(lines) + "\n")
    assert path.stat().st_size > 2 * 64 * 1024
    (ref,) = [s for s in scan() if s["tool"] == "mini-cc"]
    assert ref["messages"] == 800 == sum(1 for r in mini.records_from_lines(read_lines(path)) if r.role)
    assert scan() == scan("--no-index")


LINE_PIECES = st.sampled_from([b'{"a":1}', b'{"a": 1}', b'{"a":1,"a":2}', b"[1]", b"{", b"", b" ", b"\r",
                               b"\xef\xbb\xbf", b"\x00", b"\xff", b'"x"', b"7"])


def _item(role: str, text: str) -> dict:
    return {"timestamp": TS, "type": "response_item", "payload": {
        "type": "message", "role": role, "content": [{"type": "input_text", "text": text}]}}


CODEX_KINDS = st.sampled_from(["user", "assistant", "developer", "injected", "spaced", "event_user", "event_agent",
                               "reasoning", "legacy", "broken", "cut", "blank", "quoted"])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kinds=st.lists(st.tuples(CODEX_KINDS, st.integers(0, 2000)), min_size=1, max_size=50),
       chunk=st.sampled_from([7, 64, 4096, 1 << 20]), unterminated=st.booleans())
def test_codex_byte_count_equals_the_full_count(tmp_path_factory, kinds, chunk, unterminated):
    """Lines found by the message marker count what a full read counts (events quoting a "message" key,
    spaced writers, broken lines), read whole or resumed from the stored end; the broken lines named
    are the marker lines that do not parse and a torn last line (docs/scan-show.md)."""
    lines = []
    for kind, pad in kinds:
        if kind in ("user", "assistant", "developer"):
            lines.append(orjson.dumps(_item(kind, "q" * pad)))
        elif kind == "injected":
            lines.append(orjson.dumps(_item("user", "<environment_context>" + "e" * pad)))
        elif kind == "spaced":       # any JSON whitespace around the colon still counts
            lines.append(json.dumps(_item("assistant", "s" * pad)).encode())
        elif kind == "event_user":   # a "message" key, no message item: found, decided, not parsed
            lines.append(orjson.dumps({"timestamp": TS, "type": "event_msg",
                                       "payload": {"type": "user_message", "message": "u" * pad}}))
        elif kind == "event_agent":
            lines.append(orjson.dumps({"timestamp": TS, "type": "event_msg",
                                       "payload": {"type": "agent_message", "message": "a" * pad}}))
        elif kind == "reasoning":
            lines.append(orjson.dumps({"timestamp": TS, "type": "response_item",
                                       "payload": {"type": "reasoning", "summary": [], "x": "r" * pad}}))
        elif kind == "legacy":       # a pre-envelope message line
            lines.append(orjson.dumps({"type": "message", "role": "user", "content": [{"type": "input_text",
                                                                                      "text": "l" * pad}]}))
        elif kind == "broken":
            lines.append(b'{"timestamp":"x","type":"response_item","payload":{"type":"message","role":"user"')
        elif kind == "cut":          # broken, no marker: not parsed, named only as a torn last line
            lines.append(b'{"timestamp":"x","type":"event_msg","payload":{"type":"tok' + b"t" * pad)
        elif kind == "blank":
            lines.append(b"")
        else:                        # the marker quoted inside a string: found, parsed, not a message
            lines.append(orjson.dumps({"type": "event_msg", "payload": {"type": "x", "t": '"type":"message"'}}))
    meta = orjson.dumps({"timestamp": TS, "type": "session_meta", "payload": {"id": "x", "cwd": "/w"}})
    data = b"\n".join([meta] + lines) + (b"" if unterminated else b"\n")
    path = tmp_path_factory.mktemp("r") / "rollout.jsonl"
    path.write_bytes(data)
    old = marks.CHUNK
    marks.CHUNK = chunk
    try:
        listed = listread.read(path, len(data))
        again = listread.read(path, len(data), grown=(listed.resume, scanindex.head_hash(listed.head)))
    finally:
        marks.CHUNK = old
    assert listed.messages == full_count(path) == again.messages
    # the broken lines a listing names: those it parses (the marker lines) and a torn last line
    torn = unterminated and kinds[-1][0] == "cut"
    want = sum(k == "broken" for k, _ in kinds) + torn
    assert listed.broken == want == again.broken


# ---- Copilot CLI (events.jsonl + workspace.yaml) ------------------------------------------------

def test_copilot_listing_uses_the_index_and_counts_a_grown_file_from_where_it_stopped(isolated_homes, monkeypatch):
    from histmig.tools.copilot import adapter as cp
    samples.install(isolated_homes["HOME"], tools=("copilot",))
    cold = json.loads(histmig("scan", "--tool", "copilot", "--json").stdout)
    assert cold["sessions"]

    def no_read(*a, **k):
        raise AssertionError("an unchanged Copilot session was read again")
    with monkeypatch.context() as m:
        m.setattr(cp, "count_messages", no_read)
        m.setattr(cp.workspace, "read", no_read)
        assert json.loads(histmig("scan", "--tool", "copilot", "--json").stdout) == cold

    first = cold["sessions"][0]
    events = first["path"]
    starts = []
    real = cp.count_messages
    monkeypatch.setattr(cp, "count_messages", lambda p, **kw: starts.append(kw) or real(p, **kw))
    size = os.path.getsize(events)
    with open(events, "ab") as fh:
        fh.write(b'{"type":"user.message","data":{"content":"more"},"id":"x1","timestamp":"2026-01-01T00:00:00Z",'
                 b'"parentId":null}\n')
    grown = {s["id"]: s for s in json.loads(histmig("scan", "--tool", "copilot", "--json").stdout)["sessions"]}
    assert starts and starts[0]["end"] == size and grown[first["id"]]["messages"] == first["messages"] + 1
    # workspace.yaml is part of the entry: a changed cwd is read again
    ws = os.path.join(os.path.dirname(events), "workspace.yaml")
    text = open(ws).read()
    with open(ws, "w") as fh:
        fh.write(text.replace(first["cwd"], first["cwd"] + "-moved"))
    again = {s["id"]: s for s in json.loads(histmig("scan", "--tool", "copilot", "--json").stdout)["sessions"]}
    assert again[first["id"]]["cwd"] == first["cwd"] + "-moved"
    assert json.loads(histmig("scan", "--tool", "copilot", "--json").stdout) == \
        json.loads(histmig("scan", "--tool", "copilot", "--json", "--no-index").stdout)


# ---- the warm ref (core.model.stored_ref) ------------------------------------------------------

_TEXT = st.none() | st.text(max_size=8)
_STORED = st.fixed_dictionaries({}, optional={
    "id": st.text(max_size=8), "cwd": _TEXT, "provider": _TEXT, "created": _TEXT, "title": _TEXT,
    "messages": st.none() | st.integers(0, 10**6), "state": st.lists(st.text(max_size=5), max_size=3),
    "error": _TEXT, "extra": st.dictionaries(st.text(max_size=4), st.integers(), max_size=2)})


@settings(max_examples=200, deadline=None)
@given(fields=_STORED, archived=st.booleans(), size=st.integers(0, 10**9),
       updated=st.floats(0, 2e9, allow_nan=False))
def test_a_stored_ref_is_the_ref_init_and_fill_made(fields, archived, size, updated):
    """``stored_ref`` (no ``__init__``) gives what ``SessionRef(**walk)`` filled with the stored fields
    gave: equal refs, the same ``__dict__`` in the same order, the same JSON, and its own copies of the
    index's ``state`` and ``extra``."""
    from histmig.core.model import SessionRef, stored_ref
    walk = dict(format="codex", id="from-the-name", path="/h/rollout-x.jsonl", archived=archived, compressed=False,
                size=size, updated=updated)
    old = scanindex.fill(SessionRef(**walk), fields)
    new = stored_ref(fields, **walk)
    assert new == old and list(new.__dict__.items()) == list(old.__dict__.items())
    assert new.to_dict() == old.to_dict() == _to_dict_by_attributes(old)
    if "state" in fields:
        assert new.state is not fields["state"]
    if "extra" in fields:
        assert new.extra is not fields["extra"]


def _to_dict_by_attributes(ref) -> dict:
    """``SessionRef.to_dict`` as it was written before it read its ``__dict__`` directly."""
    return {"tool": ref.format, "id": ref.id, "path": os.fspath(ref.path), "cwd": ref.cwd,
            "provider": ref.provider, "updated": ref.updated, "created": ref.created,
            "title": ref.title, "messages": ref.messages, "size": ref.size,
            "state": ref.state_text(), "archived": ref.archived, "compressed": ref.compressed,
            "error": ref.error, **({"extra": ref.extra} if ref.extra else {})}


def test_a_command_run_in_this_process_freezes_nothing(sample_home):
    """``main`` freezes what the imports made only in a process of its own (argv None): a caller that
    runs commands in its own process, as the tests do, keeps its objects collectable."""
    import gc

    from histmig.cli import main
    before = gc.get_freeze_count()
    with pytest.raises(SystemExit) as ran:
        main(["-q", "scan", "--json"])
    assert ran.value.code == 0 and gc.get_freeze_count() == before


def test_a_process_running_one_command_freezes_what_its_start_up_imported(isolated_homes):
    """``histmig`` as a process of its own (``main()``, argv None): the start-up's objects are frozen."""
    code = ("import gc, sys\nfrom histmig.cli import main\nsys.argv = ['histmig', '--version']\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\nprint(gc.get_freeze_count())")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert int(p.stdout.split()[-1]) > 1000


def test_a_stored_key_of_the_wrong_length_is_a_miss_for_a_grown_file_too(tmp_path):
    """A damaged record's ``[dev, ino, size, mtime_ns]`` of three numbers: no hit, and no grow check
    (unpacking it raised ValueError before the layout of 2fa29f5 checked its length)."""
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"{}\n")
    st = os.stat(path)
    index = scanindex.ScanIndex(str(tmp_path / "idx"))
    index.records[str(path)] = orjson.dumps([[st.st_dev, st.st_ino, 1], None, {}, {"end": 1}, "h"]) + b"\n"
    assert index.hit(str(path), st) is None and index.grown(str(path), st) is None
    index.records[str(path)] = orjson.dumps([[st.st_dev, st.st_ino, 1, 0], None, {}, {"end": 1}, "h"]) + b"\n"
    assert index.grown(str(path), st) == ({"end": 1}, "h")     # the same record, its key whole: it grew
