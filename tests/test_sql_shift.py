"""SqlShift: a thread's byte offsets moved by one operation, checked and journaled by count and
digest (histmig/core/shift.py, docs/safety.md "Shifted offsets"), so a flip's plan, journal and undo
hold one entry per thread and table instead of one per turn row."""
from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from histmig.apply import apply_plan, fsio, recover
from histmig.apply.backups import _committed
from histmig.apply.journal import list_transactions, read_records
from histmig.core.plan import Plan, ShiftEdits, SqlShift, SqlUpdate
from histmig.core.shift import digests, inverse_edits, needed, shift, shifter
from histmig.tools.codex import state as codex_state
from histmig.verbs.flip import plan_flip
from histmig.verbs.undo import plan_undo, pick_transaction
from histmig.verbs.undo.run import undo

from codex_fixtures import home_with, rollout, tid
from test_move_fixtures import homes

HIST = "thread_history_1.sqlite"


def _rows(db: Path) -> list[tuple]:
    con = sqlite3.connect(db)
    try:
        return (con.execute("SELECT * FROM thread_turns ORDER BY thread_id, turn_id").fetchall()
                + con.execute("SELECT * FROM thread_history_projection_state ORDER BY thread_id").fetchall())
    finally:
        con.close()


def _home(n: int = 3):
    h = homes()
    for d in (h.codex, h.state):
        shutil.rmtree(d, ignore_errors=True)
    sessions = {tid(i): rollout(tid(i), turns=3) for i in range(1, n + 1)}
    return h, home_with(h.codex, sessions), sessions


def _line_starts(data: bytes) -> set[int]:
    return {0} | {i + 1 for i, b in enumerate(data) if b == 10}


def _sql_intents(h) -> list[dict]:
    [tx] = [t for t in list_transactions(h.state) if t.state == "committed"][-1:]
    return [r for r in read_records(h.state / "tx" / tx.txid) if r["kind"] == "intent" and r["method"] == "sql"]


# -- the plan, the apply and the undo ----------------------------------------------------------------
def test_flip_plans_one_shift_per_thread_and_table_and_undo_gives_every_value_back():
    h, paths, sessions = _home()
    db = h.codex / HIST
    before = _rows(db)
    plan = plan_flip(h, "openai", "my-provider")
    shifts = [op for op in plan.operations if isinstance(op, SqlShift)]
    assert sorted((op.where["thread_id"], op.table, op.rows) for op in shifts) == sorted(
        (t, table, n) for t in sessions for table, n in (("thread_turns", 3), ("thread_history_projection_state", 1)))
    assert not [op for op in plan.operations if isinstance(op, SqlUpdate) and op.table != "threads"]
    assert plan.summary["offset_rows"] == 3 * 4
    res = apply_plan(plan, h)
    assert res.exit_code == 0 and not res.skips
    for t, p in paths.items():                 # every stored offset on a line start of the new file
        stored = codex_state.offsets_for(h, t)
        data = p.read_bytes()
        assert stored["next"] == len(data) != len(sessions[t])
        assert all(r[c] in _line_starts(data) for r in stored["turns"] for c in codex_state.TURN_OFFSETS)
    rows = [row for r in _sql_intents(h) if r["path"] == str(db) for row in r["rows"]]
    assert [r["kind"] for r in rows] == ["shift"] * 6          # one journal row per shift, not per turn row
    assert all(len(orjson.dumps(r)) < 600 for r in rows)
    out = undo(h)
    assert out.exit_code == 0 and out.state == "undone" and not out.skips
    assert _rows(db) == before                                  # every value, every row
    assert all(p.read_bytes() == sessions[t] for t, p in paths.items())


def test_a_saved_plan_carries_its_shifts_and_applies(tmp_path):
    h, paths, _ = _home(2)
    plan = plan_flip(h, "openai", "my-provider")
    again = Plan.loads(plan.dumps())
    assert [op.to_dict() for op in again.operations] == [op.to_dict() for op in plan.operations]
    shift_op = next(op for op in again.operations if isinstance(op, SqlShift))
    assert isinstance(shift_op.edits, ShiftEdits) and isinstance(shift_op.order, tuple)
    planned = next(op for op in plan.operations if isinstance(op, SqlShift))
    assert shift_op == planned and hash(shift_op.edits) == hash(tuple(planned.edits))
    assert "shift thread_history_1.sqlite thread_turns" in shift_op.describe()
    assert apply_plan(again, h).exit_code == 0


