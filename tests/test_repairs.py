"""Issue 12, case 8 "Repairs that don't last": doctor's repairs survive a Codex database rebuild,
moves are complete (a moved tool home), symlinked project paths resolve to what the clients record,
and doctor sees a Claude session filed under the wrong folder or a project split in two."""
from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path

import orjson
import pytest

from codex_fixtures import home_with, naive_flip, rollout, rollout_path, state_db, tid, turn_offsets, write_rollout
from histmig.apply import apply_plan
from histmig.verbs.undo.run import undo
from histmig.cli import cli
from histmig.cli.common import run_guarded
from histmig.tools.codex.adapter import scan_thread
from histmig.tools import resolve_homes
from histmig.verbs.doctor import diagnose, plan_repair
from histmig.verbs.move import plan_move
from histmig.core.paths import claude_slug
from histmig.core.plan import WriteFile
from test_apply_fixtures import snapshot
from test_doctor_claude import SID, SID2, put, transcript
from test_doctor_codex import rows
from test_move_fixtures import claude_session, structured_leftovers



def codes(homes, tools=("codex",)) -> list[str]:
    """Doctor's codes, minus the clock's (the fixtures' transcripts are old)."""
    return sorted(f.code for f in diagnose(homes, tools=tools, ignore=["claude.cleanup-soon"]).findings)


def recorded_providers(data: bytes, thread: str) -> list[str]:
    """Every provider value a Codex re-extraction reads: same-id session_meta, thread_settings_applied."""
    out = []
    for raw in data.splitlines():
        obj = orjson.loads(raw)
        p = obj.get("payload", {})
        if obj.get("type") == "session_meta" and p.get("id") == thread:
            out.append(p.get("model_provider"))
        if p.get("type") == "thread_settings_applied":
            out.append(p["thread_settings"]["model_provider_id"])
    return out


# ---- 1. doctor --repair fixes every provider value a rebuild reads ----------------------------

def config(codex: Path, provider: str) -> None:
    (codex / "config.toml").write_text(f'model_provider = "{provider}"\n[model_providers.{provider}]\n'
                                       'name = "x"\nbase_url = "http://127.0.0.1:9/v1"\nwire_api = "responses"\n')


def _cwd_rows(codex: Path, proj: str) -> None:
    con = sqlite3.connect(codex / "state_5.sqlite")
    con.execute("UPDATE threads SET cwd=?", (proj,))
    con.commit()
    con.close()


def test_case8_doctor_repair_of_naive_flip_survives_a_database_rebuild(codex_world):
    homes, codex, proj = codex_world
    (codex / "config.toml").write_text('model_provider = "openai"\n')
    home_with(codex, {tid(1): rollout(tid(1), "openai", cwd=proj)})
    _cwd_rows(codex, proj)
    config(codex, "my-provider")
    assert naive_flip(codex, "openai", "my-provider") == 1
    path = rollout_path(codex, tid(1))
    assert recorded_providers(path.read_bytes(), tid(1)) == ["my-provider", "openai"]   # the bug

    report = diagnose(homes, tools=["codex"])
    assert "codex.rollout-provider-split" in report.counts()
    apply_plan(plan_repair(homes, report), homes)
    assert codes(homes) == []
    data = path.read_bytes()
    # offsets agree with the edited file
    want = [(t, sb, eb) for t, _, sb, _, eb in turn_offsets(data)]
    assert rows(codex / "thread_history_1.sqlite", "SELECT turn_id, rollout_byte_offset, rollout_end_byte_offset "
                "FROM thread_turns ORDER BY turn_id") == want

    # Codex rebuilds its database from the files: every value it reads is the new provider
    (codex / "state_5.sqlite").unlink()
    (codex / "thread_history_1.sqlite").unlink()
    assert set(recorded_providers(data, tid(1))) == {"my-provider"}
    facts, _ = scan_thread(path)
    assert facts.row_provider == "my-provider" and facts.providers == {"my-provider"}
    assert codes(homes) == []


