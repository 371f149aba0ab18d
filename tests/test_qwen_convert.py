"""Converting to Qwen Code (tools/qwen/write.py, tools/qwen/calls.py): Qwen's tool names and argument shapes,
answered calls only, reasoning never replayed to another provider, usage carried, idempotent."""
from __future__ import annotations

from pathlib import Path

import orjson

from histmig import tools as registry
from histmig.core.model import Reasoning, Session, Text, ToolCall, ToolResult
from histmig.toolkit.convert.common import Target
from histmig.toolkit.convert.flatten import flatten, usage_from
from histmig.toolkit.convert.ids import Ids
from histmig.tools.qwen import adapter, provenance
from histmig.toolkit.convert.calls import translate
from histmig.tools.qwen.calls import CALLS
from histmig.tools.qwen.write import usage_metadata, write
from convert_fixtures import rec, session

PATCH = "*** Begin Patch\n*** Add File: new.txt\n+hello\n*** Update File: a.py\n@@\n-x = 1\n+x = 2\n*** End Patch\n"


def convert(tmp_path: Path, s: Session, **kw) -> tuple[Path, list[dict]]:
    ids = Ids(seed=1, now=1.8e9)
    w = write(flatten(s), Target(tmp_path, ids.uuid4(), s.cwd, ids, s.format, s.id, **kw))
    (path, data), = w.files
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path, [orjson.loads(x) for x in data.splitlines()]


def qwen_calls(source: str, name: str, arguments, cwd: str = "/w/app") -> list[tuple[str, object]]:
    source_calls = registry.hook(source, "calls")
    return [(m.name, m.arguments) for m in translate(ToolCall("c1", name, arguments), source_calls, CALLS, cwd)]


def test_codex_calls_become_qwen_tools_with_their_argument_shapes():
    assert qwen_calls("codex", "exec_command", '{"cmd": "ls -a", "workdir": "/w/app"}') == \
        [("run_shell_command", {"command": "ls -a"})]
    assert qwen_calls("codex", "apply_patch", PATCH) == [
        ("write_file", {"file_path": "/w/app/new.txt", "content": "hello\n"}),
        ("edit", {"file_path": "/w/app/a.py", "old_string": "x = 1", "new_string": "x = 2"})]


def test_claude_calls_map_to_qwen_and_back_and_unknown_tools_keep_their_name():
    assert qwen_calls("claude-code", "Read", {"file_path": "/a", "offset": 3}) == \
        [("read_file", {"file_path": "/a", "offset": 3})]
    assert qwen_calls("claude-code", "Grep", {"pattern": "x", "output_mode": "content"}) == \
        [("grep_search", {"pattern": "x"})]
    edits = qwen_calls("claude-code", "MultiEdit", {"file_path": "/a", "edits": [{"old_string": "a", "new_string": "b"}] * 2})
    assert [n for n, _ in edits] == ["edit", "edit"]
    assert qwen_calls("claude-code", "mcp__x__y", {"a": 1}) == [("mcp__x__y", {"a": 1})]
    back = translate(ToolCall("c1", "run_shell_command", {"command": "ls", "description": "list"}), CALLS,
                     registry.hook("claude-code", "calls"), "/w/app")
    assert [(m.name, m.arguments) for m in back] == [("Bash", {"command": "ls", "description": "list"})]
    to_codex = translate(ToolCall("c1", "run_shell_command", {"command": "ls"}), CALLS, registry.hook("codex", "calls"),
                         "/w/app")
    assert [m.name for m in to_codex] == ["exec_command"]


def test_written_session_reads_back_with_calls_results_usage_and_no_foreign_reasoning(tmp_path):
    s = session("claude-code", [
        rec("user", Text("RUN: ls")),
        rec("assistant", Reasoning(text="think", signature="sig-bound-to-anthropic"), Text("Calling."),
            ToolCall("toolu_1", "Bash", {"command": "ls"}), kind="tool_call",
            usage={"input_tokens": 7, "cache_read_input_tokens": 3, "output_tokens": 5}),
        rec("user", ToolResult("toolu_1", "a\nb"), kind="tool_result"),
        rec("assistant", ToolCall("toolu_2", "Bash", {"command": "never answered"}), kind="tool_call"),
        rec("user", Text("next")),
        rec("user", ToolResult("toolu_9", "orphan"), kind="tool_result"),
    ])
    path, objs = convert(tmp_path, s)
    assert path.parent == tmp_path / "projects" / adapter.qwen_slug("/w/app") / "chats"
    assert [o["type"] for o in objs] == ["user", "assistant", "tool_result", "user"]
    assert b"sig-bound" not in path.read_bytes() and b'"thought"' not in path.read_bytes()
    call = objs[1]["message"]["parts"][1]["functionCall"]
    assert call == {"id": "toolu_1", "name": "run_shell_command", "args": {"command": "ls"}}
    assert objs[2]["message"]["parts"][0]["functionResponse"]["id"] == "toolu_1"
    assert objs[2]["toolCallResult"] == {"callId": "toolu_1", "status": "success"}
    assert objs[1]["usageMetadata"]["promptTokenCount"] == 10 and objs[1]["usageMetadata"]["cachedContentTokenCount"] == 3
    assert [o["parentUuid"] for o in objs[1:]] == [o["uuid"] for o in objs[:-1]]
    assert {o["cwd"] for o in objs} == {"/w/app"} and {o["sessionId"] for o in objs} == {path.stem}
    assert provenance.marker_of(path) == ("claude-code", s.id)
    read = adapter.read(path)
    assert adapter.serialize(read) == path.read_bytes()
    assert [r.kind for r in read.records] == ["message", "message", "tool_result", "message"]


def test_keep_reasoning_text_carries_it_as_plain_text(tmp_path):
    s = session("codex", [rec("user", Text("q")), rec("assistant", Reasoning(summary="why", encrypted="blob")),
                          rec("assistant", Text("a"))])
    _, objs = convert(tmp_path, s, keep_reasoning_text=True)
    assert objs[1]["message"]["parts"] == [{"text": "why"}, {"text": "a"}]


def test_usage_metadata_round_trips_through_canonical_usage():
    meta = {"promptTokenCount": 100, "candidatesTokenCount": 20, "thoughtsTokenCount": 4, "totalTokenCount": 124,
            "cachedContentTokenCount": 30}
    assert usage_from(meta) == {"input": 70, "cached": 30, "cache_write": 0, "output": 24, "reasoning": 4}
    assert usage_metadata(usage_from(meta)) == meta


def test_converting_again_finds_the_copy(isolated_homes, tmp_path):
    from histmig.cli import samples
    from histmig.api import plan_convert
    from histmig.verbs.convert import ConvertOptions
    homes = samples.install(tmp_path / "h", tools=("codex",))
    refs = [r for r in registry.adapter("codex").discover(homes) if "hello from the tool" in (r.title or "")]
    from histmig.apply import apply_plan
    plan, outs = plan_convert(homes, refs, ConvertOptions(target="qwen"))
    assert [o.status for o in outs] == ["convert"]
    apply_plan(plan, homes)
    _, again = plan_convert(homes, refs, ConvertOptions(target="qwen"))
    assert [o.status for o in again] == ["already"]
