"""Converting from OpenCode (histmig/tools/opencode/calls.py and the generic convert path): the recorded
sample to Codex and Claude Code, its ``bash`` call mapped through the neutral vocabulary."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from clirun import histmig
from histmig.core.model import ToolCall
from histmig.toolkit.convert.calls import Edit, Other, Read, Shell
from histmig.tools import resolve_homes
from histmig.tools.opencode.calls import to_neutral

SAMPLE = Path(__file__).resolve().parent.parent / "histmig" / "samples" / "opencode" / "resumed" / "opencode.db"


def test_opencode_tools_map_to_the_neutral_vocabulary():
    shell = to_neutral(ToolCall("c1", "bash", {"command": "ls", "timeout": 5000, "description": "list"}))
    assert isinstance(shell, Shell) and (shell.command, shell.timeout_ms) == ("ls", 5000)
    assert isinstance(to_neutral(ToolCall("c2", "read", {"filePath": "/a", "offset": 2})), Read)
    edit = to_neutral(ToolCall("c3", "edit", {"filePath": "/a", "oldString": "x", "newString": "y"}))
    assert isinstance(edit, Edit) and edit.changes[0].new == "y"
    assert isinstance(to_neutral(ToolCall("c4", "webfetch", {"url": "u"})), Other)


def test_the_sample_converts_to_codex_and_claude_code_with_only_reasoning_reported_lost(tmp_path):
    db = resolve_homes().opencode / "opencode.db"
    db.parent.mkdir(parents=True)
    shutil.copy2(SAMPLE, db)
    for target in ("codex", "claude-code"):
        out = histmig("convert", "--from", "opencode", "--to", target, "--apply", "--json")
        assert out.exit_code == 0, out.stderr
        report = json.loads(out.stdout)
        [done] = [s for s in report["sessions"] if s["status"] == "convert"]
        assert [k.split(" ")[0] for k in done["loss"].get("dropped", {})] == ["reasoning"], done["loss"]
    listed = json.loads(histmig("scan", "--json").stdout)["sessions"]
    assert sorted(s["tool"] for s in listed) == ["claude-code", "codex", "opencode"]
