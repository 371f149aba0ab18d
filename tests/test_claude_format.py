"""Claude Code adapter: byte-exact round trip, merging, parts, listing, sub-agents, long paths."""
from __future__ import annotations

import json
import os
from pathlib import Path

import orjson
import pytest

from histmig.tools.claude_family import blocks as anthropic
from histmig.tools.claude_code import adapter as cc
from histmig.tools import resolve_homes
from histmig.core.model import Attachment, Opaque, Reasoning, Text, ToolCall, ToolResult
from histmig.core.paths import claude_slug

SAMPLES = Path(__file__).resolve().parent.parent / "histmig" / "samples"


def claude_sample_files() -> list[Path]:
    """Every Claude transcript under samples/ (real recordings and hand-made broken ones)."""
    out = []
    for top in (SAMPLES / "claude-code", SAMPLES / "broken" / "claude-code"):
        out += [p for p in sorted(top.rglob("*.jsonl"))
                if "projects" in p.parts and "sessions" not in p.parts[-3:-1]]
    return out


@pytest.mark.parametrize("path", claude_sample_files(), ids=lambda p: str(p.relative_to(SAMPLES)))
def test_serialize_of_read_is_byte_identical_for_every_claude_sample(path):
    session = cc.read(path)
    assert cc.serialize(session) == path.read_bytes()
    for agent in session.subagents:
        assert cc.serialize(agent) == agent.path.read_bytes()


def test_the_sample_list_is_not_empty():
    assert len(claude_sample_files()) >= 9


# ---- a small synthetic Claude home ------------------------------------------------------------

SID = "5b1f3c2a-8d4e-4f6a-9b7c-0d1e2f3a4b5c"
CWD = "/home/user/work/app"
SIG = "EqQBCkYIBxgCKkDsample"


def env(sid=SID, cwd=CWD, **kw):
    return {"userType": "external", "entrypoint": "cli", "cwd": cwd, "sessionId": sid,
            "version": "2.1.197", "gitBranch": "main", **kw}


def user(uid, parent, content, sid=SID, cwd=CWD, **kw):
    return {"parentUuid": parent, "isSidechain": False, "type": "user",
            "message": {"role": "user", "content": content}, "uuid": uid,
            "timestamp": "2026-11-30T10:00:00.000Z", **kw, **env(sid, cwd)}


def assistant(uid, parent, mid, block, sid=SID, cwd=CWD, out=5):
    return {"parentUuid": parent, "isSidechain": False, "type": "assistant",
            "message": {"model": "claude-sonnet-4-5", "id": mid, "type": "message", "role": "assistant",
                        "content": [block], "stop_reason": None, "stop_sequence": None,
                        "usage": {"input_tokens": 3, "output_tokens": out}},
            "requestId": "req_" + mid, "uuid": uid, "timestamp": "2026-11-30T10:00:01.000Z", **env(sid, cwd)}


def write_jsonl(path: Path, objs) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(orjson.dumps(o) + b"\n" for o in objs))
    return path


