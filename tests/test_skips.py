"""Issue 12 case 6, "Skip, don't refuse": a file that grew or is open for writing is skipped and named
(exit 3) while the rest of the plan applies; a Claude project folder with a live session waits whole;
a slug collision skips only the shared folder and names the command that finishes it."""
from __future__ import annotations

import os
import shlex
import sqlite3
from pathlib import Path

import orjson
import pytest

from histmig.apply import apply_plan
from histmig.tools import resolve_homes
from histmig.verbs.move import plan_move
from histmig.core.paths import claude_slug

from clirun import histmig
from codex_fixtures import home_with, rollout, tid
from test_move_fixtures import claude_session, jl, claude_records, sid, structured_leftovers

PROVIDERS = '[model_providers.my-provider]\nname = "m"\nbase_url = "http://127.0.0.1:9/v1"\n'


def h():
    return resolve_homes()


def flip_home(home, n: int = 3) -> dict[str, Path]:
    paths = home_with(home.codex, {tid(i): rollout(tid(i)) for i in range(1, n + 1)})
    (home.codex / "config.toml").write_text(PROVIDERS)
    return paths


def providers(path: Path) -> set[str]:
    head = orjson.loads(path.read_bytes().splitlines()[0])
    return {head["payload"]["model_provider"]}


def row(home, thread: str) -> str:
    con = sqlite3.connect(home.codex / "state_5.sqlite")
    try:
        return con.execute("SELECT model_provider FROM threads WHERE id=?", (thread,)).fetchone()[0]
    finally:
        con.close()


def append_turn(path: Path) -> bytes:
    extra = orjson.dumps({"timestamp": "2026-11-30T10:00:00.000Z", "type": "event_msg",
                          "payload": {"type": "agent_message", "message": "still working"}}) + b"\n"
    with open(path, "ab") as fh:
        fh.write(extra)
    return extra


def skips_of(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("skip: ")]


# -- flip: files that grew, files open for writing, rows that changed -----------------------------

def test_case6_grown_rollout_is_skipped_while_the_others_flip(monkeypatch):
    """A live Codex turn appends to one rollout while `flip --apply` plans: that rollout (and its
    rows) is skipped and named, every other session is flipped, exit 3 — no whole-plan refusal."""
    home = h()
    paths = flip_home(home)
    import histmig.verbs.flip as flip
    real = flip.plan_flip

    def plan_then_append(*a, **kw):
        plan = real(*a, **kw)
        append_turn(paths[tid(2)])          # the turn lands between planning and applying
        return plan
    monkeypatch.setattr(flip, "plan_flip", plan_then_append)
    grown = None
    res = histmig("flip", "openai", "my-provider", "--apply")
    grown = paths[tid(2)].read_bytes()
    assert res.exit_code == 3, res.stderr
    [line] = [s for s in skips_of(res.stderr) if s.startswith(f"skip: {paths[tid(2)]}:")]
    assert "grew since plan" in line and "nothing was changed" not in res.stderr
    assert providers(paths[tid(1)]) == providers(paths[tid(3)]) == {"my-provider"}
    assert providers(paths[tid(2)]) == {"openai"} and grown.endswith(b"still working\"}}\n")
    assert (row(home, tid(1)), row(home, tid(2)), row(home, tid(3))) == ("my-provider", "openai", "my-provider")
    assert "transaction" in res.stdout


def test_case6_a_second_flip_after_the_skip_finishes_the_grown_session():
    home = h()
    paths = flip_home(home)
    plan_file = home.home / "flip.json"
    assert histmig("flip", "openai", "my-provider", "--plan-out", plan_file).exit_code == 0
    append_turn(paths[tid(1)])
    res = histmig("apply", plan_file)
    assert res.exit_code == 3 and len(skips_of(res.stderr)) >= 1
    again = histmig("flip", "openai", "my-provider", "--apply")
    assert again.exit_code == 0, again.stderr
    assert all(providers(p) == {"my-provider"} for p in paths.values())
    assert b"still working" in paths[tid(1)].read_bytes()
    assert row(home, tid(1)) == "my-provider"


def test_case6_open_for_writing_rollout_is_skipped_with_the_writer_named_not_allow_appended():
    """The file grew *and* a process holds it open: the reason is the writer (quit it), not a
    suggestion to apply to a live file with --allow-appended."""
    home = h()
    paths = flip_home(home)
    plan_file = home.home / "flip.json"
    assert histmig("flip", "openai", "my-provider", "--plan-out", plan_file).exit_code == 0
    fd = os.open(paths[tid(3)], os.O_WRONLY | os.O_APPEND)
    try:
        os.write(fd, b'{"timestamp":"2026-11-30T10:00:00.000Z","type":"event_msg","payload":{}}\n')
        res = histmig("apply", plan_file, "--allow-appended")
    finally:
        os.close(fd)
    assert res.exit_code == 3
    [line] = [s for s in skips_of(res.stderr) if s.startswith(f"skip: {paths[tid(3)]}:")]
    assert f"open for writing by pid {os.getpid()}" in line and "--allow-appended" not in line
    assert providers(paths[tid(1)]) == {"my-provider"} and providers(paths[tid(3)]) == {"openai"}
    assert row(home, tid(3)) == "openai"


