"""``histmig move`` on Codex history: every structured path field, threads.cwd, offsets, config.toml."""
from __future__ import annotations

import sqlite3
import tomllib

import orjson
import pytest

from histmig.jsonio import zst
from histmig.apply import apply_plan
from histmig.verbs.undo.run import undo
from histmig.core.diagnostics import RefusedError
from histmig.verbs.move import plan_move
from histmig.core.plan import SqlUpdate, WriteFile

from codex_fixtures import TS, history_db, rollout, state_db, tid, turn_offsets, write_rollout
from test_move_fixtures import homes, structured_leftovers, tool_trees


@pytest.fixture
def h(tmp_path):
    return homes()


def extra_lines(cwd: str) -> list[dict]:
    return [{"timestamp": TS, "type": "turn_context", "payload": {
        "turn_id": "t9", "cwd": cwd + "/sub", "workspace_roots": [cwd, "/elsewhere"], "model": "gpt-5.5",
        "sandbox_policy": {"type": "workspace-write", "writable_roots": [cwd + "/out", "/tmp"]}, "summary": "auto"}}]


def codex_home(h, old: str, *, n: int = 1, compressed: bool = False, paginated: bool = True):
    data = {tid(i): rollout(tid(i), cwd=old, paginated=paginated, extra_lines=extra_lines(old)) for i in range(n)}
    paths = {t: write_rollout(h.codex, t, d, compressed=compressed) for t, d in data.items()}
    state_db(h.codex / "state_5.sqlite", [{"id": t, "rollout_path": str(p), "model_provider": "openai", "cwd": old}
                                          for t, p in paths.items()])
    history_db(h.codex / "thread_history_1.sqlite", data)
    return data, paths


def db(path, sql):
    con = sqlite3.connect(path)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def test_every_structured_field_db_cwd_and_offsets_move_text_stays(h, tmp_path):
    old, new = str(tmp_path / "W/app"), str(tmp_path / "W/app-renamed")
    (tmp_path / "W/app-renamed").mkdir(parents=True)
    data, paths = codex_home(h, old)
    [(_, before)], [path] = data.items(), paths.values()
    apply_plan(plan_move(h, old, new), h)
    after = path.read_bytes()
    assert structured_leftovers(h.codex, old) == []
    lines = [orjson.loads(x) for x in after.splitlines()]
    assert lines[0]["payload"]["cwd"] == new and lines[0]["payload"]["runtime_workspace_roots"] == [new]
    last = lines[-1]["payload"]
    assert last["workspace_roots"] == [new, "/elsewhere"]
    assert last["sandbox_policy"]["writable_roots"] == [new + "/out", "/tmp"]
    env_text = [x for x in before.splitlines() if b"<environment_context>" in x]
    assert env_text and env_text == [x for x in after.splitlines() if b"<environment_context>" in x]
    assert db(h.codex / "state_5.sqlite", "SELECT cwd FROM threads") == [(new,)]
    turns = db(h.codex / "thread_history_1.sqlite",
               "SELECT turn_id, rollout_byte_offset, rollout_end_byte_offset FROM thread_turns ORDER BY turn_id")
    assert turns == [(t_id, sb, eb) for t_id, _, sb, _, eb in turn_offsets(after)]
    assert db(h.codex / "thread_history_1.sqlite", "SELECT next_rollout_byte_offset FROM thread_history_projection_state") == [(len(after),)]  # noqa: E501 (a literal record)


def test_undo_restores_rollouts_databases_and_config(h, tmp_path):
    old, new = str(tmp_path / "W/app"), str(tmp_path / "W/app2")
    codex_home(h, old, n=2)
    (h.codex / "config.toml").write_text(f'model = "gpt-5.5"\n\n# trusted\n[projects."{old}"]\ntrust_level = "trusted"\n')
    before = files_and_rows(h)
    res = apply_plan(plan_move(h, old, new), h)
    assert files_and_rows(h) != before
    undo(h, res.txid)
    assert files_and_rows(h) == before


def files_and_rows(h):
    """Every file byte for byte with its mtime, except databases, which undo restores row by row."""
    trees = {root: {k: v for k, v in snap.items() if ".sqlite" not in k} for root, snap in tool_trees(h).items()}
    rows = {(name, table): db(h.codex / name, f"SELECT * FROM {table} ORDER BY 1, 2")
            for name, table in (("state_5.sqlite", "threads"), ("thread_history_1.sqlite", "thread_turns"),
                                ("thread_history_1.sqlite", "thread_history_projection_state"))}
    return trees, rows


