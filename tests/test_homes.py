from pathlib import Path

from histmig.tools import resolve_homes


def test_flags_beat_home_which_beats_env(tmp_path):
    env = {"HOME": "/h", "CODEX_HOME": "/env/codex", "CLAUDE_CONFIG_DIR": "/env/claude"}
    h = resolve_homes(env=env)
    assert h.codex == Path("/env/codex") and h.claude == Path("/env/claude")
    assert h.claude_json == Path("/env/claude/.claude.json")
    assert h.mini_cc == Path("/h/.mini_cc")
    h = resolve_homes(env=env, home=tmp_path)
    assert h.codex == tmp_path / ".codex" and h.claude_json == tmp_path / ".claude.json"
    h = resolve_homes(env=env, home=tmp_path, codex_home="/flag")
    assert h.codex == Path("/flag")


def test_claude_json_sits_beside_home_without_config_dir():
    h = resolve_homes(env={"HOME": "/h"})
    assert h.claude == Path("/h/.claude") and h.claude_json == Path("/h/.claude.json")


def test_state_dir_precedence():
    assert resolve_homes(env={"HOME": "/h"}).state == Path("/h/.local/state/histmig")
    assert resolve_homes(env={"HOME": "/h", "XDG_STATE_HOME": "/x"}).state == Path("/x/histmig")
    assert resolve_homes(env={"HOME": "/h", "HISTMIG_STATE_DIR": "/s"}).state == Path("/s")
    assert resolve_homes(env={"HOME": "/h"}, state_dir="/f").state == Path("/f")


def test_to_dict_and_roots_keep_their_order():
    """``--json`` and plans list the homes in the order they always had (plans stay byte-identical)."""
    h = resolve_homes(env={"HOME": "/h", "CODEX_SQLITE_HOME": "/sq"})
    assert h.to_dict() == {"home": "/h", "codex": "/h/.codex", "claude": "/h/.claude",
                           "claude_json": "/h/.claude.json", "mini_cc": "/h/.mini_cc", "qwen": "/h/.qwen",
                           "pi": "/h/.pi/agent", "gemini": "/h/.gemini", "opencode": "/h/.local/share/opencode",
                           "opencode_db": None, "copilot": "/h/.copilot", "cline": "/h/.cline",
                           "state": "/h/.local/state/histmig", "codex_sqlite": "/sq", "pi_sessions": None,
                           "cline_data": None}
    assert h.roots() == [Path("/h/.codex"), Path("/h/.claude"), Path("/h/.mini_cc"), Path("/h/.qwen"),
                         Path("/h/.gemini"), Path("/h/.pi/agent"), Path("/h/.copilot"), Path("/h/.cline"),
                         Path("/h/.local/share/opencode"), Path("/sq")]
    assert h.manifest == h.claude and h.root_files() == [Path("/h/.claude.json")]
    assert resolve_homes(env={"HOME": "/h", "CODEX_SQLITE_HOME": "/sq"}, codex_home="/c").codex_sqlite is None
    assert h == resolve_homes(env={"HOME": "/h", "CODEX_SQLITE_HOME": "/sq"}) and len({h, h}) == 1


def test_declarations_can_be_passed_in_and_cover_xdg_and_home_like_variables():
    """The shapes the next tools need (docs/ARCHITECTURE.md, "The tool table"): a default in an XDG base
    folder, a variable that names a $HOME stand-in the home lies below."""
    from histmig.core.homes import HomeDir, xdg
    specs = [HomeDir("db", "DB_HOME", xdg("XDG_DATA_HOME", ".local/share", "db"), "db-home", "db home."),
             HomeDir("gem", "GEM_HOME_DIR", ".gem", "gem-home", "gem home.", env_subdir=".gem")]
    h = resolve_homes(env={"HOME": "/h"}, specs=specs)
    assert (h.db, h.gem) == (Path("/h/.local/share/db"), Path("/h/.gem")) and h.roots() == [h.db, h.gem]
    h = resolve_homes(env={"HOME": "/h", "XDG_DATA_HOME": "/x", "GEM_HOME_DIR": "/g"}, specs=specs)
    assert (h.db, h.gem) == (Path("/x/db"), Path("/g/.gem"))
    h = resolve_homes(env={"HOME": "/h", "XDG_DATA_HOME": "/x", "GEM_HOME_DIR": "/g"}, home="/o", specs=specs, db_home="/f")
    assert (h.db, h.gem) == (Path("/f"), Path("/o/.gem"))
    assert resolve_homes(env={"HOME": "/h", "XDG_DATA_HOME": "rel"}, specs=specs).db == Path("/h/.local/share/db")
