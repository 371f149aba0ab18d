"""``tx_state`` (what every command checks before it runs) decides a transaction's state from its
state records alone; it must agree with ``state_of`` over all parsed records, torn lines included."""
from __future__ import annotations

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from histmig.apply.journal import JOURNAL, read_records, state_of, tx_state

KINDS = ["begin", "intent", "ready", "done", "commit", "rolled-back", "undo-start", "undo-done",
         "undo-stopped", "undone"]


def _write(folder, kinds, torn_at):
    lines = [orjson.dumps({"kind": k, "t": i, "n": i}) + b"\n" for i, k in enumerate(kinds)]
    if torn_at is not None and lines:
        i = torn_at % len(lines)
        lines[i] = lines[i][: max(1, len(lines[i]) // 2)]      # a crash mid-append: no newline
        lines = lines[: i + 1]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / JOURNAL).write_bytes(b"".join(lines))


@settings(max_examples=300, deadline=None)
@given(kinds=st.lists(st.sampled_from(KINDS), max_size=12), torn_at=st.none() | st.integers(0, 20))
def test_tx_state_agrees_with_state_of_every_record(tmp_path_factory, kinds, torn_at):
    folder = tmp_path_factory.mktemp("tx")
    _write(folder, kinds, torn_at)
    assert tx_state(folder) == state_of(read_records(folder))


def test_tx_state_ignores_a_kind_name_inside_another_record(tmp_path):
    data = orjson.dumps({"kind": "begin", "argv": ['{"kind":"commit"']}) + b"\n"
    (tmp_path / JOURNAL).write_bytes(data)
    assert tx_state(tmp_path) == "applying"


def test_tx_state_reads_long_records_and_the_last_rolled_back_record(tmp_path):
    """Read a line at a time (a journal of tens of MB is never read whole): a long record is only
    passed over, and the last rolled-back record decides whether the rollback was complete."""
    rows = b",".join(orjson.dumps({"kind": "update", "n": i, "table": "threads"}) for i in range(20_000))
    lines = [orjson.dumps({"kind": "begin", "t": 0}), b'{"kind":"intent","n":1,"rows":[' + rows + b"]}",
             orjson.dumps({"kind": "rolled-back", "incomplete": [{"path": "/x"}]}),
             orjson.dumps({"kind": "rolled-back"})]
    (tmp_path / JOURNAL).write_bytes(b"\n".join(lines) + b"\n")
    assert tx_state(tmp_path) == state_of(read_records(tmp_path)) == "rolled-back"
    (tmp_path / JOURNAL).write_bytes(b"\n".join(lines[:3]) + b"\n" + lines[3][:-2])     # the last one torn
    assert tx_state(tmp_path) == state_of(read_records(tmp_path)) == "partly-rolled-back"


@settings(max_examples=300, deadline=None)
@given(kinds=st.lists(st.sampled_from(KINDS), min_size=1, max_size=12))
def test_a_whole_last_record_without_its_newline_agrees_too(tmp_path_factory, kinds):
    """A short write that stopped just before the newline leaves a whole record read_records keeps."""
    folder = tmp_path_factory.mktemp("tx")
    _write(folder, kinds, None)
    data = (folder / JOURNAL).read_bytes()
    (folder / JOURNAL).write_bytes(data[:-1])
    assert tx_state(folder) == state_of(read_records(folder))


# ---- tx_info (histmig log, recover): one record at a time, as the records parsed whole said -----

def _tx_info_of_every_record(folder):
    """``tx_info`` as it was written over every record parsed at once (the reference)."""
    from histmig.apply.journal import TxInfo, _lost_begin, done_ns
    recs = read_records(folder)
    begin = next((r for r in recs if r["kind"] == "begin"), {})
    done = done_ns(recs)
    paths = []
    for r in recs:
        if r["kind"] == "intent" and r["n"] in done and r["path"] not in paths:
            paths.append(r["path"])
    state = _lost_begin(folder, state_of(recs))
    stopped = [r for r in recs if r["kind"] == "undo-stopped"]
    kept = [k if isinstance(k, dict) else {"path": k, "reason": "", "code": ""}
            for k in (stopped[-1].get("skipped", []) if stopped and state == "partly-undone" else [])]
    return TxInfo(txid=folder.name, state=state, op=begin.get("op", ""), argv=begin.get("argv", []),
                  started_ns=begin.get("t", 0), changes=len(done), paths=paths, kept=kept)


_RECORD = st.one_of(
    st.builds(lambda op: {"kind": "begin", "op": op, "argv": ["histmig", op], "ops": [{"kind": "write"}]},
              st.sampled_from(["flip", "move", "undo"])),
    st.builds(lambda n, p: {"kind": "intent", "n": n, "path": f"/h/{p}"}, st.integers(0, 5), st.integers(0, 3)),
    st.builds(lambda n: {"kind": "done", "n": n}, st.integers(0, 5)),
    st.builds(lambda n: {"kind": "taken-back", "n": n}, st.integers(0, 5)),
    st.builds(lambda s: {"kind": "undo-stopped", "skipped": s},
              st.lists(st.sampled_from(["/h/0", {"path": "/h/1", "reason": "live", "code": "live"}]), max_size=2)),
    st.builds(lambda k: {"kind": k}, st.sampled_from(["commit", "undo-start", "undone", "ready", "settled"])),
    st.builds(lambda inc: {"kind": "rolled-back", **({"incomplete": [{"path": "/h/2"}]} if inc else {})},
              st.booleans()))


@settings(max_examples=300, deadline=None)
@given(records=st.lists(_RECORD, max_size=14), torn=st.lists(st.integers(0, 20), max_size=2),
       unended=st.booleans(), long_at=st.none() | st.integers(0, 20))
def test_tx_info_agrees_with_every_record_parsed_at_once(tmp_path_factory, records, torn, unended, long_at):
    """Torn lines anywhere (the next append starts a new line), a whole last record without its
    newline, a database intent of over 1 MiB (its rows left in the file)."""
    from histmig.apply.journal import tx_info
    folder = tmp_path_factory.mktemp("tx")
    if long_at is not None:
        rows = [{"kind": "update", "table": "threads", "key": {"id": f"t{i}"}} for i in range(25_000)]
        records = records[:long_at] + [{"kind": "intent", "n": 9, "method": "sql", "path": "/h/db", "rows": rows},
                                       {"kind": "done", "n": 9}] + records[long_at:]
    lines = [orjson.dumps({**r, "t": i}) + b"\n" for i, r in enumerate(records)]
    for t in torn:
        if lines:
            i = t % len(lines)
            lines[i] = lines[i][: max(1, len(lines[i]) // 2)] + b"\n"
    data = b"".join(lines)
    (folder / JOURNAL).write_bytes(data[:-1] if unended and data else data)
    assert tx_info(folder) == _tx_info_of_every_record(folder)


def test_tx_info_never_holds_every_record(tmp_path, monkeypatch):
    """``histmig log`` at 8,000 sessions held a 37 MB journal parsed whole (166 MB): no list of them."""
    from histmig.apply import journal
    lines = [{"kind": "begin", "t": 5, "op": "move", "argv": ["a"], "ops": []},
             {"kind": "intent", "n": 0, "path": "/h/b"}, {"kind": "intent", "n": 1, "path": "/h/a"},
             {"kind": "done", "n": 1}, {"kind": "done", "n": 0}, {"kind": "intent", "n": 2, "path": "/h/b"},
             {"kind": "done", "n": 2}, {"kind": "commit"}]
    (tmp_path / JOURNAL).write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in lines))
    monkeypatch.setattr(journal, "read_records", lambda *a: (_ for _ in ()).throw(AssertionError("read whole")))
    info = journal.tx_info(tmp_path)
    assert (info.state, info.op, info.started_ns, info.changes, info.paths) == ("committed", "move", 5, 3, ["/h/b", "/h/a"])


# ---- begin_head: the begin record without the plan's operations -----------------------------------

def _begin(tmp_path, rec, ops, rest=b""):
    from histmig.apply import fsio
    from histmig.apply.journal import Journal
    journal = Journal.create(fsio.FS(), tmp_path, "tx1")
    try:
        journal.append_stream("begin", rec, "ops", iter(ops))
    finally:
        journal.close()
    with open(journal.folder / JOURNAL, "ab") as fh:
        fh.write(rest)
    return journal.folder


def test_begin_head_reads_the_begin_record_without_its_operations(tmp_path, monkeypatch):
    from histmig.apply import journal
    ops = [{"kind": "write", "path": f"/h/{i}", "pad": "x" * 100} for i in range(2_000)]    # 250 KB
    folder = _begin(tmp_path, {"op": "flip", "args": {"old": "a"}, "roots": ["/h"]}, ops,
                    orjson.dumps({"kind": "commit"}) + b"\n")
    whole = orjson.loads(open(folder / JOURNAL, "rb").readline())
    read = []
    real_loads = journal.orjson.loads
    monkeypatch.setattr(journal.orjson, "loads", lambda b: read.append(len(b)) or real_loads(b))
    head = journal.begin_head(folder)
    assert head == {k: v for k, v in whole.items() if k != "ops"} and head["op"] == "flip"
    assert max(read) < 1000                    # the operations were never parsed


def test_tx_op_is_begins_op_or_empty(tmp_path):
    """gc lists and undo picks transactions by ``tx_op`` (the one reader of ``begin``'s op)."""
    from histmig.apply.journal import tx_op
    folder = _begin(tmp_path / "a", {"op": "undo", "args": {}}, [{"kind": "write"}])
    assert tx_op(folder) == "undo"
    odd = tmp_path / "b"
    odd.mkdir()
    (odd / JOURNAL).write_bytes(orjson.dumps({"kind": "begin", "t": 1, "op": 7}) + b"\n")
    assert tx_op(odd) == "" and tx_op(tmp_path / "missing") == ""


def test_begin_head_of_a_nested_ops_key_or_an_older_begin_parses_the_line(tmp_path):
    from histmig.apply.journal import begin_head
    # "ops" as a key inside args: the cut there does not parse, the whole line does
    folder = _begin(tmp_path / "a", {"op": "move", "args": {"x": 2, "ops": [1]}}, [{"kind": "write"}])
    whole = orjson.loads(open(folder / JOURNAL, "rb").readline())
    assert begin_head(folder) == {k: v for k, v in whole.items() if k != "ops"}
    assert begin_head(folder)["args"] == {"x": 2, "ops": [1]} and begin_head(folder)["op"] == "move"
    older = tmp_path / "b"
    older.mkdir()
    (older / JOURNAL).write_bytes(orjson.dumps({"kind": "begin", "t": 1, "op": "flip"}) + b"\n")
    assert begin_head(older) == {"kind": "begin", "t": 1, "op": "flip"}
    torn = tmp_path / "c"
    torn.mkdir()
    (torn / JOURNAL).write_bytes(b'{"kind":"begin","t":1,"op":"fl')
    assert begin_head(torn) == {}
    empty_first = tmp_path / "d"
    empty_first.mkdir()
    (empty_first / JOURNAL).write_bytes(b"\n" + orjson.dumps({"kind": "begin", "t": 1, "op": "x", "ops": []}) + b"\n")
    assert begin_head(empty_first) == {}      # as the first line parsed: not a record


def test_gc_record_is_the_last_whole_one(tmp_path):
    from histmig.apply.gc import gc_record
    recs = [{"kind": "begin", "t": 1}, {"kind": "commit"}, {"kind": "gc", "backup_bytes": 1},
            {"kind": "gc", "backup_bytes": 2}]
    data = b"".join(orjson.dumps(r) + b"\n" for r in recs)
    (tmp_path / JOURNAL).write_bytes(data)
    assert gc_record(tmp_path) == {"kind": "gc", "backup_bytes": 2}
    (tmp_path / JOURNAL).write_bytes(data + b'{"kind":"gc","backup_bytes":3}')    # no newline: torn
    assert gc_record(tmp_path) == {"kind": "gc", "backup_bytes": 2}
    (tmp_path / JOURNAL).write_bytes(data + b'{"kind":"gc","bac\n')                # a line that does not parse
    assert gc_record(tmp_path) == {"kind": "gc", "backup_bytes": 2}
    assert gc_record(tmp_path / "missing") is None


def test_recover_parses_no_finished_journal(isolated_homes, monkeypatch):
    """``recover`` finds the unfinished transactions by their state records alone (it read every
    journal whole before: a state dir of large finished ones cost their parsed size)."""
    from histmig.apply import journal, recover
    from histmig.apply.journal import tx_root
    from histmig.tools import resolve_homes
    homes = resolve_homes()
    folder = tx_root(homes.state) / "20261205T000000.000000Z-000001"
    folder.mkdir(parents=True)
    (folder / JOURNAL).write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in (
        {"kind": "begin", "t": 1, "op": "flip", "ops": [{"kind": "write", "path": "/x"}]}, {"kind": "commit"})))
    monkeypatch.setattr(journal, "iter_records", lambda *a, **k: (_ for _ in ()).throw(AssertionError("parsed")))
    monkeypatch.setattr(journal, "read_records", lambda *a, **k: (_ for _ in ()).throw(AssertionError("parsed")))
    assert recover(homes).nothing


def test_begin_head_reads_past_its_first_chunk_and_tries_the_next_cut(tmp_path):
    """An undo's ``begin`` holds every unit in ``args`` (past 64 KiB), and an ``"ops"`` key nested in
    them comes first: the head is still the record without its operations; CRLF is white space."""
    from histmig.apply.journal import begin_head
    rec = {"kind": "begin", "t": 1, "op": "undo",
           "args": {"units": [[[f"s{i}"], [i]] for i in range(20_000)], "more": {"a": 1, "ops": [2]}}, "roots": ["/h"]}
    line = orjson.dumps(rec)[:-1] + b',"ops":[' + b",".join(orjson.dumps({"kind": "write", "n": i})
                                                            for i in range(100)) + b"]}"
    assert len(line) > 3 * (1 << 16)
    for end in (b"\n", b"\r\n"):
        (tmp_path / JOURNAL).write_bytes(line + end + orjson.dumps({"kind": "commit"}) + end)
        assert begin_head(tmp_path) == rec
