"""Gemini CLI reader (histmig/tools/gemini): the recorded samples, the patch language, the legacy .json."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from clirun import histmig

from histmig.cli import samples
from histmig.core.model import Text, ToolCall, ToolResult, core
from histmig.tools import adapter, canonical
from histmig.tools.gemini import adapter as gem

SAMPLES = Path(samples.samples_root()) / "gemini"
FILES = sorted(SAMPLES.glob("*/tmp/*/chats/session-*.jsonl"))


def test_the_tool_is_in_the_table_with_its_aliases():
    assert canonical("gemini-cli") == "gemini" == canonical("Gemini")
    assert adapter("gemini").name == "gemini"


@pytest.mark.parametrize("path", FILES, ids=[f.parent.parent.parent.parent.name for f in FILES])
def test_every_recorded_file_round_trips_byte_for_byte_and_streams_the_same(path):
    s = gem.read(path)
    assert gem.serialize(s) == path.read_bytes()
    assert gem.detect(path)
    streamed = [(r.role, r.kind, r.parts) for r in gem.stream(path).records]
    assert streamed == [(r.role, r.kind, r.parts) for r in s.records]
    assert s.cwd and s.cwd.startswith("/tmp/histmig-rec/work/")


def test_a_recorded_tool_call_is_one_call_and_one_result_though_the_client_writes_the_result_twice():
    path = next((SAMPLES / "tool-call").rglob("session-*.jsonl"))
    s = gem.read(path)
    c = core(s)
    assert [k for k, *_ in c] == ["text", "tool_call", "tool_result", "text"]
    assert c[1][1] == "run_shell_command" and "echo hello from the tool" in c[1][2]
    assert "hello from the tool" in c[2][1]
    assert any(r.source_type == "repeated-function-response" for r in s.records)


def test_a_resumed_session_is_the_list_the_client_rebuilds():
    path = next((SAMPLES / "resumed").rglob("session-*.jsonl"))
    users = [x[2] for x in core(gem.read(path)) if x[:2] == ("text", "user")]
    assert users == ["Say hello in one short sentence.", "Thanks. Now say goodbye."]


def _write(tmp_path: Path, lines: list[dict | str], name="session-2026-01-02T03-04-abcdef12.jsonl") -> Path:
    chats = tmp_path / ".gemini" / "tmp" / "proj" / "chats"
    chats.mkdir(parents=True)
    (chats.parent / ".project_root").write_text("/work/proj")
    p = chats / name
    p.write_bytes(b"".join((ln if isinstance(ln, str) else json.dumps(ln)).encode() + b"\n" for ln in lines))
    return p


META = {"sessionId": "abcdef12-0000-4000-8000-000000000000", "projectHash": "x", "startTime": "2026-01-02T03:04:05Z",
        "lastUpdated": "2026-01-02T03:04:05Z", "kind": "main"}


def _user(i, text):
    return {"id": i, "timestamp": "2026-01-02T03:04:06Z", "type": "user", "content": [{"text": text}]}


def _model(i, text, **kw):
    return {"id": i, "timestamp": "2026-01-02T03:04:07Z", "type": "gemini", "content": text, **kw}


def test_last_wins_keeps_the_first_position_set_replaces_and_rewind_truncates(tmp_path):
    p = _write(tmp_path, [META, _user("u1", "one"), _model("a1", "first draft"), _user("u2", "two"),
                          _model("a1", "final answer"), {"$rewindTo": "u2"}, _user("u3", "three"),
                          {"$set": {"lastUpdated": "2026-01-03T00:00:00Z", "summary": "A title"}}])
    s = gem.read(p)
    assert [t for _k, _r, t, *_ in core(s)] == ["one", "final answer", "three"]
    assert s.title == "A title" and s.meta["lastUpdated"] == "2026-01-03T00:00:00Z" and s.cwd == "/work/proj"
    assert gem.serialize(s) == p.read_bytes()
    p2 = _write(tmp_path / "b", [META, _user("u1", "gone"), {"$set": {"messages": [_user("u9", "kept")]}},
                                 _model("a9", "after")])
    assert [t for _k, _r, t, *_ in core(gem.stream(p2))] == ["kept", "after"]


def test_tool_calls_and_thoughts_become_parts(tmp_path):
    call = {"id": "c1", "name": "run_shell_command", "args": {"command": "ls"}, "status": "success",
            "result": [{"functionResponse": {"id": "c1", "name": "run_shell_command", "response": {"output": "a b"}}}]}
    p = _write(tmp_path, [META, _user("u1", "list"), _model("a1", "", toolCalls=[call],
                                                             thoughts=[{"subject": "Plan", "description": "ls it"}])])
    recs = [r for r in gem.read(p).records if r.source_type == "resolved"]
    assert isinstance(recs[1].parts[-1], ToolCall) and recs[1].parts[0].summary == "Plan"
    assert isinstance(recs[2].parts[0], ToolResult) and recs[2].parts[0].output == "a b"


def test_broken_lines_are_counted_and_kept(tmp_path):
    p = _write(tmp_path, [META, _user("u1", "hi"), "{not json", _model("a1", "yo")])
    s = gem.read(p)
    assert gem.serialize(s) == p.read_bytes()
    assert len(s.warnings) == 1 and s.warnings[0].line == 3
    assert "1 broken line" in gem.ref_for(p).state


def test_the_older_whole_file_json_is_read_and_kept(tmp_path):
    chats = tmp_path / "tmp" / "proj" / "chats"
    chats.mkdir(parents=True)
    doc = dict(META, messages=[_user("u1", "legacy question"), _model("a1", "legacy answer")])
    p = chats / "session-2026-01-02T03-04-abcdef12.json"
    p.write_text(json.dumps(doc, indent=2))
    s = gem.read(p)
    assert gem.serialize(s) == p.read_bytes()
    assert [t for _k, _r, t, *_ in core(s)] == ["legacy question", "legacy answer"]
    assert gem.ref_for(p).title == "legacy question"


def _legacy(tmp_path: Path, text: str) -> Path:
    chats = tmp_path / "tmp" / "proj" / "chats"
    chats.mkdir(parents=True, exist_ok=True)
    p = chats / "session-2026-01-02T03-04-abcdef12.json"
    p.write_text(text)
    return p


CALL = {"id": "c1", "name": "run_shell_command", "args": {"command": "ls"}, "status": "success",
        "result": [{"functionResponse": {"id": "c1", "name": "run_shell_command", "response": {"output": "a b"}}}]}
REPEAT = {"id": "r1", "type": "user", "content": [{"functionResponse": CALL["result"][0]["functionResponse"]}]}


@pytest.mark.parametrize("indent", [None, 2, "\t"])
def test_the_legacy_json_streams_message_by_message_and_keeps_every_byte(tmp_path, indent):
    """Members after ``messages`` (summary), a tool call whose result the client repeats, a non-object
    element: the records read and streamed are the same, their bytes are the file, serialize gives it back."""
    doc = {"sessionId": META["sessionId"], "startTime": META["startTime"],
           "messages": [_user("u1", "q \"one\" [x]"), _model("a1", "", toolCalls=[CALL]), REPEAT, 7,
                        _model("a2", "done")], "summary": "the title"}
    p = _legacy(tmp_path, json.dumps(doc, indent=indent) + "\n")
    s, streamed = gem.read(p), gem.stream(p)
    assert gem.serialize(s) == gem.serialize(streamed) == p.read_bytes()
    assert b"".join(r.raw or b"" for r in streamed.records) == p.read_bytes()
    assert [(r.role, r.kind, r.parts) for r in streamed.records] == [(r.role, r.kind, r.parts) for r in s.records]
    assert [t for _k, _r, t, *_ in core(streamed)][:1] == ['q "one" [x]']
    assert s.title == "the title" and s.id == META["sessionId"] and s.records[0].extra["summary"] == "the title"
    ref = gem.ref_for(p)
    assert ref.title == "the title" and ref.messages == 3 and ref.extra["resumable"] is True


@pytest.mark.parametrize("text", ['{"sessionId": "x", "messages": [1, }', '{"messages": {"a": 1}}', '[1]',
                                  '{"messages": [], "sessionId": "s"}'])
def test_a_legacy_json_the_pull_reader_refuses_is_read_whole_as_before(tmp_path, text):
    p = _legacy(tmp_path, text)
    for s in (gem.read(p), gem.stream(p)):
        assert gem.serialize(s) == p.read_bytes()


def test_a_stub_without_a_prompt_is_listed_as_what_gemini_deletes(tmp_path):
    ctx = {"id": "c", "type": "user", "content": [{"text": "<session_context>\nx\n</session_context>"}]}
    p = _write(tmp_path, [META, {"$set": {"messages": [ctx]}}])
    ref = gem.ref_for(p)
    assert ref.extra["resumable"] is False and "deletes" in ref.state_text()
    assert all(not isinstance(x, Text) or x.injected for r in gem.read(p).records for x in r.parts)


def test_scan_and_show_read_the_installed_samples(tmp_path):
    samples.install(tmp_path / "home", tools=("gemini",))
    out = histmig("--home", tmp_path / "home", "scan", "--tool", "gemini")
    assert out.exit_code == 0 and "/tmp/histmig-rec/work/app" in out.stdout and "gemini" in out.stdout
    registry = json.loads((tmp_path / "home/.gemini/projects.json").read_text())["projects"]
    assert registry["/tmp/histmig-rec/work/app"] == "app" and len(registry) == 2
    sid = next((SAMPLES / "tool-call").rglob("session-*.jsonl")).name.rsplit("-", 1)[1][:8]
    shown = histmig("--home", tmp_path / "home", "show", sid)
    assert shown.exit_code == 0 and "run_shell_command" in shown.stdout and "hello from the tool" in shown.stdout


def test_the_scan_index_answers_for_unchanged_files_and_a_move_changes_the_cwd(tmp_path):
    from histmig.core.scanindex import ScanIndex
    from histmig.tools import resolve_homes
    homes = samples.install(tmp_path / "home", tools=("gemini",))
    index = ScanIndex.load(tmp_path / "state")
    first = sorted((r.id, r.cwd, r.title, r.messages) for r in gem.discover(homes, index=index))
    index.save()
    again = ScanIndex.load(tmp_path / "state")
    calls = []
    real_read = gem.read
    gem.read = lambda p: calls.append(p) or real_read(p)
    try:
        second = sorted((r.id, r.cwd, r.title, r.messages) for r in gem.discover(homes, index=again))
    finally:
        gem.read = real_read
    assert second == first and calls == []
    (tmp_path / "home/.gemini/tmp/app/.project_root").write_text("/elsewhere/app")
    moved = {r.cwd for r in gem.discover(resolve_homes(home=tmp_path / "home"), index=again)}
    assert "/elsewhere/app" in moved