def test_case6_allow_appended_still_applies_a_grown_file_with_its_tail_flipped():
    home = h()
    paths = flip_home(home, 2)
    plan_file = home.home / "flip.json"
    assert histmig("flip", "openai", "my-provider", "--plan-out", plan_file).exit_code == 0
    extra = orjson.dumps({"timestamp": "2026-11-30T10:00:00.000Z", "type": "session_meta",
                          "payload": {"id": tid(1), "model_provider": "openai"}}) + b"\n"
    with open(paths[tid(1)], "ab") as fh:
        fh.write(extra)
    res = histmig("apply", plan_file, "--allow-appended")
    assert res.exit_code == 0, res.stderr
    last = orjson.loads(paths[tid(1)].read_bytes().splitlines()[-1])
    assert last["payload"]["model_provider"] == "my-provider"      # the appended line got the edit
    assert row(home, tid(1)) == "my-provider"


def test_case6_changed_row_skips_its_session_rows_and_file_only():
    home = h()
    paths = flip_home(home)
    plan_file = home.home / "flip.json"
    assert histmig("flip", "openai", "my-provider", "--plan-out", plan_file).exit_code == 0
    con = sqlite3.connect(home.codex / "state_5.sqlite")
    con.execute("UPDATE threads SET model_provider='elsewhere' WHERE id=?", (tid(2),))
    con.commit()
    con.close()
    before = paths[tid(2)].read_bytes()
    res = histmig("apply", plan_file, "--json")
    out = orjson.loads(res.stdout)["result"]
    assert res.exit_code == 3 and out["exit_code"] == 3
    codes = {s["path"]: s["code"] for s in out["skips"]}
    assert "row-changed" in codes.values() and codes[str(paths[tid(2)])] == "session-skipped"
    assert paths[tid(2)].read_bytes() == before and row(home, tid(2)) == "elsewhere"
    assert (row(home, tid(1)), row(home, tid(3))) == ("my-provider", "my-provider")


# -- move: a folder with a live Claude session waits whole ----------------------------------------

def register_live(home, session: str, cwd: str) -> Path:
    (home.claude / "sessions").mkdir(exist_ok=True)
    entry = home.claude / "sessions" / f"{os.getpid()}.json"
    entry.write_bytes(orjson.dumps({"pid": os.getpid(), "sessionId": session, "cwd": cwd}))
    return entry


def test_case6_live_claude_session_folder_waits_whole_and_the_rest_moves(tmp_path):
    home = h()
    old, new = str(tmp_path / "w/app"), str(tmp_path / "work/app")     # new path is longer: files get new inodes
    live = claude_session(home, old, 1)
    other = claude_session(home, old, 2)
    sub = claude_session(home, old + "/pkg", 3)                          # another folder, no live session
    codex = home_with(home.codex, {tid(1): rollout(tid(1), cwd=old)})[tid(1)]
    entry = register_live(home, sid(1), old)
    before = {p: p.read_bytes() for p in (live, other)}
    res = histmig("move", old, new, "--apply")
    assert res.exit_code == 3, res.stderr
    [line] = skips_of(res.stderr)
    assert str(live.parent) in line and f"live Claude Code session {sid(1)}" in line
    assert f"re-run: histmig move {old} {new} --apply" in line
    assert {p: p.read_bytes() for p in (live, other)} == before            # not one byte of the folder changed
    assert sorted(x.name for x in live.parent.iterdir()) == sorted([live.name, other.name])
    assert not sub.exists() and (home.claude / "projects" / claude_slug(new + "/pkg") / sub.name).is_file()
    assert old not in codex.read_text().split('"cwd":"', 1)[1][:len(old) + 2]
    # the session ends: the same command finishes the folder
    entry.unlink()
    again = histmig("move", old, new, "--apply")
    assert again.exit_code == 0, again.stderr
    target = home.claude / "projects" / claude_slug(new)
    assert sorted(x.name for x in target.iterdir()) == sorted([live.name, other.name])
    assert not live.parent.exists() and structured_leftovers(home.claude, old) == []


