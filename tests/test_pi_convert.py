"""convert to and from Pi (histmig/tools/pi/write.py, calls.py): Pi's tools, usage on every assistant
message, UUIDv7 ids, the tree chain, provider-bound thinking, provenance, and a byte-exact read back."""
from __future__ import annotations

import shutil
import uuid
from pathlib import Path

import orjson
import pytest

from histmig import tools as registry
from histmig.cli import samples
from histmig.tools import resolve_homes
from histmig.tools.pi import adapter as pi
from histmig.verbs.convert import ConvertOptions
from histmig.verbs.convert.batches import plan_convert

SAMPLES = samples.samples_root()


def converted(tool: str, case: str, target: str = "pi", tmp: Path | None = None, **opts):
    root = tmp / "root"
    shutil.copytree(SAMPLES / tool / case, root / tool / case)
    homes = samples.install(tmp / "home", root=root, tools=(tool,))
    plan, outs = plan_convert(homes, list(registry.adapter(tool).discover(homes)), ConvertOptions(target, seed=5, **opts))
    creates = [op for op in plan.operations if op.kind == "create"]
    return homes, creates, outs


def entries(data: bytes) -> list[dict]:
    return [orjson.loads(x) for x in data.splitlines()]


@pytest.mark.parametrize("tool,case", [("codex", "tool-reasoning"), ("claude-code", "tool-thinking"),
                                       ("codex", "resumed"), ("claude-code", "resumed")])
def test_a_converted_session_is_a_well_formed_pi_tree(tool, case, tmp_path):
    homes, [op], [out] = converted(tool, case, tmp=tmp_path)
    es = entries(op.data)
    header = es[0]
    assert header["type"] == "session" and header["version"] == 3 and uuid.UUID(header["id"]).version == 7
    assert header["id"] == out.new_id and Path(op.path).name.endswith(f"_{out.new_id}.jsonl")
    assert Path(op.path).parent == homes.pi / "sessions" / ("--" + header["cwd"][1:].replace("/", "-") + "--")
    assert es[1]["customType"] == "histmig-provenance" and es[1]["data"]["sourceTool"] == tool
    ids = [e["id"] for e in es[1:]]
    assert len(set(ids)) == len(ids) and [e["parentId"] for e in es[1:]] == [None, *ids[:-1]]
    msgs = [e["message"] for e in es[2:]]
    assistants = [m for m in msgs if m["role"] == "assistant"]
    assert assistants and all(isinstance(m["usage"]["totalTokens"], int) and "cost" in m["usage"] for m in assistants)
    calls = [b for m in assistants for b in m["content"] if b["type"] == "toolCall"]
    assert calls and {c["name"] for c in calls} == {"bash"} and all(set(c["arguments"]) == {"command"} for c in calls)
    results = [m for m in msgs if m["role"] == "toolResult"]
    assert [r["toolCallId"] for r in results] == [c["id"] for c in calls] and {r["toolName"] for r in results} == {"bash"}
    assert [m["stopReason"] for m in assistants if any(b["type"] == "toolCall" for b in m["content"])] == ["toolUse"]
    path = tmp_path / "s.jsonl"
    path.write_bytes(op.data)
    assert pi.detect(path) and pi.serialize(pi.read(path)) == op.data


def test_thinking_keeps_its_signature_only_from_anthropic_and_says_where_it_came_from(tmp_path):
    _, [op], _ = converted("claude-code", "tool-thinking", tmp=tmp_path / "a")
    [turn] = [e["message"] for e in entries(op.data) if e.get("message", {}).get("content", [{}])[0].get("type") == "thinking"]
    assert turn["content"][0]["thinkingSignature"] and (turn["api"], turn["provider"]) == ("anthropic-messages", "anthropic")
    _, [op], [out] = converted("codex", "tool-reasoning", tmp=tmp_path / "b")
    msgs = [e["message"] for e in entries(op.data)[2:]]
    assert not any(b["type"] == "thinking" for m in msgs for b in m["content"] if isinstance(b, dict))
    assert {(m["api"], m["provider"]) for m in msgs if m["role"] == "assistant"} == {("openai-responses", "openai")}
    assert out.loss.to_dict()


def test_a_pi_session_converts_to_claude_code_and_codex_without_its_signature(tmp_path):
    for target in ("claude-code", "codex"):
        _, ops, [out] = converted("pi", "tool-thinking", target, tmp=tmp_path / target)
        data = b"".join(op.data for op in ops)
        assert out.status == "convert" and b"echo hello from the tool" in data
        assert b"ZmFrZXNpZz" not in data             # Pi's signed thinking (provider "fake") is not replayed


