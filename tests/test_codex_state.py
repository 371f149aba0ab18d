"""Codex state stores: every state DB found, rows read, provider/cwd updates and offset shifts as ops,
config.toml edits that keep comments."""
from __future__ import annotations

import tomllib

import pytest

from histmig.core.diagnostics import HistmigInputError
from histmig.tools import resolve_homes
from histmig.core.plan import CreateFile, WriteFile
from histmig.tools.codex import config as codex_config
from histmig.tools.codex import state as codex_state

from codex_fixtures import history_db, rollout, state_db, tid, turn_offsets


def homes_for(tmp_path, **env):
    return resolve_homes(codex_home=tmp_path / ".codex", env={"HOME": str(tmp_path), **env})


def test_state_dbs_finds_root_sqlite_subfolder_sqlite_home_and_env(tmp_path):
    codex = tmp_path / ".codex"
    cfg_home, env_home = tmp_path / "cfgdb", tmp_path / "envdb"
    for folder in (codex, codex / "sqlite", cfg_home, env_home):
        state_db(folder / "state_5.sqlite", [])
    (codex / "config.toml").write_text(f'sqlite_home = "{cfg_home}"\n')
    homes = resolve_homes(env={"HOME": str(tmp_path), "CODEX_HOME": str(codex), "CODEX_SQLITE_HOME": str(env_home)})
    found = codex_state.state_dbs(homes)
    assert found == [cfg_home / "state_5.sqlite", env_home / "state_5.sqlite",
                     codex / "state_5.sqlite", codex / "sqlite" / "state_5.sqlite"]


def test_state_dbs_lists_one_folder_once_when_sqlite_home_is_codex_home(tmp_path):
    codex = tmp_path / ".codex"
    state_db(codex / "state_5.sqlite", [])
    (codex / "config.toml").write_text(f'sqlite_home = "{codex}/"\n')
    assert codex_state.state_dbs(homes_for(tmp_path)) == [codex / "state_5.sqlite"]


def test_relative_sqlite_home_is_taken_from_codex_home(tmp_path):
    codex = tmp_path / ".codex"
    state_db(codex / "db" / "state_5.sqlite", [])
    (codex / "config.toml").write_text('sqlite_home = "db"\n')
    assert codex / "db" / "state_5.sqlite" in codex_state.state_dbs(homes_for(tmp_path))


def test_provider_update_ops_cover_every_db_holding_the_row(tmp_path):
    codex = tmp_path / ".codex"
    state_db(codex / "state_5.sqlite", [{"id": tid(1), "rollout_path": "/x", "model_provider": "openai"}])
    state_db(codex / "sqlite" / "state_5.sqlite", [{"id": tid(1), "rollout_path": "/x", "model_provider": "openai"},
                                                   {"id": tid(2), "rollout_path": "/y", "model_provider": "openai"}])
    ops = codex_state.provider_update_ops(homes_for(tmp_path), tid(1), "my-provider")
    assert sorted(o.db for o in ops) == sorted([str(codex / "state_5.sqlite"), str(codex / "sqlite" / "state_5.sqlite")])
    assert all(o.set == {"model_provider": "my-provider"} and o.expect == {"model_provider": "openai"}
               and o.key == {"id": tid(1)} for o in ops)
    assert codex_state.provider_update_ops(homes_for(tmp_path), tid(1), "openai") == []


def test_provider_update_ops_from_read_values_share_equal_dicts(tmp_path):
    """A flip plans from ``thread_providers`` (two columns a row) and its thousands of operations share
    one ``set`` and one ``expect`` dict (docs/bench.md, "Memory"); 1, 1.0 and True stay apart."""
    db = tmp_path / ".codex" / "state_5.sqlite"
    state_db(db, [{"id": tid(n), "rollout_path": f"/x{n}", "model_provider": "openai"} for n in (1, 2)])
    providers = {db: codex_state.thread_providers(db)}
    a, b = (codex_state.provider_update_ops(homes_for(tmp_path), tid(n), "new", providers=providers)[0] for n in (1, 2))
    assert a.set is b.set and a.expect is b.expect and a.key == {"id": tid(1)} and b.key == {"id": tid(2)}
    assert [type(codex_state._one("c", v)["c"]) for v in (1, 1.0, True)] == [int, float, bool]
    assert codex_state._one("c", [1]) == {"c": [1]}          # unhashable: a dict of its own
    assert codex_state.provider_update_ops(homes_for(tmp_path), tid(3), "new", providers=providers) == []


def test_cwd_update_ops_store_the_realpath_of_an_existing_dir(tmp_path):
    codex = tmp_path / ".codex"
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    state_db(codex / "state_5.sqlite", [{"id": tid(1), "rollout_path": "/x", "model_provider": "openai", "cwd": "/old"}])
    [op] = codex_state.cwd_update_ops(homes_for(tmp_path), tid(1), str(tmp_path / "link"))
    assert op.set == {"cwd": str(real)} and op.expect == {"cwd": "/old"}


def test_shift_moves_only_offsets_after_an_edit():
    edits = [(100, 5), (500, -2)]
    assert codex_state.shift(50, edits) == 50
    assert codex_state.shift(100, edits) == 100       # an edit at a line start does not move that start
    assert codex_state.shift(101, edits) == 106
    assert codex_state.shift(900, edits) == 903
    assert codex_state.shift(None, edits) is None