@pytest.mark.parametrize("started", ["resumed", "new-in-old"])
def test_case6_session_that_turns_live_between_plan_and_apply_keeps_its_folder_whole(tmp_path, started):
    home = h()
    old, new = str(tmp_path / "w/app"), str(tmp_path / "work/app")
    live = claude_session(home, old, 1)
    other = claude_session(home, old, 2)
    elsewhere = claude_session(home, old + "/pkg", 3)
    plan = plan_move(home, old, new)
    assert not plan.skips
    register_live(home, sid(1) if started == "resumed" else sid(9), old)
    before = {p: p.read_bytes() for p in (live, other)}
    res = apply_plan(plan, home)
    assert res.exit_code == 3
    assert {p: p.read_bytes() for p in (live, other)} == before and live.parent.is_dir()
    assert {s.code for s in res.skips} <= {"live-session", "live-folder", "session-skipped"}
    assert {s.path for s in res.skips} >= {str(live), str(other), str(live.parent)}
    assert not elsewhere.exists()


def test_case6_merge_renames_a_session_it_rewrote_itself(tmp_path):
    """The cause of "changed during apply — histmig changed it itself": a merge rewrites a session
    (new inode when the length changes) and then renames it; the rename must accept that inode."""
    home = h()
    old, new = str(tmp_path / "w/app"), str(tmp_path / "work/app")
    s1 = claude_session(home, old, 1)
    claude_session(home, new, 5)                       # Claude was already started in NEW: merge
    res = histmig("move", old, new, "--apply")
    assert res.exit_code == 0, res.stderr
    moved = home.claude / "projects" / claude_slug(new) / s1.name
    assert moved.is_file() and not s1.parent.exists()
    assert {r.get("cwd") for r in map(orjson.loads, moved.read_bytes().splitlines())} - {None} == {new}


def test_case6_rerun_finishes_a_half_moved_folder_instead_of_calling_it_shared(tmp_path):
    """The state the old bug left: one session re-pointed to NEW but still in OLD's folder. The
    move now counts it as OLD's and finishes, where it used to refuse as a slug collision."""
    home = h()
    old, new = str(tmp_path / "w/app"), str(tmp_path / "work/app")
    claude_session(home, old, 1)
    half = home.claude / "projects" / claude_slug(old) / f"{sid(2)}.jsonl"
    half.write_bytes(jl(claude_records(sid(2), new)))
    res = histmig("move", old, new, "--apply")
    assert res.exit_code == 0, res.stderr
    target = home.claude / "projects" / claude_slug(new)
    assert sorted(p.name for p in target.iterdir()) == sorted([f"{sid(1)}.jsonl", half.name])


# -- move: a slug collision skips only that folder ------------------------------------------------

def test_case6_slug_collision_skips_only_the_colliding_folder_and_prints_the_command(tmp_path):
    home = h()
    w = tmp_path / "w"
    old, new = str(w / "app"), str(w / "apps/app")
    assert claude_slug(old + "/sub") == claude_slug(str(w / "app-sub"))
    main = claude_session(home, old, 1)
    ours = claude_session(home, old + "/sub", 2)
    theirs = claude_session(home, str(w / "app-sub"), 3)
    codex = home_with(home.codex, {tid(1): rollout(tid(1), cwd=old)})[tid(1)]
    shared = ours.parent
    theirs_before = theirs.read_bytes()
    res = histmig("move", old, new, "--apply")
    assert res.exit_code == 3, res.stderr
    [line] = skips_of(res.stderr)
    assert line.startswith(f"skip: {shared}: holds sessions of {old}/sub and of {w}/app-sub")
    assert "--split-shared --apply" in line
    # everything else moved: the other Claude folder and Codex
    assert (home.claude / "projects" / claude_slug(new) / main.name).is_file() and not main.exists()
    assert f'"cwd":"{new}"'.encode() in codex.read_bytes()
    assert ours.is_file() and theirs.read_bytes() == theirs_before
    # the printed command finishes it: only OLD's sessions leave the shared folder
    words = shlex.split(line.split("run: ", 1)[1])
    assert words[:2] == ["histmig", "move"]
    done = histmig(*words[1:])
    assert done.exit_code == 0, done.stderr
    moved = home.claude / "projects" / claude_slug(new + "/sub") / ours.name
    assert moved.is_file() and not ours.exists()
    assert {r.get("cwd") for r in map(orjson.loads, moved.read_bytes().splitlines())} - {None} == {new + "/sub"}
    assert theirs.read_bytes() == theirs_before and sorted(p.name for p in shared.iterdir()) == [theirs.name]
    txid = done.stdout.split("undo with: histmig undo ", 1)[1].split()[0]
    assert histmig("undo", txid).exit_code == 0 and ours.is_file() and not moved.exists()