def test_a_row_changed_between_plan_and_apply_skips_its_session_only():
    h, paths, sessions = _home(2)
    db = h.codex / HIST
    plan = plan_flip(h, "openai", "my-provider")
    con = sqlite3.connect(db)
    con.execute("UPDATE thread_turns SET rollout_end_byte_offset = rollout_end_byte_offset + 1 "
                "WHERE thread_id = ? AND turn_id = 'turn-2'", (tid(1),))
    con.commit()
    con.close()
    changed = _rows(db)
    res = apply_plan(plan, h)
    assert res.exit_code == 3
    assert any(s.code == "row-changed" and "thread_turns" in s.reason for s in res.skips), res.skips
    assert paths[tid(1)].read_bytes() == sessions[tid(1)]            # its file is skipped with it
    assert paths[tid(2)].read_bytes() != sessions[tid(2)]
    now = _rows(db)
    assert [r for r in now if r[0] == tid(1)] == [r for r in changed if r[0] == tid(1)]
    assert [r for r in now if r[0] == tid(2)] != [r for r in changed if r[0] == tid(2)]


def test_undo_of_a_shift_whose_rows_changed_since_keeps_the_session():
    h, paths, sessions = _home(2)
    db = h.codex / HIST
    assert apply_plan(plan_flip(h, "openai", "my-provider"), h).exit_code == 0
    con = sqlite3.connect(db)
    con.execute("UPDATE thread_turns SET rollout_byte_offset = 7 WHERE thread_id = ? AND turn_id = 'turn-1'",
                (tid(1),))
    con.commit()
    con.close()
    out = undo(h)
    assert out.exit_code == 3 and any(s.code == "row-changed" for s in out.skips)
    assert paths[tid(1)].read_bytes() != sessions[tid(1)]            # kept whole: file and rows
    assert paths[tid(2)].read_bytes() == sessions[tid(2)]


def test_undo_of_a_continued_rollout_plans_a_shift_of_the_rows_as_they_are_now():
    h, paths, sessions = _home(1)
    db = h.codex / HIST
    assert apply_plan(plan_flip(h, "openai", "my-provider"), h).exit_code == 0
    post = paths[tid(1)].read_bytes()
    extra = b'{"timestamp":"2026-11-30T10:00:00.000Z","ordinal":99,"type":"event_msg","payload":{"type":"x"}}\n'
    with open(paths[tid(1)], "ab") as fh:
        fh.write(extra)
    con = sqlite3.connect(db)
    con.execute("INSERT INTO thread_turns VALUES (?,?,?,?,?,?,?)",
                (tid(1), "turn-9", 99, "completed", len(post), 99, len(post) + len(extra)))
    con.commit()
    con.close()
    plan = plan_undo(h, pick_transaction(h.state, None))
    [turns] = [op for op in plan.operations if isinstance(op, SqlShift) and op.table == "thread_turns"]
    assert turns.rows == 4                                         # the row Codex added moves too
    out = undo(h)
    assert out.exit_code == 0 and not out.skips
    now = paths[tid(1)].read_bytes()
    assert now == sessions[tid(1)] + extra
    stored = codex_state.offsets_for(h, tid(1))
    assert sorted(r["rollout_byte_offset"] for r in stored["turns"])[-1] == len(sessions[tid(1)])


# -- crashes and recover -----------------------------------------------------------------------------
def _commit_index(h, plan_of) -> int:
    """The facade's count at the history database's commit in an apply of ``plan_of()``."""
    fs = fsio.FS()
    with fsio.using(fs):
        assert apply_plan(plan_of(), h).exit_code == 0
    return next(i for i, (name, label) in enumerate(fs.log, 1) if name == "sql-commit" and label.endswith(HIST))