def test_compressed_rollout_is_patched_through_zstd(h, tmp_path):
    old, new = str(tmp_path / "W/app"), str(tmp_path / "W/app2")
    _, paths = codex_home(h, old, compressed=True)
    [path] = paths.values()
    plan = plan_move(h, old, new)
    [w] = [op for op in plan.operations if isinstance(op, WriteFile)]
    assert w.compression == "zstd"
    apply_plan(plan, h)
    text = zst.decompress_all(path)
    assert old.encode() + b'"' not in text.split(b"\n")[0] and new.encode() in text.split(b"\n")[0]


def test_same_length_move_patches_in_place_and_shifts_nothing(h, tmp_path):
    old, new = str(tmp_path / "W/app1"), str(tmp_path / "W/app2")
    codex_home(h, old)
    plan = plan_move(h, old, new)
    [w] = [op for op in plan.operations if isinstance(op, WriteFile)]
    assert w.in_place_ok
    assert {op.table for op in plan.operations if isinstance(op, SqlUpdate)} == {"threads"}


def test_sibling_project_in_codex_is_left_alone(h, tmp_path):
    old, new = str(tmp_path / "W/app"), str(tmp_path / "W/new")
    codex_home(h, str(tmp_path / "W/app2"))
    assert plan_move(h, old, new).empty


def test_unknown_line_types_and_response_items_are_byte_identical(h, tmp_path):
    old, new = str(tmp_path / "W/app"), str(tmp_path / "W/app2")
    data, paths = codex_home(h, old)
    [before], [path] = data.values(), paths.values()
    apply_plan(plan_move(h, old, new), h)
    keep = lambda b: [x for x in b.splitlines() if b'"token_usage_record"' in x or b'"response_item"' in x]  # noqa: E731
    assert keep(before) == keep(path.read_bytes())


CONFIG = '''# my codex config
model = "gpt-5.5"   # default model

[projects."/elsewhere"]
trust_level = "trusted"

# the app I work on
[projects."{old}"]   # trusted since June
trust_level = "trusted"

[projects.'{old}/sub']
trust_level = "untrusted"

[projects."{old}2"]
trust_level = "untrusted"

[tui]
resume_cwd = true
'''


def test_config_projects_are_rekeyed_with_comments_and_order_kept(h, tmp_path):
    old, new = str(tmp_path / "W/app"), str(tmp_path / "W/moved app")
    h.codex.mkdir(parents=True)
    cfg = h.codex / "config.toml"
    cfg.write_text(CONFIG.format(old=old))
    apply_plan(plan_move(h, old, new), h)
    expected = CONFIG.format(old=old).replace(f'"{old}"', f'"{new}"').replace(f"'{old}/sub'", f"'{new}/sub'")
    assert cfg.read_text() == expected
    assert list(tomllib.loads(cfg.read_text())["projects"]) == ["/elsewhere", new, new + "/sub", old + "2"]


def test_config_merge_with_equal_entry_drops_the_old_table(h, tmp_path):
    old, new = str(tmp_path / "a"), str(tmp_path / "b")
    h.codex.mkdir(parents=True)
    cfg = h.codex / "config.toml"
    cfg.write_text(f'# keep me\n[projects."{old}"]\ntrust_level = "trusted"\n\n[projects."{new}"]\ntrust_level = "trusted"\n')
    apply_plan(plan_move(h, old, new), h)
    assert tomllib.loads(cfg.read_text()) == {"projects": {new: {"trust_level": "trusted"}}}
    assert "# keep me" in cfg.read_text()


def test_config_conflict_refuses_without_force_and_old_wins_with_it(h, tmp_path):
    old, new = str(tmp_path / "a"), str(tmp_path / "b")
    h.codex.mkdir(parents=True)
    cfg = h.codex / "config.toml"
    cfg.write_text(f'[projects."{old}"]\ntrust_level = "trusted"\n\n[projects."{new}"]\ntrust_level = "untrusted"\n')
    with pytest.raises(RefusedError, match="--force"):
        plan_move(h, old, new)
    apply_plan(plan_move(h, old, new, force=True), h)
    assert tomllib.loads(cfg.read_text()) == {"projects": {new: {"trust_level": "trusted"}}}


def test_invalid_config_refuses_naming_the_file(h, tmp_path):
    h.codex.mkdir(parents=True)
    (h.codex / "config.toml").write_text("[projects\n")
    with pytest.raises(RefusedError) as e:
        plan_move(h, str(tmp_path / "a"), str(tmp_path / "b"))
    assert "config.toml" in str(e.value.path)


def test_open_rollout_is_skipped_with_its_db_row(h, tmp_path):
    import os
    old, new = str(tmp_path / "W/app"), str(tmp_path / "W/app2")
    _, paths = codex_home(h, old)
    [path] = paths.values()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        plan = plan_move(h, old, new)
    finally:
        os.close(fd)
    assert [s.path for s in plan.skips] == [str(path)]
    assert plan.empty
