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