def _killed_at(h, tmp_path, plan: Plan, k: int) -> None:
    (tmp_path / "plan.json").write_bytes(plan.dumps())
    env = dict(os.environ, HISTMIG_TEST_FSYNC="0", HISTMIG_CRASH_AT=str(k))
    r = subprocess.run([sys.executable, "-m", "histmig", "apply", str(tmp_path / "plan.json")], env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == -signal.SIGKILL, r.stderr


def _legacy_flip(h) -> Plan:
    """A flip as histmig planned it before SqlShift: one SqlUpdate per offset row (what older
    journals hold: per-row "update" records of thread_turns)."""
    plan = plan_flip(h, "openai", "my-provider")
    ops = []
    for op in plan.operations:
        if not isinstance(op, SqlShift):
            ops.append(op)
            continue
        con = sqlite3.connect(op.db)
        cols = (*op.order, *op.columns)
        moved = shifter(op.edits)
        for row in con.execute(f"SELECT {', '.join(cols)} FROM {op.table} WHERE thread_id = ?",
                               (op.where["thread_id"],)):
            old = dict(zip(op.columns, row[len(op.order):]))
            ops.append(SqlUpdate(db=op.db, table=op.table, key={**op.where, **dict(zip(op.order, row))},
                                 set={c: moved(v) for c, v in old.items()}, expect=old, session=op.session,
                                 reason=op.reason))
        con.close()
    plan.operations = ops
    return plan


def _crash_then_recover(tmp_path, plan_of, after_commit: bool) -> None:
    h, paths, sessions = _home(2)
    k = _commit_index(h, plan_of)
    h, paths, sessions = _home(2)
    db = h.codex / HIST
    before = _rows(db)
    _killed_at(h, tmp_path, plan_of(), k + 1 if after_commit else k)
    if after_commit:
        assert _rows(db) != before                          # committed; its done record never written
        begin = read_records(next((h.state / "tx").iterdir()))[0]
        probe = next(e[3] for e in begin["ops"] if e[2] == str(db))
        assert _committed(str(db), probe)
    else:
        assert _rows(db) == before                          # SQLite rolled the open transaction back
    recover(h)
    assert recover(h).nothing
    assert _rows(db) == before
    assert all(p.read_bytes() == sessions[t] for t, p in paths.items())
    if after_commit:
        assert not _committed(str(db), probe)


def test_kill_inside_the_database_transaction_then_recover_leaves_the_rows_old(tmp_path):
    _crash_then_recover(tmp_path, lambda: plan_flip(homes(), "openai", "my-provider"), after_commit=False)


def test_kill_after_the_commit_before_done_then_recover_shifts_the_rows_back(tmp_path):
    _crash_then_recover(tmp_path, lambda: plan_flip(homes(), "openai", "my-provider"), after_commit=True)


def test_a_lost_intent_of_a_committed_shift_is_told_by_the_begin_probe(tmp_path):
    """The journal lost every record after ``begin`` (an outside fault) while the history database
    had committed its shifts: the probe says so, and recover keeps that backup and names it."""
    from clirun import histmig
    h, _, _ = _home(2)
    k = _commit_index(h, lambda: plan_flip(homes(), "openai", "my-provider"))
    h, _, _ = _home(2)
    _killed_at(h, tmp_path, plan_flip(h, "openai", "my-provider"), k + 1)
    folder = next((h.state / "tx").iterdir())
    lines = (folder / "journal.jsonl").read_bytes().splitlines(keepends=True)
    (folder / "journal.jsonl").write_bytes(lines[0])
    r = histmig("recover")
    assert r.exit_code == 1, r.stderr
    assert any(ln.startswith("warning: journal-truncated: ") and f"{h.codex / HIST} holds the planned new rows" in ln
               for ln in r.stderr.splitlines()), r.stderr


def test_an_old_journal_of_per_row_updates_still_recovers(tmp_path):
    _crash_then_recover(tmp_path, lambda: _legacy_flip(homes()), after_commit=True)


def test_an_old_journal_of_per_row_updates_still_undoes():
    h, paths, sessions = _home(2)
    db = h.codex / HIST
    before = _rows(db)
    assert apply_plan(_legacy_flip(h), h).exit_code == 0
    rows = [row for r in _sql_intents(h) if r["path"] == str(db) for row in r["rows"]]
    assert {r["kind"] for r in rows} == {"update"} and len(rows) == 2 * 4
    out = undo(h)
    assert out.exit_code == 0 and not out.skips
    assert _rows(db) == before
    assert all(p.read_bytes() == sessions[t] for t, p in paths.items())


# -- the arithmetic ----------------------------------------------------------------------------------
@st.composite
def _file_and_edits(draw):
    """Lines (each ends with a newline) and edits inside them, as a rewrite makes them: a span of a
    line (never its newline) replaced by bytes of another length, at most one edit per line."""
    lines = draw(st.lists(st.integers(1, 40), min_size=1, max_size=12))
    starts, pos = [], 0
    for n in lines:
        starts.append(pos)
        pos += n + 1
    edits = []
    for start, n in zip(starts, lines):
        if draw(st.booleans()):
            at = start + draw(st.integers(0, n - 1))
            old = draw(st.integers(0, start + n - at))
            new = draw(st.integers(0, 30))
            if new != old:
                edits.append((at, old, new))
    return lines, starts, pos, edits


@settings(max_examples=300, deadline=None)
@given(_file_and_edits())
def test_shift_moves_every_line_start_with_its_line_and_the_inverse_moves_it_back(case):
    lines, starts, end, edits = case
    deltas = [(at, new - old) for at, old, new in edits]
    new_lengths = list(lines)
    for (at, old, new) in edits:
        i = max(i for i, s in enumerate(starts) if s <= at)
        new_lengths[i] += new - old
    new_starts, pos = [], 0
    for n in new_lengths:
        new_starts.append(pos)
        pos += n + 1
    offsets = [*starts, end]
    moved = shifter(deltas)
    assert [moved(o) for o in offsets] == [*new_starts, pos] == [shift(o, deltas) for o in offsets]
    back = shifter(inverse_edits(deltas))
    assert [back(moved(o)) for o in offsets] == offsets
    assert moved(None) is None
    # what a plan keeps of the edits (histmig/core/shift.py needed): the same shifts, the same inverse
    top = max(offsets)
    kept = needed(sorted(deltas), top, False)
    assert [shifter(kept)(o) for o in offsets] == [moved(o) for o in offsets]
    for o in offsets:                                  # a single stored offset: one edit at most
        one = needed(sorted(deltas), o, True)
        assert len(one) <= 1 and shifter(one)(o) == moved(o) and shifter(inverse_edits(one))(moved(o)) == o


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.text(max_size=3), st.integers(0, 1 << 40), st.none() | st.integers(0, 9)),
                max_size=8, unique_by=lambda r: r[0]))
