"""convert to and from Gemini CLI (histmig/tools/gemini/write.py; docs/specs/gemini.md §8, §4, §6, §10)."""
from __future__ import annotations

import time
from pathlib import Path

import orjson

from histmig import tools as registry
from histmig.core.model import ToolCall, ToolResult, core
from histmig.tools.gemini import adapter as gem
from histmig.tools.gemini import files
from histmig.verbs.convert import ConvertOptions
from histmig.verbs.convert.batches import plan_convert

from convert_fixtures import cli, homes, proj, CODEX_ID, write_claude, write_codex  # noqa: F401 (fixtures)


def refs_of(homes, tool):
    return list(registry.adapter(tool).discover(homes))


def test_codex_to_gemini_writes_one_result_per_call_mapped_to_gemini_tools_and_a_fresh_last_updated(homes, proj):
    write_codex(homes.codex, proj)
    plan, outs = plan_convert(homes, refs_of(homes, "codex"), ConvertOptions("gemini", seed=3))
    creates = [op for op in plan.operations if op.kind == "create"]
    [marker] = [op for op in creates if op.path.endswith(".project_root")]
    [session] = [op for op in creates if op.path.endswith(".jsonl")]
    assert marker.path.endswith("/tmp/my-app/.project_root") and marker.data == proj.encode()
    name = Path(session.path).name
    m = files.SESSION_RE.match(name)
    assert m and m.group("short") == outs[0].new_id[:8]
    lines = [orjson.loads(x) for x in session.data.splitlines()]
    meta = lines[0]
    assert meta["sessionId"] == outs[0].new_id and meta["histmig"]["sourceSession"] == CODEX_ID
    age = time.time() - time.mktime(time.strptime(meta["lastUpdated"][:19], "%Y-%m-%dT%H:%M:%S")) + time.timezone
    assert abs(age) < 120, meta["lastUpdated"]          # retention counts from the import
    calls = [c for r in lines[1:] for c in r.get("toolCalls", [])]
    shell = [c for c in calls if c["name"] == "run_shell_command"]
    assert shell and all(isinstance(c["args"]["command"], str) for c in shell)
    assert not {c["name"] for c in calls} & {"exec_command", "shell"}, [c["name"] for c in calls]
    # a two-file apply_patch: one replace per update hunk and a write_file per added file, each answered
    added = next(c for c in calls if c["name"] == "write_file")
    assert added["args"]["file_path"] == f"{proj}/NOTES.md" and added["args"]["content"].startswith("hello")
    assert any(c["name"] == "replace" and c["args"]["file_path"].startswith(proj) for c in calls)
    assert all(len(c["result"]) == 1 and "functionResponse" in c["result"][0] for c in calls)
    assert not any(p.get("functionResponse") for r in lines[1:] if r["type"] == "user" for p in r["content"])


def test_apply_lists_it_in_gemini_and_reads_back_the_conversation(homes, proj):
    write_codex(homes.codex, proj)
    src = registry.adapter("codex").read(refs_of(homes, "codex")[0])
    assert cli("convert", "--to", "gemini", "--all", "--apply") == 0
    [ref] = refs_of(homes, "gemini")
    assert ref.cwd == proj and ref.extra["resumable"]
    s = gem.read(ref.path)
    kinds = [x[0] for x in core(s) if x[0] != "text"]
    assert kinds.count("tool_call") == kinds.count("tool_result") >= [x[0] for x in core(src)].count("tool_call")
    assert [x[2] for x in core(s) if x[:2] == ("text", "user")] == [x[2] for x in core(src) if x[:2] == ("text", "user")]
    assert cli("convert", "--to", "gemini", "--all", "--apply") == 0      # idempotent: already converted
    assert len(refs_of(homes, "gemini")) == 1
    assert cli("undo") == 0 and not refs_of(homes, "gemini")


def test_claude_to_gemini_drops_signed_thinking_and_maps_bash(homes, proj):
    write_claude(homes.claude, proj)
    plan, outs = plan_convert(homes, refs_of(homes, "claude-code"), ConvertOptions("gemini", seed=4))
    [session] = [op for op in plan.operations if op.kind == "create" and op.path.endswith(".jsonl")]
    lines = [orjson.loads(x) for x in session.data.splitlines()]
    assert not any("thoughts" in r for r in lines[1:])
    assert not any("signature" in x.decode() for x in session.data.splitlines())
    assert outs[0].loss.counts


def test_two_sessions_into_one_new_project_make_one_marker(homes, proj):
    write_codex(homes.codex, proj)
    write_codex(homes.codex, proj, sid="019e9625-802f-7e91-840a-cfe88d14117b")
    assert cli("convert", "--to", "gemini", "--all", "--apply") == 0
    assert len(refs_of(homes, "gemini")) == 2


def test_gemini_to_codex_and_claude(homes, proj, tmp_path):
    write_codex(homes.codex, proj)
    assert cli("convert", "--to", "gemini", "--all", "--apply") == 0
    [ref] = refs_of(homes, "gemini")
    src = gem.read(ref.path)
    for target in ("claude-code", "codex"):
        plan, outs = plan_convert(homes, [ref], ConvertOptions(target, seed=5, again=True))
        assert outs[0].status == "convert", outs[0].reason
    parts = [p for r in src.records for p in r.parts if r.source_type == "resolved"]
    assert any(isinstance(p, ToolCall) for p in parts) and any(isinstance(p, ToolResult) for p in parts)


def test_gemini_calls_go_through_the_neutral_vocabulary_both_ways():
    from histmig.toolkit.convert.calls import translate
    from histmig.tools.claude_family.calls import CALLS as CLAUDE
    from histmig.tools.codex.calls import CALLS as CODEX
    from histmig.tools.gemini.calls import CALLS as GEMINI
    shell = ToolCall("c1", "run_shell_command", {"command": "ls -la", "description": "list"})
    assert [(m.name, m.arguments) for m in translate(shell, GEMINI, CLAUDE, "/w")] == [
        ("Bash", {"command": "ls -la", "description": "list"})]
    assert [(m.name, m.arguments) for m in translate(shell, GEMINI, CODEX, "/w")] == [("exec_command", {"cmd": "ls -la"})]
    edit = ToolCall("c2", "replace", {"file_path": "/w/a.py", "old_string": "x = 1", "new_string": "x = 2"})
    [m] = translate(edit, GEMINI, CLAUDE, "/w")
    assert (m.name, m.arguments["file_path"], m.arguments["new_string"]) == ("Edit", "/w/a.py", "x = 2")
    bash = ToolCall("c3", "Bash", {"command": "make test"})
    assert [(m.name, m.arguments) for m in translate(bash, CLAUDE, GEMINI, "/w")] == [
        ("run_shell_command", {"command": "make test"})]
    read = ToolCall("c4", "Read", {"file_path": "/w/a.py", "offset": 10, "limit": 5})
    assert [(m.name, m.arguments) for m in translate(read, CLAUDE, GEMINI, "/w")] == [
        ("read_file", {"file_path": "/w/a.py", "start_line": 10, "end_line": 14})]
    other = ToolCall("c5", "glob", {"pattern": "*.py"})
    assert [(m.name, m.arguments) for m in translate(other, GEMINI, CLAUDE, "/w")] == [("glob", {"pattern": "*.py"})]