def test_converting_again_finds_the_earlier_conversion(tmp_path):
    from histmig.apply import apply_plan
    homes, _, _ = converted("codex", "plain", tmp=tmp_path)
    refs = list(registry.adapter("codex").discover(homes))
    plan, _ = plan_convert(homes, refs, ConvertOptions("pi", seed=5))
    assert apply_plan(plan, homes).exit_code == 0
    _, [again] = plan_convert(resolve_homes(home=homes.home), refs, ConvertOptions("pi", seed=6))
    assert again.status == "already"
    [ref] = pi.discover(homes)
    _, [back] = plan_convert(homes, [ref], ConvertOptions("claude-code", seed=6))
    assert back.code == "is-conversion"


def test_calls_map_to_pis_own_tools_and_back():
    from histmig.core.model import ToolCall
    from histmig.toolkit.convert.calls import translate
    from histmig.tools.claude_family.calls import CALLS as CLAUDE
    from histmig.tools.codex.calls import CALLS as CODEX
    from histmig.tools.pi.calls import CALLS as PI

    def one(name, args, source, target=PI):
        [m] = translate(ToolCall("t1", name, args), source, target, "/w")
        return m.name, m.arguments
    assert one("Bash", {"command": "ls", "timeout": 120000, "description": "d"}, CLAUDE) == \
        ("bash", {"command": "ls", "timeout": 120})
    assert one("Read", {"file_path": "/a", "offset": 3}, CLAUDE) == ("read", {"path": "/a", "offset": 3})
    assert one("MultiEdit", {"file_path": "/a", "edits": [{"old_string": "x", "new_string": "y"}]}, CLAUDE) == \
        ("edit", {"path": "/a", "edits": [{"oldText": "x", "newText": "y"}]})
    assert one("exec_command", '{"cmd": "ls -a"}', CODEX) == ("bash", {"command": "ls -a"})
    assert one("Grep", {"pattern": "x"}, CLAUDE) == ("Grep", {"pattern": "x"})
    assert one("edit", {"path": "/a", "edits": [{"oldText": "x", "newText": "y"}]}, PI, CLAUDE) == \
        ("Edit", {"file_path": "/a", "old_string": "x", "new_string": "y"})
    assert one("bash", {"command": "ls", "timeout": 5}, PI, CLAUDE) == ("Bash", {"command": "ls", "timeout": 5000})
    assert one("bash", {"command": "ls"}, PI, CODEX)[0] == "exec_command"


def test_a_branched_session_converts_its_active_branch_only(tmp_path, isolated_homes):
    """After ``/tree`` the file holds the abandoned branch too; the last entry is the leaf Pi continues."""
    import json
    from histmig.tools.pi.layout import pi_slug
    homes = resolve_homes()
    cwd = str(tmp_path)
    sid = "01a23020-314b-7782-b551-4f10209b9c80"

    def msg(id_, parent, role, text):
        m = {"role": role, "content": [{"type": "text", "text": text}], "timestamp": 1}
        if role == "assistant":
            m.update(api="anthropic-messages", provider="fake", model="m", usage={"input": 1, "output": 1,
                     "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2, "cost": {}}, stopReason="stop")
        return {"type": "message", "id": id_, "parentId": parent, "timestamp": "2026-12-01T05:42:26.000Z", "message": m}
    lines = [{"type": "session", "version": 3, "id": sid, "timestamp": "2026-12-01T05:42:25.868Z", "cwd": cwd},
             msg("a1", None, "user", "first"), msg("a2", "a1", "assistant", "answer one"),
             msg("b1", "a2", "user", "ABANDONED question"), msg("b2", "b1", "assistant", "ABANDONED answer"),
             {"type": "branch_summary", "id": "s1", "parentId": "a2", "timestamp": "2026-12-01T05:42:27.000Z",
              "fromId": "b2", "summary": "tried something"},
             msg("c1", "s1", "user", "second try"), msg("c2", "c1", "assistant", "answer two")]
    folder = homes.pi / "sessions" / pi_slug(cwd)
    folder.mkdir(parents=True)
    path = folder / f"2026-12-01T05-42-25-868Z_{sid}.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    assert pi.active_path(path) == {"a1", "a2", "s1", "c1", "c2"}
    assert pi.serialize(pi.read(path)) == path.read_bytes()           # the file itself is read whole
    plan, [out] = plan_convert(homes, list(pi.discover(homes)), ConvertOptions("claude-code", seed=1))
    data = b"".join(op.data for op in plan.operations if op.kind == "create")
    assert b"second try" in data and b"answer one" in data and b"ABANDONED" not in data
