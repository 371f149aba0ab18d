"""Adversarial review of undo coverage (histmig/verbs/undo/coverage.py): partial undos, then more."""
from __future__ import annotations

import os

import orjson
import pytest

from histmig.apply import apply_plan
from histmig.apply.journal import list_transactions
from histmig.core.paths import claude_slug
from histmig.verbs.move import plan_move
from histmig.verbs.undo.run import undo

from codex_fixtures import home_with, rollout, tid
from histmig.verbs.flip import plan_flip
from test_crash_undo import _files
from test_move_fixtures import claude_session, homes, sid
from test_undo_settled import edit_journal


def _records(folder) -> list[dict]:
    return [orjson.loads(x) for x in (folder / "journal.jsonl").read_bytes().splitlines()]


def _states(h) -> dict:
    return {t.txid: t.state for t in list_transactions(h.state)}


def _claude_moved_two(tmp_path):
    h = homes()
    old, new = str(tmp_path / "A"), str(tmp_path / "B")
    os.makedirs(new)
    files = [claude_session(h, old, i) for i in (1, 2)]
    before = [f.read_bytes() for f in files]
    res = apply_plan(plan_move(h, old, new, tools=["claude-code"]), h)
    assert res.exit_code == 0, res.skips
    return h, old, new, files, before, h.state / "tx" / res.txid


def test_claude_folder_move_kept_session_is_moved_back_by_the_second_undo(tmp_path):
    h, old, new, files, before, folder = _claude_moved_two(tmp_path)
    moved = h.claude / "projects" / claude_slug(new) / files[0].name
    left = moved.read_bytes()
    moved.write_bytes(left.replace(new.encode(), new[:-1].encode() + b"C", 1))   # a moved span edited
    first = undo(h)
    assert first.state == "partly-undone", first.skips
    assert files[1].read_bytes() == before[1]
    moved.write_bytes(left)
    second = undo(h, folder.name)
    assert second.state == "undone", (second.skips, second.done)
    assert [f.read_bytes() for f in files] == before
    assert not moved.exists()


# -- flip: rows in state_5.sqlite and offsets in thread_history_1.sqlite, one sql intent each ---------
def _flipped(n: int = 3):
    h = homes()
    sessions = {tid(i): rollout(tid(i), turns=2) for i in range(1, n + 1)}
    paths = home_with(h.codex, sessions)
    before = _files(h)
    res = apply_plan(plan_flip(h, "openai", "my-provider"), h)
    assert res.exit_code == 0, res.skips
    return h, paths, before, h.state / "tx" / res.txid


def _edit(path) -> bytes:
    """Rewrite a byte in the middle (not an append): the session is kept; returns the bytes to restore."""
    data = path.read_bytes()
    path.write_bytes(data[:300] + b"#" + data[301:])
    return data


def _restore(path, data: bytes) -> None:
    path.write_bytes(data)


def _drop_mark(folder) -> None:
    edit_journal(folder, lambda r: None if r["kind"] in ("undo-by", "undone", "undo-stopped") else r)


def test_flip_three_undos_each_finish_one_more_session_files_rows_offsets(tmp_path):
    h, paths, before, folder = _flipped()
    kept = {i: _edit(paths[tid(i)]) for i in (1, 2)}
    first = undo(h)
    assert first.state == "partly-undone" and len(first.skips) == 2
    assert _states(h)[folder.name] == "partly-undone"
    _restore(paths[tid(1)], kept[1])
    second = undo(h, folder.name)
    assert second.state == "partly-undone" and [s.path for s in second.skips] == [str(paths[tid(2)])]
    assert _states(h)[folder.name] == "partly-undone"
    _restore(paths[tid(2)], kept[2])
    third = undo(h, folder.name)
    assert third.state == "undone", third.skips
    assert _states(h)[folder.name] == "undone"
    assert _files(h) == before


def test_flip_lost_mark_after_a_plan_time_partial_then_second_undo(tmp_path):
    h, paths, before, folder = _flipped()
    kept = _edit(paths[tid(1)])
    assert undo(h).state == "partly-undone"
    _drop_mark(folder)
    assert _states(h)[folder.name] == "committed"
    _restore(paths[tid(1)], kept)
    second = undo(h, folder.name)
    assert second.state == "undone", second.skips
    assert _files(h) == before


