"""Pi adapter: byte-exact round trip of the recorded samples, the entry tree (compaction, branch
summaries, broken lines), listing from the default layout and from a flat session dir."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from clirun import histmig
from histmig.core.model import Reasoning, Text, ToolCall, ToolResult
from histmig.tools import canonical, resolve_homes
from histmig.tools.pi import adapter as pi
from histmig.tools.pi.layout import pi_slug

SAMPLES = Path(__file__).resolve().parent.parent / "histmig" / "samples" / "pi"
HEADER = {"type": "session", "version": 3, "id": "01a23020-314b-7782-b551-4f10209b9c80",
          "timestamp": "2026-12-01T05:42:25.868Z", "cwd": "/w/app"}


def pi_sample_files() -> list[Path]:
    return sorted(SAMPLES.rglob("*.jsonl"))


@pytest.mark.parametrize("path", pi_sample_files(), ids=lambda p: str(p.relative_to(SAMPLES)))
def test_serialize_of_read_is_byte_identical_for_every_pi_sample(path):
    assert pi.detect(path)
    assert pi.serialize(pi.read(path)) == path.read_bytes()
    assert pi.serialize(pi.stream(path)) == path.read_bytes()


def test_the_slug_is_pis_own_rule():
    assert pi_slug("/home/user/proj/pi-a") == "--home-user-proj-pi-a--"
    assert pi_slug("/tmp/my app/データ") == "--tmp-my app-データ--"     # only / \\ : change
    assert pi_slug("C:\\w\\app") == "--C--w-app--"


def test_aliases_name_the_tool():
    assert canonical("pi-coding-agent") == canonical("PI") == "pi"


def test_tool_call_signed_thinking_and_result_map_to_parts():
    path = next((SAMPLES / "tool-thinking").rglob("*.jsonl"))
    s = pi.read(path)
    assert s.id == "01a231e8-dbc9-72dc-ab4c-66ac0ee6d950" and s.cwd == "/tmp/histmig-rec-pi/work/app"
    assert (s.provider, s.model) == ("fake", "fake-model")
    call = next(r for r in s.records if r.kind == "tool_call")
    thinking, text, tc = call.parts
    assert isinstance(thinking, Reasoning) and thinking.signature and isinstance(text, Text)
    assert isinstance(tc, ToolCall) and tc.name == "bash" and tc.arguments == {"command": "echo hello from the tool"}
    assert call.usage["totalTokens"] == 15
    result = next(r for r in s.records if r.kind == "tool_result")
    assert isinstance(result.parts[0], ToolResult) and result.parts[0].call_id == tc.call_id
    assert result.parent_id == call.id
    assert s.title == "RUN: echo hello from the tool"


def write_tree(path: Path, entries: list, *, broken: bytes = b"") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    body = b"".join(json.dumps(e, separators=(",", ":")).encode() + b"\n" for e in entries)
    path.write_bytes(body + broken)
    return path


def entry(type_: str, id_: str, parent: str | None, **kw) -> dict:
    return {"type": type_, "id": id_, "parentId": parent, "timestamp": "2026-12-01T05:42:26.000Z", **kw}


def user(id_: str, parent: str | None, text: str) -> dict:
    return entry("message", id_, parent, message={"role": "user", "content": text, "timestamp": 1})


TREE = [HEADER, user("a1", None, "first"),
        entry("compaction", "c1", "a1", summary="what happened so far", firstKeptEntryId="a1", tokensBefore=900),
        entry("branch_summary", "b1", "c1", fromId="a1", summary="the abandoned branch"),
        user("a2", "b1", "second"), entry("label", "l1", "a2", targetId="a2", label="x"),
        entry("message", "m1", "a2", message={"role": "bashExecution", "command": "ls", "output": "x"})]


def test_compaction_and_branch_entries_are_summaries_and_broken_lines_are_kept(tmp_path):
    path = write_tree(tmp_path / "s.jsonl", TREE, broken=b'{"type":"message","id":\n\n')
    s = pi.read(path)
    kinds = [(r.source_type, r.kind) for r in s.records]
    assert kinds[:4] == [("session", "event"), ("message/user", "message"), ("compaction", "summary"),
                         ("branch_summary", "summary")]
    assert s.records[2].parts == [Text("what happened so far", injected=True)]
    assert [r.parent_id for r in s.records[1:5]] == [None, "a1", "c1", "b1"]
    assert [r.opaque for r in s.records[-2:]] == [True, False]         # the broken line, then the blank one
    assert [w.code for w in s.warnings] == ["broken-line"]
    assert pi.serialize(s) == path.read_bytes()
    ref = pi.ref_for(path)
    assert ref.state == ["1 broken line"] and ref.cwd == "/w/app" and ref.title == "first"


def test_a_file_without_a_header_is_not_listed(tmp_path):
    path = write_tree(tmp_path / "x.jsonl", [user("a1", None, "no header")])
    assert not pi.detect(path) and pi.ref_for(path) is None


def test_scan_lists_the_default_layout_and_the_flat_session_dir(isolated_homes, monkeypatch, tmp_path):
    homes = resolve_homes()
    write_tree(homes.pi / "sessions" / pi_slug("/w/app") / "2026-12-01T05-42-25-868Z_a.jsonl", TREE)
    flat = tmp_path / "flat"
    other = dict(HEADER, id="01a23020-e3a6-751b-a649-39706fda5997", cwd="/w/other")
    write_tree(flat / "imported.jsonl", [other, user("a1", None, "in the flat dir")])
    assert [r.id for r in pi.discover(resolve_homes())] == [HEADER["id"]]
    monkeypatch.setenv("PI_CODING_AGENT_SESSION_DIR", str(flat))
    assert [r.cwd for r in pi.discover(resolve_homes())] == ["/w/app", "/w/other"]
    monkeypatch.delenv("PI_CODING_AGENT_SESSION_DIR")
    (homes.pi / "settings.json").write_text(json.dumps({"sessionDir": str(flat)}))
    assert resolve_homes().pi_sessions == flat
    out = histmig("scan", "--tool", "pi-coding-agent")
    assert out.exit_code == 0 and "in the flat dir" in out.stdout and "first" in out.stdout
    assert resolve_homes(home=tmp_path / "h").pi == tmp_path / "h" / ".pi" / "agent"


def test_show_prints_the_conversation(isolated_homes):
    homes = resolve_homes()
    shutil.copytree(SAMPLES / "resumed" / "sessions", homes.pi / "sessions")
    out = histmig("show", "01a231e8-e673")
    assert out.exit_code == 0
    assert "RUN: ls -a" in out.stdout and "→ bash" in out.stdout and "Thanks. Now summarise" in out.stdout


def test_a_big_session_is_counted_exactly_and_the_scan_index_answers_the_second_time(isolated_homes):
    homes = resolve_homes()
    n = 1500          # ~200 KB: past the 128 KB a listing reads at its two ends
    entries = [HEADER] + [user(f"{i:08x}", f"{i - 1:08x}" if i else None, f"prompt {i} " + "x" * 100) for i in range(n)]
    path = write_tree(homes.pi / "sessions" / pi_slug("/w/app") / "big.jsonl", entries)
    assert path.stat().st_size > 2 * pi.HEAD_TAIL
    ref = pi.ref_for(path)
    assert ref.messages == n and ref.title.startswith("prompt 0")
    out = histmig("scan", "--tool", "pi", "--json")
    again = histmig("scan", "--tool", "pi", "--json")
    assert json.loads(out.stdout)["sessions"] == json.loads(again.stdout)["sessions"]
    assert json.loads(again.stdout)["sessions"][0]["messages"] == n
    with open(path, "ab") as fh:                # grown: counted again from where the last count stopped
        fh.write(json.dumps(user("ffffffff", f"{n - 1:08x}", "one more"), separators=(",", ":")).encode() + b"\n")
    assert json.loads(histmig("scan", "--tool", "pi", "--json").stdout)["sessions"][0]["messages"] == n + 1