def test_case6_split_shared_leaves_memory_and_unknown_entries_in_the_shared_folder(tmp_path):
    home = h()
    w = tmp_path / "w"
    old, new = str(w / "app"), str(w / "apps/app")
    ours = claude_session(home, old + "/sub", 2)
    theirs = claude_session(home, str(w / "app-sub"), 3)
    (ours.parent / "memory").mkdir()
    (ours.parent / "memory" / "MEMORY.md").write_text("whose?")
    plan = plan_move(home, old, new, split_shared=True)
    assert not plan.skips and plan.args["split_shared"] is True
    assert any(w_.code == "folder-split" for w_ in plan.warnings)
    assert all(str(theirs) not in p and "memory" not in p for op in plan.operations for p in op.paths())
    assert apply_plan(plan, home).exit_code == 0
    assert sorted(p.name for p in ours.parent.iterdir()) == sorted(["memory", theirs.name])


def test_case6_live_session_without_a_transcript_yet_still_holds_its_folder(tmp_path):
    """Claude creates the transcript at the first message, in the folder of its cwd: a live
    session registered in OLD keeps OLD's folder waiting even before its file exists."""
    home = h()
    old, new = str(tmp_path / "w/app"), str(tmp_path / "work/app")
    s1 = claude_session(home, old, 1)
    register_live(home, sid(9), old)
    plan = plan_move(home, old, new)
    assert [(s.path, s.code) for s in plan.skips] == [(str(s1.parent), "live-folder")]
    assert f"runs in {old}" in plan.skips[0].reason
    register_live(home, sid(9), new)            # the session now runs in NEW: nothing waits
    assert not plan_move(home, old, new).skips


def test_case6_claude_json_entry_of_a_live_folder_waits_with_it(tmp_path):
    """The live session rewrites its ``~/.claude.json`` entry under the old key when it exits:
    re-keying it now would leave two entries that disagree, and the re-run would refuse."""
    import json
    home = h()
    old, new = str(tmp_path / "w/app"), str(tmp_path / "work/app")
    claude_session(home, old, 1)
    claude_session(home, old + "/pkg", 2)
    home.claude_json.write_text(json.dumps({"projects": {old: {"hasTrustDialogAccepted": True},
                                                         old + "/pkg": {"hasTrustDialogAccepted": True}}}))
    entry = register_live(home, sid(1), old)
    assert histmig("move", old, new, "--apply").exit_code == 3
    assert list(json.loads(home.claude_json.read_text())["projects"]) == [old, new + "/pkg"]
    # the session exits and writes its entry again, as Claude Code does
    home.claude_json.write_text(json.dumps({"projects": {old: {"hasTrustDialogAccepted": True,
                                                               "lastGracefulShutdown": True},
                                                         new + "/pkg": {"hasTrustDialogAccepted": True}}}))
    entry.unlink()
    again = histmig("move", old, new, "--apply")
    assert again.exit_code == 0, again.stderr
    assert list(json.loads(home.claude_json.read_text())["projects"]) == [new, new + "/pkg"]


def test_case6_prompt_history_of_a_live_folder_waits_with_it(tmp_path):
    """``history.jsonl`` lines of a project whose folder waits keep their ``project`` until the re-run
    (the live session adds prompts under the old path meanwhile); the other projects' lines move."""
    import json
    home = h()
    old, new = str(tmp_path / "w/app"), str(tmp_path / "work/app")
    claude_session(home, old, 1)
    claude_session(home, old + "/pkg", 2)
    hist = home.claude / "history.jsonl"
    lines = [{"display": "a", "project": old}, {"display": "b", "project": old + "/pkg"}]
    hist.write_text("".join(json.dumps(x) + "\n" for x in lines))
    entry = register_live(home, sid(1), old)
    assert histmig("move", old, new, "--apply").exit_code == 3
    assert [json.loads(x)["project"] for x in hist.read_text().splitlines()] == [old, new + "/pkg"]
    with hist.open("a") as fh:                  # the live session's next prompt, under the old path
        fh.write(json.dumps({"display": "c", "project": old}) + "\n")
    entry.unlink()
    again = histmig("move", old, new, "--apply")
    assert again.exit_code == 0, again.stderr
    assert [json.loads(x)["project"] for x in hist.read_text().splitlines()] == [new, new + "/pkg", new]


def test_case6_manifest_sessions_in_a_live_folder_wait_with_it(tmp_path):
    from test_move_fixtures import manifest_session
    home = h()
    old, new = str(tmp_path / "w/app"), str(tmp_path / "work/app")
    s1 = claude_session(home, old, 1)
    meta = manifest_session(home, old, 1)
    register_live(home, sid(1), old)
    plan = plan_move(home, old, new)
    assert [s.code for s in plan.skips] == ["live-folder"]
    assert not any(str(s1.parent) in p for op in plan.operations for p in op.paths())
    assert str(meta) not in [p for op in plan.operations for p in op.paths()]
