"""Converting to Copilot CLI (tools/copilot/write.py, tools/copilot/calls.py): native session-state files,
Copilot's tool names, answered calls only, reasoning never replayed to another provider, the event chain,
provenance, and a converted session read back by the reader."""
from __future__ import annotations

from pathlib import Path

import orjson

from histmig import tools as registry
from histmig.core.model import Reasoning, Session, Text, ToolCall, ToolResult
from histmig.toolkit.convert.calls import translate
from histmig.toolkit.convert.common import Target
from histmig.toolkit.convert.flatten import flatten
from histmig.toolkit.convert.ids import Ids
from histmig.tools.copilot import adapter, provenance, workspace
from histmig.tools.copilot.calls import CALLS
from histmig.tools.copilot.write import write
from convert_fixtures import rec, session


def convert(tmp_path: Path, s: Session, **kw):
    ids = Ids(seed=1, now=1.8e9)
    w = write(flatten(s), Target(tmp_path, ids.uuid4(), s.cwd, ids, s.format, s.id, **kw))
    for path, data in w.files:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    events = w.files[0][0]
    return events, [orjson.loads(x) for x in events.read_bytes().splitlines()]


def claude_session() -> Session:
    return session("claude-code", [
        rec("user", Text("RUN: echo hi")),
        rec("assistant", Reasoning(text="thinking", signature="sig"), Text("Running."),
            ToolCall("toolu_1", "Bash", {"command": "echo hi", "description": "say hi"})),
        rec("user", ToolResult("toolu_1", "hi\n"), kind="tool_result"),
        rec("assistant", Text("It printed hi.")),
        rec("assistant", ToolCall("toolu_2", "Bash", {"command": "never answered"})),
    ])


def test_events_are_chained_and_shaped_as_the_client_writes_them(tmp_path):
    path, events = convert(tmp_path, claude_session())
    assert [e["type"] for e in events] == [
        "session.start", "user.message", "assistant.turn_start", "assistant.message", "tool.execution_start",
        "tool.execution_complete", "assistant.turn_end", "assistant.turn_start", "assistant.message",
        "assistant.turn_end"]
    assert [e["parentId"] for e in events[1:]] == [e["id"] for e in events[:-1]] and events[0]["parentId"] is None
    msg = events[3]["data"]
    assert msg["content"] == "Running." and msg["toolRequests"] == [
        {"toolCallId": "toolu_1", "name": "bash", "arguments": {"command": "echo hi", "description": "say hi"},
         "type": "function"}]
    assert events[5]["data"]["toolCallId"] == "toolu_1" and events[5]["data"]["result"] == {"content": "hi\n"}
    assert b"sig" not in path.read_bytes() and b"never answered" not in path.read_bytes()
    ws = workspace.parse((path.parent / "workspace.yaml").read_bytes())
    assert ws["cwd"] == "/w/app" and ws["id"] == path.parent.name and ws["name"] == "RUN: echo hi"


def test_a_converted_session_reads_back_and_names_its_source(tmp_path):
    path, _ = convert(tmp_path, claude_session())
    back = adapter.read(path)
    assert adapter.serialize(back) == path.read_bytes()
    texts = [p.text for r in back.records for p in r.parts if isinstance(p, Text)]
    assert texts == ["RUN: echo hi", "Running.", "It printed hi."]
    assert provenance.marker_of(path) == ("claude-code", "00000000-0000-4000-8000-0000000000aa")
    assert list(provenance.files(tmp_path / "session-state")) == [path]


def test_reasoning_text_is_carried_only_when_asked(tmp_path):
    _, events = convert(tmp_path, claude_session(), keep_reasoning_text=True)
    assert events[3]["data"]["content"] == "thinking\n\nRunning."


def calls(source: str, name: str, arguments) -> list[tuple[str, object]]:
    return [(m.name, m.arguments)
            for m in translate(ToolCall("c1", name, arguments), registry.hook(source, "calls"), CALLS, "/w/app")]


def test_codex_and_claude_calls_become_copilot_tools():
    assert calls("codex", "exec_command", '{"cmd": "ls -a", "workdir": "/w/app"}') == \
        [("bash", {"command": "ls -a", "description": "run a command"})]
    assert calls("claude-code", "Write", {"file_path": "/a", "content": "x"}) == [("create", {"path": "/a", "file_text": "x"})]
    assert calls("claude-code", "Edit", {"file_path": "/a", "old_string": "a", "new_string": "b"}) == \
        [("edit", {"path": "/a", "old_str": "a", "new_str": "b"})]
    assert calls("claude-code", "Read", {"file_path": "/a"}) == [("view", {"path": "/a"})]
    assert calls("claude-code", "mcp__x__y", {"a": 1}) == [("mcp__x__y", {"a": 1})]


def test_copilot_calls_become_codex_and_claude_tools():
    assert [m.name for m in translate(ToolCall("c", "bash", {"command": "ls", "description": "d"}), CALLS,
                                    registry.hook("claude-code", "calls"), "/w/app")] == ["Bash"]
    assert [m.name for m in translate(ToolCall("c", "bash", {"command": "ls", "description": "d"}), CALLS,
                                    registry.hook("codex", "calls"), "/w/app")] == ["exec_command"]
