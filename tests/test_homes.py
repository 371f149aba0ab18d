from pathlib import Path

from histmig.core.homes import resolve_homes


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
                           "claude_json": "/h/.claude.json", "mini_cc": "/h/.mini_cc",
                           "state": "/h/.local/state/histmig", "codex_sqlite": "/sq"}
    assert h.roots() == [Path("/h/.codex"), Path("/h/.claude"), Path("/h/.mini_cc"), Path("/sq")]
    assert h.manifest == h.claude and h.root_files() == [Path("/h/.claude.json")]
    assert resolve_homes(env={"HOME": "/h", "CODEX_SQLITE_HOME": "/sq"}, codex_home="/c").codex_sqlite is None
    assert h == resolve_homes(env={"HOME": "/h", "CODEX_SQLITE_HOME": "/sq"}) and len({h, h}) == 1
