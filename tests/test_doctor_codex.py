"""Codex doctor checks, one crafted tree per check, and the repair of the naive flip script's state."""
from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from codex_fixtures import (home_with, naive_flip, rollout, rollout_path, state_db, tid, turn_offsets,
                            write_rollout)
from histmig.apply import apply_plan
from histmig.verbs.undo.run import undo
from histmig.verbs.doctor import diagnose, plan_repair



@pytest.fixture
def world(codex_world):
    """``codex_world`` (tests/conftest.py) with config selecting my-provider."""
    write_config(codex_world[1], "my-provider")
    return codex_world


def write_config(codex: Path, provider: str, *, define: bool = True) -> None:
    text = f'model_provider = "{provider}"\n'
    if define:
        text += f'[model_providers.{provider}]\nname = "x"\nbase_url = "http://127.0.0.1:9/v1"\nwire_api = "responses"\n'
    (codex / "config.toml").write_text(text)


def codes(homes, **kw) -> list[str]:
    return sorted(f.code for f in diagnose(homes, tools=["codex"], **kw).findings)


def one(homes, code):
    found = [f for f in diagnose(homes, tools=["codex"]).findings if f.code == code]
    assert len(found) == 1, found
    return found[0]


def rows(db: Path, sql: str) -> list[tuple]:
    con = sqlite3.connect(db)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def test_consistent_home_is_healthy(world):
    homes, codex, proj = world
    home_with(codex, {tid(1): rollout(tid(1), "my-provider", cwd=proj)}, provider_rows={tid(1): "my-provider"})
    _set_row_cwd(codex, tid(1), proj)
    assert codes(homes) == []


def _set_row_cwd(codex: Path, thread: str, cwd: str) -> None:
    con = sqlite3.connect(codex / "state_5.sqlite")
    con.execute("UPDATE threads SET cwd=? WHERE id=?", (cwd, thread))
    con.commit()
    con.close()


def test_provider_hidden_counts_per_provider_and_prints_the_flip(world):
    homes, codex, proj = world
    for n, p in [(1, "openai"), (2, "openai"), (3, "azure"), (4, "my-provider"), (5, None)]:
        write_rollout(codex, tid(n), rollout(tid(n), p, cwd=proj, omit_provider=p is None))
    found = {f.data["provider"]: f for f in diagnose(homes, tools=["codex"]).findings if f.code == "codex.provider-hidden"}
    assert {k: f.count for k, f in found.items()} == {"openai": 2, "azure": 1}   # None counts as configured
    assert found["openai"].fix == "histmig flip openai my-provider --apply"


def test_naive_flip_script_state_is_diagnosed_and_repaired(world):
    homes, codex, proj = world
    write_config(codex, "openai", define=False)
    data = rollout(tid(1), "openai", cwd=proj)
    home_with(codex, {tid(1): data})
    _set_row_cwd(codex, tid(1), proj)
    write_config(codex, "my-provider")
    assert naive_flip(codex, "openai", "my-provider") == 1

    report = diagnose(homes, tools=["codex"])
    assert sorted(f.code for f in report.findings) == ["codex.db-provider-mismatch", "codex.offsets-stale",
                                                       "codex.rollout-provider-split"]
    assert all(f.repair for f in report.findings)

    apply_plan(plan_repair(homes, report), homes)
    assert codes(homes) == []
    db = codex / "state_5.sqlite"
    assert rows(db, "SELECT model_provider FROM threads") == [("my-provider",)]
    flipped = rollout_path(codex, tid(1)).read_bytes()
    want = [(t, sb, eb) for t, _, sb, _, eb in turn_offsets(flipped)]
    got = rows(codex / "thread_history_1.sqlite",
               "SELECT turn_id, rollout_byte_offset, rollout_end_byte_offset FROM thread_turns ORDER BY turn_id")
    assert got == want
    assert rows(codex / "thread_history_1.sqlite", "SELECT next_rollout_byte_offset FROM thread_history_projection_state") == [(len(flipped),)]  # noqa: E501 (a literal record)