def conversation(sid=SID, cwd=CWD):
    return [
        {"type": "queue-operation", "operation": "dequeue", "timestamp": "2026-11-30T10:00:00.000Z", "sessionId": sid},
        user("u0", None, "<command-name>/clear</command-name>", sid, cwd),
        user("u1", "u0", [{"type": "text", "text": "<system-reminder>ctx</system-reminder>"}], sid, cwd, isMeta=True),
        user("u2", "u1", "[Request interrupted by user]", sid, cwd),
        user("u3", "u2", [{"type": "text", "text": "list the files"},
                          {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBO"}}], sid, cwd),
        assistant("a1", "u3", "msg_1", {"type": "thinking", "thinking": "", "signature": SIG}, sid, cwd),
        assistant("a2", "a1", "msg_1", {"type": "text", "text": "Listing."}, sid, cwd),
        assistant("a3", "a2", "msg_1", {"type": "tool_use", "id": "toolu_1", "name": "Bash",
                                        "input": {"command": "ls"}}, sid, cwd, out=40),
        user("u4", "a3", [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "a.py\n", "is_error": False}],
             sid, cwd, toolUseResult={"stdout": "a.py\n", "stderr": "", "interrupted": False}),
        assistant("a4", "u4", "msg_2", {"type": "redacted_thinking", "data": "opaque"}, sid, cwd),
        assistant("a5", "a4", "msg_2", {"type": "text", "text": "One file: a.py"}, sid, cwd),
        {"type": "ai-title", "aiTitle": "Listing files", "sessionId": sid},
        {"type": "last-prompt", "lastPrompt": "list the files", "leafUuid": "a5", "sessionId": sid},
    ]


@pytest.fixture
def home(isolated_homes):
    return resolve_homes()


def session_path(home, cwd=CWD, sid=SID) -> Path:
    return cc.projects_root(home) / claude_slug(cwd) / f"{sid}.jsonl"


def test_adjacent_assistant_lines_with_one_message_id_become_one_record(home):
    path = write_jsonl(session_path(home), conversation())
    session = cc.read(path)
    merged = [r for r in session.records if r.role == "assistant"]
    assert [r.lines for r in merged] == [3, 2]
    lines = path.read_bytes().splitlines(keepends=True)
    assert merged[0].raw == b"".join(lines[5:8])
    assert merged[0].usage == {"input_tokens": 3, "output_tokens": 40}   # the last line's usage
    assert cc.serialize(session) == path.read_bytes()


def test_same_message_id_split_by_a_tool_result_is_not_merged(home):
    objs = [user("u1", None, "go"),
            assistant("a1", "u1", "msg_9", {"type": "tool_use", "id": "t1", "name": "Read", "input": {}}),
            user("u2", "a1", [{"type": "tool_result", "tool_use_id": "t1", "content": "x"}]),
            assistant("a2", "u2", "msg_9", {"type": "tool_use", "id": "t2", "name": "Read", "input": {}})]
    session = cc.read(write_jsonl(session_path(home), objs))
    assert [r.lines for r in session.records] == [1, 1, 1, 1]


def test_parts_mapping_keeps_signatures_tool_calls_structured_results_and_injected_context(home):
    session = cc.read(write_jsonl(session_path(home), conversation()))
    by_id = {r.id: r for r in session.records if r.id}
    assert by_id["u0"].parts == [Text("<command-name>/clear</command-name>", injected=True)]
    assert by_id["u1"].parts[0].injected                                   # isMeta
    assert by_id["u2"].parts[0].injected
    assert by_id["u3"].parts[0] == Text("list the files")
    assert isinstance(by_id["u3"].parts[1], Attachment) and by_id["u3"].parts[1].media_type == "image/png"
    thinking, text, call = by_id["a1"].parts
    assert thinking == Reasoning(text="", signature=SIG)
    assert text == Text("Listing.")
    assert call == ToolCall("toolu_1", "Bash", {"command": "ls"})
    assert by_id["a1"].kind == "tool_call"
    result = by_id["u4"].parts[0]
    assert isinstance(result, ToolResult) and result.output == "a.py\n" and result.is_error is False
    assert result.structured == {"stdout": "a.py\n", "stderr": "", "interrupted": False}
    assert by_id["a4"].parts[0] == Reasoning(redacted=True, encrypted="opaque")
    assert session.title == "Listing files" and session.model == "claude-sonnet-4-5"
    assert session.meta["entrypoint"] == "cli" and session.cwd == CWD


def test_unknown_blocks_and_record_types_are_kept(home):
    objs = [{"type": "mystery-type", "x": 1},
            user("u1", None, [{"type": "server_tool_use", "id": "s1"}])]
    path = write_jsonl(session_path(home), objs)
    session = cc.read(path)
    assert session.records[0].source_type == "mystery-type" and session.records[0].kind == "event"
    assert isinstance(session.records[1].parts[0], Opaque)
    assert cc.serialize(session) == path.read_bytes()


def test_evolved_record_is_reencoded_alone_in_claude_key_order(home):
    path = write_jsonl(session_path(home), conversation())
    session = cc.read(path)
    idx = next(i for i, r in enumerate(session.records) if r.id == "u3")
    session.records[idx] = session.records[idx].evolve(parts=[Text("list all files")])
    out = cc.serialize(session).splitlines(keepends=True)
    old = path.read_bytes().splitlines(keepends=True)
    assert [i for i, (a, b) in enumerate(zip(out, old)) if a != b] == [idx]
    line = out[idx]
    assert line.startswith(b'{"parentUuid":"u2","isSidechain":false,"type":"user"')
    assert b'"uuid":"u3","timestamp":"' in line
    obj = json.loads(line)
    assert obj["message"] == {"role": "user", "content": [{"type": "text", "text": "list all files"}]}
    assert {k: v for k, v in obj.items() if k != "message"} == \
        {k: v for k, v in json.loads(old[idx]).items() if k != "message"}


def test_unsigned_reasoning_is_never_encoded_as_thinking():
    assert anthropic.part_to_block(Reasoning(text="why")) == {"type": "text", "text": "why"}
    assert anthropic.part_to_block(Reasoning(text="", signature="S"))["type"] == "thinking"


# ---- listing ------------------------------------------------------------------------------------

def test_ref_reports_cwd_title_messages_entrypoint_and_broken_lines(home):
    path = write_jsonl(session_path(home), conversation())
    with open(path, "ab") as fh:
        fh.write(b'{"type":"user","trunc\n')
    [ref] = list(cc.discover(home))
    assert ref.cwd == CWD and ref.id == SID
    assert ref.title == "Listing files"
    # u0..u4 are five user records; a1-a3 and a4-a5 are two assistant messages
    assert ref.messages == 7 == cc.count_messages(cc.read(path).records)
    assert ref.extra["entrypoint"] == "cli"
    assert ref.state == ["1 broken line"]


def test_title_falls_back_to_the_first_real_prompt(home):
    objs = [o for o in conversation() if o.get("type") not in ("ai-title",)]
    write_jsonl(session_path(home), objs)
    [ref] = list(cc.discover(home))
    assert ref.title == "list the files"   # not the /clear echo, the reminder or the interruption


def test_custom_title_wins_over_ai_title(home):
    objs = conversation() + [{"type": "custom-title", "customTitle": "My name", "sessionId": SID}]
    write_jsonl(session_path(home), objs)
    assert next(cc.discover(home)).title == "My name"


def test_sdk_sessions_are_marked_hidden_from_the_picker(home):
    objs = [user("u1", None, "hi")]
    objs[0]["entrypoint"] = "sdk-cli"
    write_jsonl(session_path(home), objs)
    ref = next(cc.discover(home))
    assert ref.extra["picker_hidden"] == "entrypoint sdk-cli"


def test_discover_reads_only_head_and_tail_of_a_big_file(home, monkeypatch):
    filler = [user(f"f{i}", None, "x" * 1000) for i in range(300)]
    objs = conversation()[:5] + filler + [{"type": "custom-title", "customTitle": "At the end", "sessionId": SID}]
    path = write_jsonl(session_path(home), objs)
    assert path.stat().st_size > 2 * cc.HEAD_TAIL
    exact = cc.count_messages(cc.read(path).records)

    def whole_file_read(*a, **k):
        raise AssertionError("discover parsed the whole file")
    monkeypatch.setattr(cc, "read_lines", whole_file_read)
    ref = next(cc.discover(home))
    # the count comes from a byte search over the rest (issue 15), never from parsing every line
    assert ref.cwd == CWD and ref.title == "At the end" and ref.messages == exact > 300


def test_raw_cwd_is_found_even_when_the_line_does_not_parse(home):
    path = session_path(home)
    path.parent.mkdir(parents=True)
    path.write_bytes(b'{"parentUuid":null,"cwd":"/srv/x","type":"user","message":{"role":"user","conte\n')
    ref = next(cc.discover(home))
    assert ref.cwd == "/srv/x" and ref.state == ["1 broken line"]


def test_unreadable_file_becomes_a_ref_with_an_error(home):
    folder = cc.projects_root(home) / "-x"
    folder.mkdir(parents=True)
    target = folder / "target.txt"
    target.write_text("{}\n")
    os.symlink(target, folder / f"{SID}.jsonl")
    [ref] = list(cc.discover(home))
    assert ref.error and "symlink" in ref.error


# ---- sub-agents ---------------------------------------------------------------------------------

def test_subagent_files_are_attached_to_their_parent_and_never_listed(home):
    main = write_jsonl(session_path(home), conversation())
    folder = main.parent
    side = dict(user("s1", None, "sub task"), isSidechain=True, agentId="a0123456789abcdef")
    a = write_jsonl(folder / SID / "subagents" / "agent-a0123456789abcdef.jsonl", [side])
    (folder / SID / "subagents" / "agent-a0123456789abcdef.meta.json").write_text('{"agentType":"general"}')
    b = write_jsonl(folder / SID / "subagents" / "workflow" / "agent-abeef.jsonl", [side])
    c = write_jsonl(folder / "agent-3569d9ad.jsonl", [side])                    # 2.0 era, this session
    other = dict(side, sessionId="99999999-9999-4999-8999-999999999999")
    write_jsonl(folder / "agent-77777777.jsonl", [other])                       # 2.0 era, another session
    refs = list(cc.discover(home))
    assert [r.path for r in refs] == [main]
    assert refs[0].extra["subagents"] == 3
    session = cc.read(main)
    assert sorted(s.path for s in session.subagents) == sorted([a, b, c])
    assert all(s.parent_id == SID for s in session.subagents)
    assert cc.detect(a) and cc.detect(c)


def test_a_warm_listing_counts_subagents_as_the_walk_finds_them_now(home, tmp_path):
    """A listing answered by the scan index counts sub-agents as a cold one does, and never from the
    index: a ``<sid>/subagents/`` tree made after the index was written is counted; a session with
    neither a ``<sid>`` entry nor a 2.0-era agent file beside it has none (no folder walked)."""
    from histmig.core.scanindex import ScanIndex
    main = write_jsonl(session_path(home), conversation())
    folder = main.parent
    lone = write_jsonl(folder / "11111111-1111-4111-8111-111111111111.jsonl", conversation())
    side = dict(user("s1", None, "sub task"), isSidechain=True, agentId="a0123456789abcdef")
    index = ScanIndex(str(tmp_path / "a.idx"))

    def listed() -> dict:
        cold = {os.fspath(r.path): r.extra.get("subagents") for r in cc.discover(home)}
        warm = {os.fspath(r.path): r.extra.get("subagents") for r in cc.discover(home, index=index)}
        assert warm == cold
        return cold
    assert listed() == {str(main): None, str(lone): None}
    write_jsonl(folder / SID / "subagents" / "agent-a0123456789abcdef.jsonl", [side])
    assert listed() == {str(main): 1, str(lone): None}
    write_jsonl(folder / "agent-3569d9ad.jsonl", [side])                       # 2.0 era, names SID
    assert listed() == {str(main): 2, str(lone): None}
    from histmig.tools.claude_code.listing import FIELDS
    assert index.hit(str(main), main.stat(), None, FIELDS) is not None         # the rows came from the index


# ---- project folders ----------------------------------------------------------------------------

LONG = "/home/user/" + "/".join(f"a-very-long-folder-name-{i:02d}" for i in range(9)) + "/app"


def test_long_path_folder_is_found_by_prefix_and_recorded_cwd(home):
    root = cc.projects_root(home)
    prefix = claude_slug(LONG)[:200]
    assert len(claude_slug(LONG)) > 200
    bun = write_jsonl(root / (prefix + "-1x2y3z") / f"{SID}.jsonl", conversation(cwd=LONG))
    sibling_cwd = LONG + "-other"                       # same first 200 slug characters
    assert claude_slug(sibling_cwd)[:200] == prefix
    sid2 = "6c2a4b3d-9e5f-4a7b-8c9d-1e2f3a4b5c6d"
    write_jsonl(root / (prefix + "-9q8w7e") / f"{sid2}.jsonl", conversation(sid2, sibling_cwd))
    assert cc.project_dirs(root, LONG) == [bun.parent]
    assert [r.id for r in cc.sessions_for_cwd(home, LONG)] == [SID]
    exact = write_jsonl(root / claude_slug(LONG) / f"{sid2}.jsonl", conversation(sid2, LONG))
    assert set(cc.project_dirs(root, LONG)) == {bun.parent, exact.parent}


def test_a_slug_folder_holding_two_cwds_reports_each_sessions_own_cwd(home):
    a, b = "/home/me/t_bat/w", "/home/me/t-bat/w"
    assert claude_slug(a) == claude_slug(b)
    sid2 = "6c2a4b3d-9e5f-4a7b-8c9d-1e2f3a4b5c6d"
    write_jsonl(session_path(home, a, SID), conversation(SID, a))
    write_jsonl(session_path(home, b, sid2), conversation(sid2, b))
    refs = {r.id: r.cwd for r in cc.discover(home)}
    assert refs == {SID: a, sid2: b}
    assert [r.id for r in cc.sessions_for_cwd(home, a)] == [SID]
    assert [r.id for r in cc.sessions_for_cwd(home, b)] == [sid2]


def test_detect_tells_claude_from_mini_cc_files(home, tmp_path):
    claude = write_jsonl(session_path(home), conversation())
    mini = write_jsonl(tmp_path / "projects" / "-x" / f"{SID}.jsonl",
                       [{"type": "user", "uuid": "u", "parentUuid": None, "sessionId": SID,
                         "timestamp": "2026-10-22T09:55:53.674+00:00", "cwd": "/x",
                         "message": {"role": "user", "content": "hi"}}])
    assert cc.detect(claude) and not cc.detect(mini)
    assert not cc.detect(tmp_path / "projects" / "-x" / "sessions" / "s" / "transcript.jsonl")


# ---- side stores (histmig.tools.claude_code.files) --------------------------------------------------

from histmig.tools.claude_code import files as cf  # noqa: E402


def test_claude_json_may_lack_projects_or_be_missing(home):
    assert cf.read_claude_json(home).raw is None and cf.read_claude_json(home).error is None
    home.claude_json.parent.mkdir(parents=True, exist_ok=True)
    home.claude_json.write_text('{"numStartups": 3}')
    assert cf.read_claude_json(home).project_keys == []
    home.claude_json.write_text('{"projects": {"/home/user/work/app": {}, "/home/user/work/app2": {}, "/srv": {}}}')
    cj = cf.read_claude_json(home)
    assert cj.project_keys == ["/home/user/work/app", "/home/user/work/app2", "/srv"]
    assert cf.project_keys_under(cj, "/home/user/work/app") == ["/home/user/work/app"]
    home.claude_json.write_text('{"projects": ')
    assert cf.read_claude_json(home).error == "not valid JSON"


def test_history_projects_are_counted_and_broken_lines_kept(home):
    path = cf.history_path(home)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b'{"display":"a","timestamp":1,"project":"/p","sessionId":"s1"}\n'
                     b'{"display":"b","timestamp":2,"project":"/p"}\n'
                     b'{"display":"c","proj\n'
                     b'{"display":"d","timestamp":3,"project":"/q","sessionId":"s2"}\n')
    assert cf.history_projects(home) == {"/p": 2, "/q": 1}
    entries = list(cf.iter_history(home))
    assert b"".join(e.line.raw for e in entries) == path.read_bytes()
    assert entries[2].project is None and entries[0].session_id == "s1"


def test_live_registry_tells_live_from_dead_pids(home):
    import subprocess
    import sys
    folder = home.claude / "sessions"
    folder.mkdir(parents=True)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    (folder / f"{os.getpid()}.json").write_text(json.dumps({"pid": os.getpid(), "sessionId": "live-1", "cwd": "/a"}))
    (folder / f"{dead.pid}.json").write_text(json.dumps({"pid": dead.pid, "sessionId": "dead-1", "cwd": "/a"}))
    (folder / "junk.json").write_text("{")
    entries, warnings = cf.live_registry(home)
    assert {e.session_id: e.alive for e in entries} == {"live-1": True, "dead-1": False}
    assert [w.code for w in warnings] == ["claude-live-registry-unreadable"]
    assert cf.live_session_ids(home) == {"live-1"}


# ---- recorded real-client samples (samples/claude-code/<case>/ is a config home) ---------------

def real_cases() -> list[Path]:
    top = SAMPLES / "claude-code"
    return sorted(d for d in top.iterdir() if (d / "projects").is_dir()) if top.is_dir() else []


@pytest.mark.parametrize("case", real_cases(), ids=lambda p: p.name)
def test_real_sample_folders_are_named_by_the_slug_of_the_recorded_cwd(case):
    from types import SimpleNamespace
    refs = list(cc.discover(SimpleNamespace(claude=case)))
    assert refs and all(r.error is None for r in refs)
    for ref in refs:
        assert ref.path.parent.name == claude_slug(ref.cwd)
        assert ref.messages == cc.count_messages(cc.read(ref).records)


@pytest.mark.parametrize("case", real_cases(), ids=lambda p: p.name)
def test_real_sample_subagents_are_attached_not_listed(case):
    from types import SimpleNamespace
    agent_files = sorted(case.rglob("agent-*.jsonl"))
    refs = list(cc.discover(SimpleNamespace(claude=case)))
    assert not any(r.path.name.startswith("agent-") for r in refs)
    attached = sorted(s.path for r in refs for s in cc.read(r).subagents)
    assert attached == agent_files