def test_case8_split_alone_repair_carries_the_offset_rows_it_moves(codex_world):
    """Line 1 and the database already say my-provider (a hand-made line-1 edit of equal length);
    only thread_settings_applied is stale. The repair edits it and shifts the offsets with it."""
    homes, codex, proj = codex_world
    config(codex, "my-provider")
    data = rollout(tid(1), "my-provider", cwd=proj, settings_provider="openai")
    home_with(codex, {tid(1): data}, provider_rows={tid(1): "my-provider"})
    _cwd_rows(codex, proj)
    [f] = diagnose(homes, tools=["codex"]).findings
    assert f.code == "codex.rollout-provider-split" and f.data["stale"] == ["openai"]
    assert isinstance(f.repair[0], WriteFile) and len(f.repair) > 1     # the file + its offset rows
    apply_plan(plan_repair(homes, diagnose(homes, tools=["codex"])), homes)
    path = rollout_path(codex, tid(1))
    after = path.read_bytes()
    assert set(recorded_providers(after, tid(1))) == {"my-provider"}
    assert len(after) == len(data) + len("my-provider") - len("openai")
    want = [(t, sb, eb) for t, _, sb, _, eb in turn_offsets(after)]
    assert rows(codex / "thread_history_1.sqlite", "SELECT turn_id, rollout_byte_offset, rollout_end_byte_offset "
                "FROM thread_turns ORDER BY turn_id") == want
    assert codes(homes) == []
    undo(homes)
    assert path.read_bytes() == data


def test_case8_shorter_provider_is_padded_in_place(codex_world):
    homes, codex, proj = codex_world
    config(codex, "oa")
    data = rollout(tid(1), "oa", cwd=proj, settings_provider="openai")
    home_with(codex, {tid(1): data}, provider_rows={tid(1): "oa"})
    _cwd_rows(codex, proj)
    [f] = diagnose(homes, tools=["codex"]).findings
    assert [type(o) for o in f.repair] == [WriteFile] and f.repair[0].in_place_ok
    apply_plan(plan_repair(homes, diagnose(homes, tools=["codex"])), homes)
    after = rollout_path(codex, tid(1)).read_bytes()
    assert len(after) == len(data) and set(recorded_providers(after, tid(1))) == {"oa"}
    assert codes(homes) == []


def test_case8_stale_first_line_points_at_flip_instead(codex_world):
    homes, codex, proj = codex_world
    config(codex, "my-provider")
    data = rollout(tid(1), "openai", cwd=proj, settings_provider="my-provider")
    home_with(codex, {tid(1): data}, provider_rows={tid(1): "my-provider"})
    _cwd_rows(codex, proj)
    [f] = [f for f in diagnose(homes, tools=["codex"]).findings if f.code == "codex.rollout-provider-split"]
    assert not f.repair and f.fix == "histmig flip openai my-provider --apply"


def test_case8_ignoring_the_split_plans_no_offsets_against_it(codex_world):
    homes, codex, proj = codex_world
    config(codex, "my-provider")
    home_with(codex, {tid(1): rollout(tid(1), "my-provider", cwd=proj, settings_provider="openai")},
              provider_rows={tid(1): "my-provider"})
    _cwd_rows(codex, proj)
    assert diagnose(homes, tools=["codex"], ignore=["codex.rollout-provider-split"]).findings == []


def test_case8_cli_repair_then_rebuild(codex_world, capsys):
    homes, codex, proj = codex_world
    (codex / "config.toml").write_text('model_provider = "openai"\n')
    home_with(codex, {tid(1): rollout(tid(1), "openai", cwd=proj)})
    _cwd_rows(codex, proj)
    config(codex, "my-provider")
    naive_flip(codex, "openai", "my-provider")
    assert run_guarded(cli, ["doctor", "--tool", "codex"]) == 1
    assert "codex.rollout-provider-split" in capsys.readouterr().out
    assert run_guarded(cli, ["doctor", "--tool", "codex", "--repair", "--apply"]) == 0
    assert "after repair: healthy" in capsys.readouterr().out
    (codex / "state_5.sqlite").unlink()
    assert set(recorded_providers(rollout_path(codex, tid(1)).read_bytes(), tid(1))) == {"my-provider"}