def test_repair_is_undone_by_undo(world):
    homes, codex, proj = world
    write_config(codex, "openai", define=False)
    home_with(codex, {tid(1): rollout(tid(1), "openai", cwd=proj)})
    write_config(codex, "my-provider")
    naive_flip(codex, "openai", "my-provider")
    before = rows(codex / "thread_history_1.sqlite", "SELECT * FROM thread_turns")
    apply_plan(plan_repair(homes, diagnose(homes, tools=["codex"])), homes)
    undo(homes)
    assert rows(codex / "state_5.sqlite", "SELECT model_provider FROM threads") == [("openai",)]
    assert rows(codex / "thread_history_1.sqlite", "SELECT * FROM thread_turns") == before


def test_row_on_configured_provider_with_stale_file_suggests_flip_not_repair(world):
    homes, codex, proj = world
    home_with(codex, {tid(1): rollout(tid(1), "openai", cwd=proj)}, provider_rows={tid(1): "my-provider"})
    f = one(homes, "codex.db-provider-mismatch")
    assert not f.repair and f.fix == "histmig flip openai my-provider --apply"


def test_db_cwd_mismatch_is_resynced_from_the_rollout(world):
    homes, codex, proj = world
    home_with(codex, {tid(1): rollout(tid(1), "my-provider", cwd=proj)}, provider_rows={tid(1): "my-provider"})
    _set_row_cwd(codex, tid(1), "/somewhere/else")
    f = one(homes, "codex.db-cwd-mismatch")
    assert [op.set for op in f.repair] == [{"cwd": os.path.realpath(proj)}]


def test_half_done_move_points_at_histmig_move(world, tmp_path):
    homes, codex, proj = world
    gone = str(Path(proj).parent / "old-app")
    home_with(codex, {tid(1): rollout(tid(1), "my-provider", cwd=gone)}, provider_rows={tid(1): "my-provider"})
    _set_row_cwd(codex, tid(1), proj)
    f = one(homes, "codex.db-cwd-mismatch")
    assert not f.repair and f.fix == f"histmig move {gone} {proj} --apply"


def test_row_pointing_at_missing_file_is_repointed_when_the_rollout_exists(world):
    homes, codex, proj = world
    paths = home_with(codex, {tid(1): rollout(tid(1), "my-provider", cwd=proj),
                              tid(2): rollout(tid(2), "my-provider", cwd=proj)},
                      provider_rows={tid(1): "my-provider", tid(2): "my-provider"})
    for t in (tid(1), tid(2)):
        _set_row_cwd(codex, t, proj)
    moved = codex / "sessions/2026/11/30" / paths[tid(1)].name
    moved.parent.mkdir(parents=True)
    paths[tid(1)].rename(moved)
    paths[tid(2)].unlink()
    f = one(homes, "codex.db-rollout-missing")
    assert f.count == 2
    assert [(op.key["id"], op.set["rollout_path"]) for op in f.repair] == [(tid(1), str(moved))]


def test_row_pointing_outside_the_home_is_repointed_inside(world):
    homes, codex, proj = world
    home_with(codex, {tid(1): rollout(tid(1), "my-provider", cwd=proj)}, provider_rows={tid(1): "my-provider"})
    _set_row_cwd(codex, tid(1), proj)
    con = sqlite3.connect(codex / "state_5.sqlite")
    con.execute("UPDATE threads SET rollout_path=?", ("/old-machine/.codex/sessions/x/rollout.jsonl",))
    con.commit()
    con.close()
    f = one(homes, "codex.db-rollout-outside-home")
    assert [op.set["rollout_path"] for op in f.repair] == [str(rollout_path(codex, tid(1)))]


def test_rollout_without_row_is_reported(world):
    homes, codex, proj = world
    write_rollout(codex, tid(1), rollout(tid(1), "my-provider", cwd=proj))
    state_db(codex / "state_5.sqlite", [])
    f = one(homes, "codex.rollout-no-row")
    assert f.count == 1 and f.data["ids"] == [tid(1)] and not f.repair