def _apply_sql(ops):
    """The write path's own statements (histmig/apply/sqlops.py), checked first, without the journal."""
    from histmig.apply import sqlops
    for op in ops:
        con = sqlops.connect(op.db)
        assert sqlops._mismatch(con, op) is None
        sqlops._execute_all(con, [op])
        con.close()


def test_offset_shift_ops_keep_every_offset_on_a_line_start_after_a_longer_line_one(tmp_path):
    codex = tmp_path / ".codex"
    data = rollout(tid(1), turns=3)
    history_db(codex / "thread_history_1.sqlite", {tid(1): data})
    first_nl = data.index(b"\n")
    at = data.index(b'"openai"')
    new_data = data[:at] + b'"my-provider"' + data[at + len(b'"openai"'):]
    ops = codex_state.offset_shift_ops(homes_for(tmp_path), tid(1), [(at, 5)])
    # one shift per table of the thread: its 3 turns, its projection state row
    assert [(op.table, op.rows) for op in ops] == [("thread_turns", 3), ("thread_history_projection_state", 1)]
    _apply_sql(ops)
    stored = codex_state.offsets_for(homes_for(tmp_path), tid(1))
    assert stored["next"] == len(new_data)
    starts = {0} | {i + 1 for i, b in enumerate(new_data) if b == 10}
    assert stored["turns"] and all(r["rollout_byte_offset"] in starts and r["rollout_end_byte_offset"] in starts
                                   for r in stored["turns"])
    assert [r["rollout_byte_offset"] for r in stored["turns"]] == [o[2] + 5 for o in turn_offsets(data)]
    assert at < first_nl


def test_offset_shift_ops_are_empty_for_same_length_edits(tmp_path):
    history_db(tmp_path / ".codex" / "thread_history_1.sqlite", {tid(1): rollout(tid(1))})
    assert codex_state.offset_shift_ops(homes_for(tmp_path), tid(1), [(400, 0)]) == []


# ---- config.toml ----------------------------------------------------------------------------

CONFIG = '''# my Codex config
model = "gpt-5.5"   # keep this comment
model_provider = "openai"

[model_providers.my-provider]
name = "my-provider"
base_url = "http://127.0.0.1:9/v1"   # local
wire_api = "responses"

[projects."/w/proj"]
trust_level = "trusted"
'''


def test_set_model_provider_changes_only_that_line(tmp_path):
    codex = tmp_path / ".codex"
    codex.mkdir()
    (codex / "config.toml").write_text(CONFIG)
    op = codex_config.set_model_provider_op(homes_for(tmp_path), "my-provider")
    assert isinstance(op, WriteFile)
    new = op.new_bytes.decode()
    assert new == CONFIG.replace('model_provider = "openai"', 'model_provider = "my-provider"')
    assert tomllib.loads(new)["model_provider"] == "my-provider"


def test_set_model_provider_adds_the_key_before_the_first_table(tmp_path):
    codex = tmp_path / ".codex"
    codex.mkdir()
    text = CONFIG.replace('model_provider = "openai"\n', "")
    (codex / "config.toml").write_text(text)
    new = codex_config.set_model_provider_op(homes_for(tmp_path), "my-provider").new_bytes.decode()
    parsed = tomllib.loads(new)
    assert parsed["model_provider"] == "my-provider"
    assert parsed["model_providers"]["my-provider"]["base_url"] == "http://127.0.0.1:9/v1"
    assert "# keep this comment" in new and "# local" in new


def test_set_model_provider_creates_a_missing_config_and_skips_when_already_set(tmp_path):
    op = codex_config.set_model_provider_op(homes_for(tmp_path), "ollama")
    assert isinstance(op, CreateFile) and tomllib.loads(op.data.decode()) == {"model_provider": "ollama"}
    (tmp_path / ".codex").mkdir()
    (tmp_path / ".codex" / "config.toml").write_text('model_provider = "ollama"\n')
    assert codex_config.set_model_provider_op(homes_for(tmp_path), "ollama") is None


def test_config_reading_defaults_builtins_and_base_urls(tmp_path):
    (tmp_path / ".codex").mkdir()
    (tmp_path / ".codex" / "config.toml").write_text(CONFIG.replace('model_provider = "openai"\n', ""))
    cfg = codex_config.load_config(homes_for(tmp_path))
    assert codex_config.model_provider(cfg) == "openai"
    assert codex_config.is_known_provider(cfg, "my-provider") and codex_config.is_known_provider(cfg, "lmstudio")
    assert not codex_config.is_known_provider(cfg, "nope")
    assert codex_config.base_url(cfg, "my-provider") == "http://127.0.0.1:9/v1"
    assert codex_config.base_url({"openai_base_url": "http://fake/v1"}, "openai") == "http://fake/v1"
    assert codex_config.base_url({}, "openai") == codex_config.OPENAI_DEFAULT_BASE_URL


def test_invalid_config_is_refused_and_named(tmp_path):
    (tmp_path / ".codex").mkdir()
    (tmp_path / ".codex" / "config.toml").write_text("model_provider = \n")
    with pytest.raises(HistmigInputError) as e:
        codex_config.load_config(homes_for(tmp_path))
    assert e.value.path.endswith("config.toml")
