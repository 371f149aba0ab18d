"""`histmig show`: readable text, formats, and how an id is resolved."""
from __future__ import annotations

import json

from clirun import histmig

from histmig.cli import samples


def run(home, *args):
    return histmig("--home", home, *args)


def test_show_renders_roles_tool_calls_results_and_reasoning(tmp_path):
    samples.install(tmp_path)
    rows = json.loads(run(tmp_path, "scan", "--json", "--tool", "codex").stdout)["sessions"]
    tool = next(r for r in rows if r["title"] == "RUN: echo hello from the tool")
    out = run(tmp_path, "show", tool["id"]).stdout
    assert "[user]" in out and "RUN: echo hello from the tool" in out
    assert "→ exec_command" in out and "← result" in out and "(reasoning" in out
    assert "[assistant]" in out


def test_show_by_path_and_markdown_and_native(tmp_path):
    samples.install(tmp_path)
    rows = json.loads(run(tmp_path, "scan", "--json", "--tool", "claude-code").stdout)["sessions"]
    row = next(r for r in rows if r["title"] == "Say hello in one short sentence.")
    md = run(tmp_path, "show", row["path"], "--format", "markdown").stdout
    assert md.startswith("# Say hello in one short sentence.\n") and "- **tool:** claude-code" in md
    assert "## user" in md        # issue 18: the export renderer (title, times, single fences)
    native = json.loads(run(tmp_path, "show", row["id"], "--format", "native").stdout)
    with open(row["path"], "rb") as fh:
        original = fh.read()
    rebuilt = "".join(r["raw"]["raw"] for r in native["records"]).encode()
    assert rebuilt == original            # the native dump is lossless


def test_ambiguous_prefix_lists_candidates_and_exits_1(tmp_path):
    samples.install(tmp_path)
    result = run(tmp_path, "show", "01a22acf")
    assert result.exit_code == 1
    assert "matches" in result.stderr and result.stderr.count("codex") >= 2


def test_unknown_session_exits_1_with_a_message(tmp_path):
    samples.install(tmp_path)
    result = run(tmp_path, "show", "ffffffff")
    assert result.exit_code == 1 and "no session matches" in result.stderr