# ---- 2. a move of a folder holding a tool home re-points the stored rollout paths -------------

def test_case8_move_of_a_copied_home_repoints_rollout_path(isolated_homes, monkeypatch, capsys):

    base = Path(isolated_homes["HOME"])
    alice, bob = base / "alice", base / "bob"
    app = alice / "code" / "app"
    app.mkdir(parents=True)
    monkeypatch.setenv("CODEX_HOME", str(alice / ".codex"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(alice / ".claude"))
    h = resolve_homes()
    path = write_rollout(h.codex, tid(1), rollout(tid(1), "openai", cwd=str(app)))
    state_db(h.codex / "state_5.sqlite", [{"id": tid(1), "rollout_path": str(path), "cwd": str(app),
                                           "model_provider": "openai"}])
    con = sqlite3.connect(h.codex / "state_5.sqlite")
    con.executescript("CREATE TABLE project_roots (project_id TEXT NOT NULL, position INTEGER NOT NULL, "
                      "path TEXT NOT NULL, PRIMARY KEY (project_id, position));")
    con.execute("INSERT INTO project_roots VALUES ('p1', 0, ?)", (str(app),))
    con.commit()
    con.close()
    claude_session(h, str(app), 1)
    shutil.copytree(alice, bob, symlinks=True)          # the copied home
    monkeypatch.setenv("CODEX_HOME", str(bob / ".codex"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(bob / ".claude"))
    alice_db = (alice / ".codex" / "state_5.sqlite").read_bytes()

    assert run_guarded(cli, ["move", str(alice), str(bob), "--apply"]) == 0
    db = bob / ".codex" / "state_5.sqlite"
    new_path = str(bob / ".codex" / path.relative_to(alice / ".codex"))
    assert rows(db, "SELECT rollout_path, cwd FROM threads") == [(new_path, str(bob / "code" / "app"))]
    assert rows(db, "SELECT path FROM project_roots") == [(str(bob / "code" / "app"),)]
    assert (bob / ".claude" / "projects" / claude_slug(str(bob / "code" / "app"))).is_dir()
    assert (alice / ".codex" / "state_5.sqlite").read_bytes() == alice_db      # the original is untouched
    assert structured_leftovers(bob / ".claude", str(alice)) == []
    assert structured_leftovers(bob / ".codex", str(alice)) == []
    capsys.readouterr()
    assert codes(resolve_homes(), tools=("codex", "claude")) == []
    assert run_guarded(cli, ["undo"]) == 0
    assert rows(db, "SELECT rollout_path FROM threads") == [(str(path),)]


# ---- 3. a symlinked project path resolves to what the clients record ---------------------------

@pytest.fixture
def linked(isolated_homes):
    """A project at real/proj opened through the link w/link; Claude recorded the realpath."""
    base = Path(isolated_homes["HOME"])
    real = base / "real" / "proj"
    real.mkdir(parents=True)
    (base / "w").mkdir()
    link = base / "w" / "link"
    link.symlink_to(real)
    h = resolve_homes()
    claude_session(h, str(real), 1)
    return h, base, real, link


def claude_folders(h) -> list[str]:
    return sorted(p.name for p in (h.claude / "projects").iterdir())


def test_case8_move_link_to_new_name_before_mv_is_refused_naming_both_commands(linked, capsys):
    h, base, real, link = linked
    assert run_guarded(cli, ["move", str(link), str(base / "w" / "newlink"), "--apply"]) == 1
    err = capsys.readouterr().err
    assert f"histmig move {real} {base / 'w' / 'newlink'}" in err and "no move is needed" in err
    assert claude_folders(h) == [claude_slug(str(real))]


def test_case8_move_link_after_renaming_it_moves_nothing_and_says_which_path(linked, capsys):
    h, base, real, link = linked
    newlink = base / "w" / "newlink"
    link.rename(newlink)                           # mv LINK NEWLINK: the target, what Claude records, stays
    assert run_guarded(cli, ["move", str(link), str(newlink)]) == 0
    out = capsys.readouterr().out
    assert f"using {real} for {newlink}" in out and "nothing to do" in out
    assert claude_folders(h) == [claude_slug(str(real))]


def test_case8_new_link_resolves_to_its_target(linked, capsys):
    """The real folder moved (real/proj -> real/proj2) and the link was re-made as w/link2: history
    goes to the folder of real/proj2, the one Claude reads when started in w/link2."""
    h, base, real, link = linked
    real2 = real.parent / "proj2"
    real.rename(real2)
    link.unlink()
    (base / "w" / "link2").symlink_to(real2)
    assert run_guarded(cli, ["move", str(real), str(base / "w" / "link2")]) == 0
    assert f"using {real2} for {base / 'w' / 'link2'}" in capsys.readouterr().out
    assert run_guarded(cli, ["move", str(real), str(base / "w" / "link2"), "--apply"]) == 0
    assert claude_folders(h) == [claude_slug(str(real2))]


def test_case8_history_filed_under_a_link_spelling_moves_to_the_target(linked):
    """What the old `move LINK NEWLINK` left: sessions recording the link's path, in its folder."""
    h, base, real, link = linked
    shutil.rmtree(h.claude / "projects")
    claude_session(h, str(link), 2)
    plan = plan_move(h, str(link), str(real))
    assert [w.code for w in plan.warnings] == ["same-recorded-path"]
    apply_plan(plan, h)
    assert claude_folders(h) == [claude_slug(str(real))]
    [moved] = (h.claude / "projects" / claude_slug(str(real))).glob("*.jsonl")
    assert {orjson.loads(x).get("cwd") for x in moved.read_bytes().splitlines()} - {None} == {str(real)}


# ---- 4. doctor: a session in the wrong folder, a project split in two -------------------------

@pytest.fixture
def claude_world(isolated_homes):
    homes = resolve_homes()
    base = Path(isolated_homes["HOME"])
    app, app2 = base / "code" / "app", base / "code" / "app2"
    app.mkdir(parents=True)
    app2.mkdir(parents=True)
    return homes, str(app), str(app2)


def claude_found(homes, code):
    return [f for f in diagnose(homes, tools=["claude"]).findings if f.code == code]


def test_case8_doctor_finds_a_session_whose_cwd_disagrees_with_its_folder(claude_world):
    homes, app, app2 = claude_world
    put(homes, app, transcript(app))
    stray = put(homes, app, transcript(app2, sid=SID2), sid=SID2, folder=claude_slug(app))  # app2's session
    (stray.parent / SID2 / "subagents").mkdir(parents=True)
    (stray.parent / SID2 / "subagents" / "agent-1.jsonl").write_bytes(b"{}\n")
    before = snapshot(homes.claude)
    [f] = diagnose(homes, tools=["claude"]).findings
    assert f.code == "claude.session-cwd-mismatch" and f.data["ids"] == [SID2]
    assert f.fix == "histmig doctor --repair --apply" and f.data["folder"] == claude_slug(app2)
    apply_plan(plan_repair(homes, diagnose(homes, tools=["claude"])), homes)
    right = homes.claude / "projects" / claude_slug(app2)
    assert (right / f"{SID2}.jsonl").is_file() and (right / SID2 / "subagents" / "agent-1.jsonl").is_file()
    assert (homes.claude / "projects" / claude_slug(app) / f"{SID}.jsonl").is_file()
    assert diagnose(homes, tools=["claude"]).findings == []
    undo(homes)
    after = snapshot(homes.claude)
    # the folder the repair created may stay behind, empty (undo moves back only what was moved)
    created = f"projects/{claude_slug(app2)}"
    assert {k: v for k, v in after.items() if k != created} == before
    assert created not in after or not any(right.iterdir())


def test_case8_doctor_finds_a_project_split_across_two_folders(claude_world):
    """What a partial undo of `move app app2` leaves: app's sessions in its folder and in app2's."""
    homes, app, app2 = claude_world
    put(homes, app, transcript(app))
    put(homes, app, transcript(app, sid=SID2), sid=SID2, folder=claude_slug(app2))
    [f] = diagnose(homes, tools=["claude"]).findings            # not also a folder-level slug-mismatch
    assert f.code == "claude.project-split" and f.data["ids"] == [SID2] and f.fix == "histmig doctor --repair --apply"
    assert claude_slug(app) in f.detail and claude_slug(app2) in f.detail
    apply_plan(plan_repair(homes, diagnose(homes, tools=["claude"])), homes)
    assert sorted(p.name for p in (homes.claude / "projects" / claude_slug(app)).glob("*.jsonl")) == sorted(
        [f"{SID}.jsonl", f"{SID2}.jsonl"])
    assert diagnose(homes, tools=["claude"]).findings == []


def test_case8_live_session_is_named_not_moved(claude_world):
    homes, app, app2 = claude_world
    put(homes, app, transcript(app))
    put(homes, app, transcript(app, sid=SID2), sid=SID2, folder=claude_slug(app2))
    (homes.claude / "sessions").mkdir(parents=True)
    (homes.claude / "sessions" / f"{os.getpid()}.json").write_text(f'{{"pid": {os.getpid()}, "sessionId": "{SID2}"}}')
    [f] = claude_found(homes, "claude.project-split")
    assert not f.repair and f"{SID2} (live session, pid {os.getpid()})" in f.fix


def test_case8_doctor_sees_history_filed_under_a_symlinked_cwd(linked, capsys):
    """The old `move LINK NEWLINK` result: sessions recording the link, in the link's folder. Claude
    started there records the target and reads the target's folder; doctor names the move."""

    h, base, real, link = linked
    shutil.rmtree(h.claude / "projects")
    claude_session(h, str(link), 2)
    [f] = claude_found(h, "claude.session-cwd-mismatch")
    assert f.fix == f"histmig move {link} {real} --apply" and not f.repair
    claude_session(h, str(real), 1)                      # Claude since started a session in the target
    [f] = claude_found(h, "claude.project-split")
    assert f.fix == f"histmig move {link} {real} --apply"
    shutil.rmtree(h.claude / "projects" / claude_slug(str(real)))
    assert run_guarded(cli, ["move", str(link), str(real), "--apply"]) == 0
    assert codes(resolve_homes(), tools=("claude",)) == []


def test_case8_split_in_a_compressed_archived_rollout_is_repaired(codex_world):
    from histmig.jsonio import zst
    homes, codex, proj = codex_world
    config(codex, "my-provider")
    data = rollout(tid(1), "my-provider", cwd=proj, settings_provider="openai")
    paths = home_with(codex, {tid(1): data}, provider_rows={tid(1): "my-provider"}, archived={tid(1)},
                      compressed={tid(1)})
    _cwd_rows(codex, proj)
    [f] = diagnose(homes, tools=["codex"]).findings
    assert f.code == "codex.rollout-provider-split" and f.repair[0].compression == "zstd"
    apply_plan(plan_repair(homes, diagnose(homes, tools=["codex"])), homes)
    assert set(recorded_providers(zst.decompress_all(paths[tid(1)]), tid(1))) == {"my-provider"}
    assert codes(homes) == []


def test_case8_split_with_forks_pointing_into_it_is_named_not_edited(codex_world):
    homes, codex, proj = codex_world
    config(codex, "my-provider")
    parent = rollout(tid(1), "my-provider", cwd=proj, settings_provider="openai")
    child = rollout(tid(2), "my-provider", cwd=proj,
                    meta_more={"history_base": {"thread_id": tid(1), "end_byte_offset": len(parent)}})
    home_with(codex, {tid(1): parent, tid(2): child}, provider_rows={tid(1): "my-provider", tid(2): "my-provider"})
    _cwd_rows(codex, proj)
    [f] = [f for f in diagnose(homes, tools=["codex"]).findings if f.code == "codex.rollout-provider-split"]
    assert not f.repair and "forks point into it" in f.detail and str(rollout_path(codex, tid(2))) in f.detail