def test_flip_lost_mark_after_a_full_undo_next_undo_has_nothing_to_do(tmp_path):
    h, paths, before, folder = _flipped()
    assert undo(h).state == "undone"
    _drop_mark(folder)
    assert _states(h)[folder.name] == "committed"
    second = undo(h, folder.name)
    assert second.state == "undone" and not second.skips and not second.done
    assert _files(h) == before
    assert _states(h)[folder.name] == "undone"


def test_flip_lost_marks_of_two_undos_in_a_row(tmp_path):
    h, paths, before, folder = _flipped()
    kept = {i: _edit(paths[tid(i)]) for i in (1, 2)}
    assert undo(h).state == "partly-undone"
    _restore(paths[tid(1)], kept[1])
    assert undo(h, folder.name).state == "partly-undone"
    _drop_mark(folder)                # both undos' marks
    assert _states(h)[folder.name] == "committed"
    _restore(paths[tid(2)], kept[2])
    third = undo(h, folder.name)
    assert third.state == "undone", third.skips
    assert _files(h) == before


def _old_ns(ns: list) -> list:
    """What an older histmig wrote for the same undo: every operation of a reverted unit, whole."""
    return sorted({p if isinstance(p, int) else p[0] for p in ns})


def test_flip_old_format_undo_begin_without_units_lost_mark(tmp_path):
    """An undo by an older histmig whose mark was lost: its begin's ``ns`` (no ``units``) count."""
    h, paths, before, folder = _flipped()
    first = undo(h)
    assert first.state == "undone"
    _drop_mark(folder)
    edit_journal(h.state / "tx" / first.undo_txid,
                 lambda r: dict(r, args={k: v for k, v in r["args"].items() if k != "units"}) if r["kind"] == "begin" else r)
    second = undo(h, folder.name)
    assert second.state == "undone" and not second.done, second.skips
    assert _files(h) == before


def test_flip_old_format_undo_by_ints_only_is_read(tmp_path):
    """An undo-by of an older histmig (ints only, the rows' operation whole): read without error;
    the kept session's file goes back (its row cannot be told apart: the old mark said whole)."""
    h, paths, before, folder = _flipped()
    kept = _edit(paths[tid(1)])
    assert undo(h).state == "partly-undone"
    edit_journal(folder, lambda r: dict(r, ns=_old_ns(r["ns"])) if r["kind"] == "undo-by" else r)
    _restore(paths[tid(1)], kept)
    second = undo(h, folder.name)
    assert second.state == "undone", second.skips
    now = _files(h)
    assert {k: v for k, v in now.items() if ".sqlite" not in k} == {k: v for k, v in before.items() if ".sqlite" not in k}


# -- a project folder moved whole (Claude Code): its rename is one journal operation of every session -
def _claude_moved(tmp_path, n: int = 3):
    h = homes()
    old, new = str(tmp_path / "A"), str(tmp_path / "B")
    os.makedirs(new)
    files = [claude_session(h, old, i) for i in range(1, n + 1)]
    before = _tree(h)
    res = apply_plan(plan_move(h, old, new, tools=["claude-code"]), h)
    assert res.exit_code == 0, res.skips
    return h, old, new, files, before, h.state / "tx" / res.txid


def _tree(h) -> dict:
    return {str(p.relative_to(h.claude)): p.read_bytes() for p in sorted(h.claude.rglob("*")) if p.is_file()}


def _span_edit(path, new: str) -> bytes:
    data = path.read_bytes()
    path.write_bytes(data.replace(new.encode(), new[:-1].encode() + b"C", 1))
    return data


def test_claude_all_sessions_back_in_one_rename_then_lost_mark(tmp_path):
    h, old, new, files, before, folder = _claude_moved(tmp_path)
    first = undo(h)
    assert first.state == "undone", first.skips
    plan_units = first.plan.args["units"]
    assert len(plan_units) == 3 and all(parts for parts, _ in plan_units)
    assert _tree(h) == before
    _drop_mark(folder)
    second = undo(h, folder.name)
    assert second.state == "undone" and not second.done, second.skips
    assert _tree(h) == before


