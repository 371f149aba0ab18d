"""The autouse fixture really isolates every home and really notices writes outside tmp."""
from __future__ import annotations

import os
from pathlib import Path

from conftest import REAL_HOME, _snapshot

from histmig.tools import resolve_homes


def test_every_home_variable_points_into_the_temporary_home(isolated_homes):
    base = isolated_homes["HOME"]
    for var in ("HOME", "CODEX_HOME", "CLAUDE_CONFIG_DIR", "MINI_CC_HOME", "QWEN_HOME", "PI_CODING_AGENT_DIR",
                "GEMINI_CLI_HOME", "COPILOT_HOME", "CLINE_DIR", "HISTMIG_STATE_DIR", "XDG_STATE_HOME"):
        assert Path(os.environ[var]).is_relative_to(base), var
    homes = resolve_homes()
    for p in (homes.codex, homes.claude, homes.claude_json, homes.mini_cc, homes.qwen, homes.pi, homes.gemini,
              homes.copilot, homes.cline, homes.state):
        assert p.is_relative_to(base) and not p.is_relative_to(REAL_HOME / ".codex")


def test_the_guard_snapshot_detects_a_write_under_a_watched_folder(tmp_path):
    (tmp_path / ".codex").mkdir()
    before = _snapshot(tmp_path)
    (tmp_path / ".codex" / "new.jsonl").write_text("{}\n")
    after = _snapshot(tmp_path)
    assert set(after.items()) ^ set(before.items())
