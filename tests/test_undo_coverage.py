"""What an undo that kept a session records as reverted, so that the next undo finishes that
session: its file *and* its database rows (histmig/verbs/undo/coverage.py)."""
from __future__ import annotations


import orjson

from histmig.apply import apply_plan, fsio
from histmig.apply.journal import list_transactions
from histmig.core.plan import Fingerprint, Plan, Rename, WriteFile
from histmig.verbs.flip import plan_flip
from histmig.verbs.undo.coverage import Covered, encode, reverted, reverted_by_journal
from histmig.verbs.undo.run import undo

from codex_fixtures import home_with, rollout, tid
from test_apply_session_atomic import changes_at_last_check
from test_move_fixtures import homes
from test_undo_inverse import codex_codes, row
from test_undo_settled import edit_journal

DB = "state_5.sqlite"


def _provider(h, n: int) -> list:
    return row(h.codex / DB, "SELECT model_provider FROM threads WHERE id=?", tid(n))


def _flipped_three():
    h = homes()
    sessions = {tid(i): rollout(tid(i)) for i in (1, 2, 3)}
    paths = home_with(h.codex, sessions)
    res = apply_plan(plan_flip(h, "openai", "my-provider"), h)
    assert res.exit_code == 0, res.skips
    return h, sessions, paths, h.state / "tx" / res.txid


def test_a_kept_session_gets_its_row_back_too_when_a_second_undo_finishes_it():
    """The flip's rows of all sessions are one journal operation: the first undo kept session 1
    (its file was rewritten since) and reverted the others' rows; once the file is back as the flip
    left it, the second undo must revert session 1's file and its row (before: the file only, so
    the row said my-provider while the file said openai)."""
    h, sessions, paths, _ = _flipped_three()
    flipped = paths[tid(1)].read_bytes()
    paths[tid(1)].write_bytes(flipped[:200] + b"x" * 10 + flipped[210:])
    first = undo(h)
    assert first.state == "partly-undone" and [s.path for s in first.skips] == [str(paths[tid(1)])]
    assert _provider(h, 1) == [("my-provider",)] and _provider(h, 2) == [("openai",)]
    paths[tid(1)].write_bytes(flipped)
    second = undo(h, first.txid)
    assert second.state == "undone", second.skips
    assert {t: p.read_bytes() for t, p in paths.items()} == sessions
    assert [_provider(h, i) for i in (1, 2, 3)] == [[("openai",)]] * 3
    assert codex_codes(h) == set()


def test_an_undo_whose_mark_was_lost_after_it_kept_a_session_is_finished_by_the_next():
    """A crash between the undo's commit and its ``undo-by`` mark, after it skipped session 1 while
    applying: the next undo reads what the undo's own journal finished, not what it planned, so it
    reverts session 1 (before: it counted session 1 as reverted and marked the flip undone)."""
    h, sessions, paths, folder = _flipped_three()
    fs, fired = changes_at_last_check(paths[tid(1)])
    with fsio.using(fs):
        first = undo(h)
    assert fired and first.state == "partly-undone", first.skips
    edit_journal(folder, lambda r: None if r["kind"] in ("undo-by", "undo-stopped") else r)   # the lost mark
    assert {t.txid: t.state for t in list_transactions(h.state)}[folder.name] == "committed"
    second = undo(h, folder.name)
    assert second.state == "undone", second.skips
    assert {t: p.read_bytes() for t, p in paths.items()} == sessions
    assert [_provider(h, i) for i in (1, 2, 3)] == [[("openai",)]] * 3


def test_the_mark_names_each_reverted_row_and_only_whole_operations_of_reverted_sessions():
    h, _, paths, folder = _flipped_three()
    flipped = paths[tid(2)].read_bytes()
    paths[tid(2)].write_bytes(flipped[:200] + b"y" * 10 + flipped[210:])
    undo(h)
    mark = next(r for r in map(orjson.loads, (folder / "journal.jsonl").read_bytes().splitlines())
                if r["kind"] == "undo-by")
    whole = [p for p in mark["ns"] if isinstance(p, int)]
    rows = [p for p in mark["ns"] if isinstance(p, list)]
    assert len(whole) == 2 and rows and len({n for n, _ in rows}) >= 1
    covered = Covered()
    covered.add(mark["ns"])
    kept_file = next(r for r in map(orjson.loads, (folder / "journal.jsonl").read_bytes().splitlines())
                     if r["kind"] == "intent" and r.get("path") == str(paths[tid(2)]))
    assert kept_file["n"] not in covered.ops


# -- the coverage rules on their own ---------------------------------------------------------------
def _plan(ops, units) -> Plan:
    return Plan(op="undo", args={"units": units}, roots=[], operations=ops)


def test_a_unit_is_reverted_only_when_no_path_of_its_operations_was_skipped():
    anything = Fingerprint(dev=1)
    a, b = WriteFile(path="/h/a", expect=anything, new_bytes=b"a"), WriteFile(path="/h/b", expect=anything, new_bytes=b"b")
    folder = Rename(src="/h/new", dst="/h/old", expect=anything)
    plan = _plan([a, b, folder], [[[0, [9, 0]], [0]], [[1, [9, 1]], [1, 2]], [[[9, 2]], [2]]])
    assert reverted(plan, set()) == [0, 1, [9, 0], [9, 1], [9, 2]]
    assert reverted(plan, {"/h/b"}) == [0, [9, 0], [9, 2]]
    assert reverted(plan, {"/h/new"}) == [0, [9, 0]]     # the folder rename took two units along


def test_a_lost_mark_counts_the_units_whose_every_operation_is_done():
    args = {"units": [[[0, [9, 0]], [0, 3]], [[1, [9, 1]], [1, 4]], [[2], [2]]]}
    records = [{"kind": "begin"}, {"kind": "intent", "n": 0, "method": "replace"}, {"kind": "done", "n": 0},
               {"kind": "intent", "n": 2, "method": "replace"}, {"kind": "skip", "n": 2},
               {"kind": "intent", "n": 3, "method": "sql", "ops": [3, 4]}, {"kind": "done", "n": 3},
               {"kind": "commit"}]
    assert reverted_by_journal(args, records) == [0, [9, 0]]       # 1 was never attempted, 2 skipped
    assert reverted_by_journal({"ns": [0, 1]}, records) == [0, 1]   # an older undo: what it planned


def test_encode_puts_whole_operations_first_and_rows_as_pairs():
    assert encode({(3, 1), 2, (3, 0), 1}) == [1, 2, [3, 0], [3, 1]]
    covered = Covered()
    covered.add([1, [3, 0], [3, 1]])
    assert covered.done_with({"n": 1, "method": "replace"})
    assert covered.done_with({"n": 3, "method": "sql", "rows": [{}, {}]})
    assert not covered.done_with({"n": 3, "method": "sql", "rows": [{}, {}, {}]})
    assert covered.rows_of(3) == {0, 1}