def test_claude_two_kept_then_finished_one_by_one(tmp_path):
    h, old, new, files, before, folder = _claude_moved(tmp_path)
    moved = [h.claude / "projects" / claude_slug(new) / f.name for f in files]
    kept = {i: _span_edit(moved[i], new) for i in (0, 1)}
    assert undo(h).state == "partly-undone"
    moved[0].write_bytes(kept[0])
    assert undo(h, folder.name).state == "partly-undone"
    _drop_mark(folder)
    moved[1].write_bytes(kept[1])
    third = undo(h, folder.name)
    assert third.state == "undone", third.skips
    assert _tree(h) == before
    # left behind, empty (not a coverage matter): the folder the entries went back from one by one
    assert os.listdir(h.claude / "projects" / claude_slug(new)) == []


def _racing_apply(monkeypatch, before_apply):
    import histmig.verbs.undo.run as run
    real = run.apply_plan

    def racing(plan, *a, **kw):
        monkeypatch.setattr(run, "apply_plan", real)
        before_apply()
        return real(plan, *a, **kw)
    monkeypatch.setattr(run, "apply_plan", racing)


@pytest.mark.parametrize("lost", [False, True], ids=["mark", "lost-mark"])
def test_claude_folder_rename_skipped_while_undo_applied_nothing_counted(tmp_path, monkeypatch, lost):
    """The whole-folder rename is skipped by the apply (the folder was copied and put back as a new
    inode between the plan and the apply): no session counts as reverted, also when the mark is lost."""
    import shutil
    h, old, new, files, before, folder = _claude_moved(tmp_path)
    b = h.claude / "projects" / claude_slug(new)

    def copy_back():
        os.rename(b, str(b) + ".x")
        shutil.copytree(str(b) + ".x", b, copy_function=shutil.copy2)
        shutil.rmtree(str(b) + ".x")
    _racing_apply(monkeypatch, copy_back)
    first = undo(h)
    assert first.state == "partly-undone", (first.skips, first.done)
    marks = [r for r in _records(folder) if r["kind"] == "undo-by"]
    assert marks and marks[0]["ns"] == [], marks
    if lost:
        _drop_mark(folder)
    second = undo(h, folder.name)
    assert second.state == "undone", second.skips
    assert _tree(h) == before


def test_claude_new_session_written_between_undo_plan_and_apply_goes_along(tmp_path, monkeypatch):
    """Pre-existing race (not coverage): the whole-folder rename is checked by the folder's inode
    only, so a session a client writes into the folder between the undo's plan and its apply moves
    back with it. Nothing is lost; it is recorded here as found."""
    h, old, new, files, before, folder = _claude_moved(tmp_path)
    fresh = h.claude / "projects" / claude_slug(new) / f"{sid(9)}.jsonl"
    _racing_apply(monkeypatch, lambda: fresh.write_bytes(b'{"type":"user"}\n'))
    assert undo(h).state == "undone"
    assert not fresh.exists()
    assert (h.claude / "projects" / claude_slug(old) / fresh.name).read_bytes() == b'{"type":"user"}\n'


# -- other tools' folder moves ---------------------------------------------------------------------
def _home_tree(root) -> dict:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_qwen_kept_session_is_not_moved_back_with_its_chats_folder(tmp_path):
    """Qwen's project folder holds ``chats/`` (no session of its own): one session kept keeps the
    folder where the move left it, and the folder's other sessions with it (before: ``chats/`` went
    back with the kept session's file in it, its bytes still saying NEW); the second undo finishes."""
    from histmig.tools.qwen.adapter import qwen_slug
    from test_qwen_move import session as qwen_session
    h = homes()
    old, new = str(tmp_path / "a/app"), str(tmp_path / "b/app")
    paths = [qwen_session(h, old, sid(i)) for i in (1, 2)]
    before = _home_tree(h.qwen)
    res = apply_plan(plan_move(h, old, new), h)
    assert res.exit_code == 0, res.skips
    folder = h.state / "tx" / res.txid
    moved = h.qwen / "projects" / qwen_slug(new) / "chats" / paths[0].name
    left = _home_tree(h.qwen)
    kept = moved.read_bytes()
    i = kept.index(new.encode())
    moved.write_bytes(kept[:i] + b"X" + kept[i + 1:])
    first = undo(h)
    assert first.state == "partly-undone", first.skips
    now = {k: v for k, v in _home_tree(h.qwen).items() if "/chats/" in k}
    assert now == {**{k: v for k, v in left.items() if "/chats/" in k}, str(moved.relative_to(h.qwen)): moved.read_bytes()}
    assert "session-skipped" in {s.code for s in first.skips}             # the other session waits with it
    moved.write_bytes(kept)
    second = undo(h, folder.name)
    assert second.state == "undone", second.skips
    assert _home_tree(h.qwen) == before