def test_the_digest_does_not_depend_on_row_order(rows):
    assert digests(rows, 1)[0] == digests(list(reversed(rows)), 1)[0]
    assert digests(rows, 1)[0]["count"] == len(rows)


def test_a_shift_in_the_write_path_and_its_revert_restore_the_rows(tmp_path):
    from histmig.apply import sqlops
    db = tmp_path / "t.sqlite"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE t (k TEXT, i TEXT, a INTEGER, b INTEGER)")
    con.executemany("INSERT INTO t VALUES (?,?,?,?)", [("x", "1", 0, 10), ("x", "2", 10, 30), ("x", "3", 30, None),
                                                        ("y", "1", 0, 10)])
    con.commit()
    con.close()
    before = sqlite3.connect(db).execute("SELECT * FROM t ORDER BY k, i").fetchall()
    c = sqlops.connect(str(db))
    expect, _ = sqlops.shift_digests(c, "t", {"k": "x"}, ("i",), ("a", "b"))
    op = SqlShift(db=str(db), table="t", where={"k": "x"}, order=("i",), columns=("a", "b"),
                  edits=((2, 3), (15, -4)), expect=expect)
    assert sqlops._mismatch(c, op) is None
    c.execute("BEGIN IMMEDIATE")
    rec = orjson.loads(orjson.dumps(sqlops._row_change(c, op)))     # as the journal holds it
    sqlops._execute_all(c, [op])
    c.execute("COMMIT")
    after = c.execute("SELECT * FROM t ORDER BY k, i").fetchall()
    assert after == [("x", "1", 0, 13), ("x", "2", 13, 29), ("x", "3", 29, None), ("y", "1", 0, 10)]
    assert sqlops.shift_state(c, rec) == "new" and sqlops._mismatch(c, op)
    c.close()
    assert not sqlops.revert_db(fsio.FS(), {"path": str(db), "rows": [rec]}, strict=False)
    assert sqlite3.connect(db).execute("SELECT * FROM t ORDER BY k, i").fetchall() == before
    assert not sqlops.revert_db(fsio.FS(), {"path": str(db), "rows": [rec]}, strict=False)   # idempotent
    c = sqlite3.connect(db)
    c.execute("UPDATE t SET a = 1 WHERE k = 'x' AND i = '2'")
    c.commit()
    c.close()
    [w] = sqlops.revert_db(fsio.FS(), {"path": str(db), "rows": [rec]}, strict=False)
    assert w.code == "row-changed"


def test_offset_shift_ops_make_nothing_when_no_edit_moves_a_row(tmp_path):
    h, paths, sessions = _home(1)
    end = len(sessions[tid(1)])
    assert codex_state.offset_shift_ops(h, tid(1), [(end, 5)]) == []
    assert codex_state.offset_shift_ops(h, tid(2), [(0, 5)]) == []
    assert [op.table for op in codex_state.offset_shift_ops(h, tid(1), [(10, 5)])] == [
        "thread_turns", "thread_history_projection_state"]