def test_offsets_moved_by_hand_are_recomputed_from_ordinals(world):
    homes, codex, proj = world
    data = rollout(tid(1), "my-provider", cwd=proj)
    home_with(codex, {tid(1): data}, provider_rows={tid(1): "my-provider"})
    _set_row_cwd(codex, tid(1), proj)
    con = sqlite3.connect(codex / "thread_history_1.sqlite")
    con.execute("UPDATE thread_turns SET rollout_byte_offset = rollout_byte_offset + 7")
    con.commit()
    con.close()
    f = one(homes, "codex.offsets-stale")
    want = {t: sb for t, _, sb, _, _ in turn_offsets(data)}
    assert {op.key["turn_id"]: op.set["rollout_byte_offset"] for op in f.repair} == want


def test_undefined_configured_provider_is_reported_and_builtins_are_not(world):
    homes, codex, _ = world
    write_config(codex, "ghost", define=False)
    assert codes(homes) == ["codex.provider-undefined"]
    write_config(codex, "ollama", define=False)
    assert codes(homes) == []


def test_missing_cwd_is_grouped_and_suggests_the_same_named_folder(world):
    homes, codex, proj = world
    gone = str(Path(homes.home) / "old" / "app")
    for n in (1, 2):
        write_rollout(codex, tid(n), rollout(tid(n), "my-provider", cwd=gone))
    f = one(homes, "codex.cwd-missing")
    assert f.count == 2 and f.fix == f"histmig move {gone} {proj} --apply"


def test_missing_cwd_suggests_a_checkout_with_the_same_git_remote(world):
    homes, codex, _ = world
    checkout = Path(homes.home) / "work" / "renamed"
    (checkout / ".git").mkdir(parents=True)
    (checkout / ".git" / "config").write_text('[remote "origin"]\n\turl = git@github.com:me/tool.git\n')
    gone = str(Path(homes.home) / "old" / "tool")
    write_rollout(codex, tid(1), rollout(tid(1), "my-provider", cwd=gone,
                                         meta_more={"git": {"repository_url": "https://github.com/me/tool"}}))
    assert one(homes, "codex.cwd-missing").data["suggested"] == str(checkout)


def test_shadowed_zst_is_reported(world):
    homes, codex, proj = world
    data = rollout(tid(1), "my-provider", cwd=proj)
    write_rollout(codex, tid(1), data)
    write_rollout(codex, tid(1), data, compressed=True)
    assert one(homes, "codex.zst-shadowed").path.endswith(".jsonl.zst")


def test_rollout_without_session_meta_is_unreadable(world):
    homes, codex, _ = world
    p = rollout_path(codex, tid(1))
    p.parent.mkdir(parents=True)
    p.write_bytes(b'{"not": "a rollout"}\n')
    assert codes(homes) == ["codex.unreadable"]


@pytest.mark.parametrize("db,table", [("state_5.sqlite", "threads"), ("thread_history_1.sqlite", "thread_turns")])
def test_a_database_without_its_table_is_unreadable_not_empty(world, db, table):
    """A state DB without ``threads`` must not read as "no rows" (every rollout would then be
    reported as missing its row), nor a history DB without its turns as "nothing to check"."""
    homes, codex, proj = world
    home_with(codex, {tid(1): rollout(tid(1), "my-provider", cwd=proj)}, provider_rows={tid(1): "my-provider"})
    _set_row_cwd(codex, tid(1), proj)
    con = sqlite3.connect(codex / db)
    con.execute(f"DROP TABLE {table}")
    con.commit()
    con.close()
    found = diagnose(homes, tools=["codex"]).findings
    assert [(f.code, Path(f.path).name) for f in found] == [("codex.unreadable", db)]
    assert table in found[0].detail


def test_ignore_drops_a_code_or_a_whole_tool(world):
    homes, codex, _ = world
    write_config(codex, "ghost", define=False)
    assert codes(homes, ignore=["codex.provider-undefined"]) == []
    assert codes(homes, ignore=["codex."]) == []