def test_codex_move_threads_rows_of_a_kept_session_come_back_with_the_second_undo(tmp_path):
    import sqlite3
    h = homes()
    old, new = str(tmp_path / "proj"), str(tmp_path / "proj2")
    os.makedirs(new)
    sessions = {tid(i): rollout(tid(i), cwd=old) for i in (1, 2, 3)}
    paths = home_with(h.codex, sessions)
    con = sqlite3.connect(h.codex / "state_5.sqlite")
    con.execute("UPDATE threads SET cwd=?", (old,))
    con.commit()
    con.close()
    before = _files(h)
    res = apply_plan(plan_move(h, old, new, tools=["codex"]), h)
    assert res.exit_code == 0, res.skips
    kept = _edit(paths[tid(2)])
    first = undo(h)
    assert first.state == "partly-undone", first.skips
    _restore(paths[tid(2)], kept)
    _drop_mark(h.state / "tx" / res.txid)              # and the mark of the first undo lost, too
    second = undo(h, res.txid)
    assert second.state == "undone", second.skips
    assert _files(h) == before


def _converted_three(tmp_path):
    import uuid
    from histmig import tools as registry
    from histmig.verbs.convert import ConvertOptions
    from histmig.verbs.convert.batches import plan_convert
    from convert_fixtures import make_state_db, write_claude
    h = homes()
    for d in (h.codex, h.claude):
        d.mkdir(parents=True, exist_ok=True)
    make_state_db(h.codex)
    proj = str(tmp_path / "work")
    os.makedirs(proj)
    for i in range(3):
        write_claude(h.claude, proj, sid=str(uuid.UUID(int=0xABC00 + i, version=4)))
    refs = list(registry.adapter("claude-code").discover(h))
    plan, _ = plan_convert(h, refs, ConvertOptions("codex", seed=7))
    res = apply_plan(plan, h)
    assert res.exit_code == 0, res.skips
    folder = h.state / "tx" / res.txid
    created = [r for r in _records(folder) if r["kind"] == "intent" and r["method"] == "create"]
    return h, folder, created


def _threads(h) -> set:
    import sqlite3
    con = sqlite3.connect(h.codex / "state_5.sqlite")
    try:
        return {r[0] for r in con.execute("SELECT id FROM threads")}
    finally:
        con.close()


def _continue(path) -> None:
    with open(path, "ab") as fh:
        fh.write(b'{"timestamp":"2026-03-20T19:07:00.000Z","type":"event_msg","payload":{"type":"x"}}\n')


def test_convert_all_one_continued_is_kept_then_forced_second_undo_finishes_it(tmp_path):
    h, folder, created = _converted_three(tmp_path)
    cont = next(r for r in created if not r["dirs"])           # not the one that made the day folder
    _continue(cont["path"])
    first = undo(h)
    assert first.state == "partly-undone" and [s.code for s in first.skips] == ["kept-continued"], first.skips
    assert _threads(h) == {cont["session"]["id"]}
    assert [os.path.exists(r["path"]) for r in created] == [r is cont for r in created]
    assert _states(h)[folder.name] == "partly-undone"
    second = undo(h, folder.name, force=True)
    assert second.state == "undone", second.skips
    assert _threads(h) == set() and not any(os.path.exists(r["path"]) for r in created)
    assert _states(h)[folder.name] == "undone"


def test_convert_lost_mark_after_kept_continued(tmp_path):
    h, folder, created = _converted_three(tmp_path)
    cont = next(r for r in created if not r["dirs"])
    _continue(cont["path"])
    assert undo(h).state == "partly-undone"
    _drop_mark(folder)
    second = undo(h, folder.name, force=True)
    assert second.state == "undone", second.skips
    assert _threads(h) == set() and not any(os.path.exists(r["path"]) for r in created)
    assert len(second.trash) == 1
def test_pi_shared_folder_partial_then_second_undo(tmp_path):
    from histmig.tools.pi.layout import pi_slug
    from test_pi_move import session as pi_session
    h = homes()
    old, new = tmp_path / "w" / "app", tmp_path / "w" / "app2"
    old.mkdir(parents=True)
    root = h.pi / "sessions"
    ps = [pi_session(root / pi_slug(str(old)), f"01a23021-3b5d-75d7-80fe-e7c8b9a6a0f{i}", str(old)) for i in (1, 2)]
    before = _home_tree(h.pi)
    res = apply_plan(plan_move(h, str(old), str(new)), h)
    assert res.exit_code == 0, res.skips
    moved = root / pi_slug(str(new)) / ps[0].name
    kept = moved.read_bytes()
    moved.write_bytes(kept.replace(str(new).encode(), str(new)[:-1].encode() + b"Z", 1))
    first = undo(h)
    assert first.state == "partly-undone", first.skips
    assert (root / pi_slug(str(old)) / ps[1].name).read_bytes() == before[str(ps[1].relative_to(h.pi))]
    moved.write_bytes(kept)
    second = undo(h, res.txid)
    assert second.state == "undone", second.skips
    assert _home_tree(h.pi) == before


def test_log_states_through_three_undos(tmp_path):
    from clirun import histmig
    h, paths, before, folder = _flipped()
    kept = {i: _edit(paths[tid(i)]) for i in (1, 2)}
    undo(h)
    assert "partly-undone" in histmig("log").stdout
    _restore(paths[tid(1)], kept[1])
    undo(h, folder.name)
    _restore(paths[tid(2)], kept[2])
    undo(h, folder.name)
    out = histmig("log").stdout
    line = next(x for x in out.splitlines() if folder.name in x)
    assert "undone" in line and "partly" not in line, out
    assert histmig("undo", folder.name).exit_code != 0         # already undone: refused


# -- crash points of the second undo, after a first that kept a session -------------------------------
@pytest.mark.slow
def test_second_undo_crashed_anywhere_then_recovered_and_finished(tmp_path):
    from histmig.apply import check_no_unfinished, fsio, recover
    from histmig.apply.journal import JOURNAL
    from test_crash_undo import _crash_at, _cut_journals

    def setup():
        import shutil
        for d in (h.codex, h.state):
            shutil.rmtree(d, ignore_errors=True)
        paths = home_with(h.codex, {tid(i): rollout(tid(i), turns=2) for i in (1, 2, 3)})
        before = _files(h)
        txid = apply_plan(plan_flip(h, "openai", "my-provider"), h).txid
        kept = _edit(paths[tid(1)])
        assert undo(h).state == "partly-undone"
        _restore(paths[tid(1)], kept)
        return before, txid, _files(h)
    h = homes()
    setup()
    with fsio.using(fsio.FS(skip_fsync=True)) as spy:
        assert undo(h).state == "undone"
    n_ops = spy.count
    assert n_ops > 5
    for k in range(1, n_ops + 1):
        before, txid, mid = setup()
        size = (h.state / "tx" / txid / JOURNAL).stat().st_size
        note = str(tmp_path / f"synced-{k}")
        assert _crash_at(k, note) == 9, k
        if not any(str(h.state / "tx" / txid) in line for line in open(note).read().splitlines()):
            with open(h.state / "tx" / txid / JOURNAL, "r+b") as fh:
                fh.truncate(size)
        _cut_journals(note)
        with fsio.using(fsio.FS(skip_fsync=True)):
            recover(h)
            check_no_unfinished(h)
        assert _files(h) in (before, mid), k
        if _states(h)[txid] != "undone":
            out = undo(h, txid)
            assert out.state == "undone", (k, out.skips)
        assert _files(h) == before, k
        assert _states(h)[txid] == "undone", k
