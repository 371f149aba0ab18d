"""Converting to and from Cline CLI (tools/cline/write.py, tools/cline/calls.py): Cline's tool names and
argument shapes, ``name`` and list content on every tool result, wrapped user text, answered calls only,
reasoning never replayed to another provider, idempotent, and back through the reader losslessly."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from histmig import tools as registry
from histmig.cli import samples
from histmig.core.model import Reasoning, Session, Text, ToolCall, ToolResult, core
from histmig.toolkit.convert.calls import translate
from histmig.toolkit.convert.common import Target
from histmig.toolkit.convert.flatten import flatten
from histmig.toolkit.convert.ids import Ids
from histmig.tools.cline import adapter
from histmig.tools.cline.calls import CALLS
from histmig.tools.cline.write import new_id, write
from convert_fixtures import rec, session


def convert(tmp_path: Path, s: Session, **kw):
    ids = Ids(seed=1, now=1.8e9)
    sid = new_id(ids)
    conv = flatten(s)
    w = write(conv, Target(tmp_path, sid, s.cwd, ids, s.format, s.id, **kw))
    for path, data in w.files:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return w, conv


def test_ids_have_clines_shape():
    assert adapter.SID_RE.match(new_id(Ids(seed=3, now=1.8e9)))


def test_calls_map_to_cline_tools_and_back():
    def to_cline(source, name, args):
        return [(m.name, m.arguments) for m in translate(ToolCall("c", name, args), registry.hook(source, "calls"),
                                                          CALLS, "/w/app")]
    assert to_cline("codex", "exec_command", '{"cmd": "ls"}') == [("run_commands", {"commands": ["ls"]})]
    assert to_cline("claude-code", "Bash", {"command": "ls"}) == [("run_commands", {"commands": ["ls"]})]
    assert to_cline("claude-code", "Read", {"file_path": "/a"}) == [("read_files", {"files": [{"path": "/a"}]})]
    assert to_cline("claude-code", "Edit", {"file_path": "/a", "old_string": "x", "new_string": "y"}) == \
        [("editor", {"path": "/a", "old_text": "x", "new_text": "y"})]
    assert to_cline("claude-code", "mcp__x", {"a": 1}) == [("mcp__x", {"a": 1})]
    back = translate(ToolCall("c", "run_commands", {"commands": ["ls"]}), CALLS, registry.hook("claude-code", "calls"),
                     "/w/app")
    assert [(m.name, m.arguments.get("command")) for m in back] == [("Bash", "ls")]


def test_writer_shapes_results_and_drops_foreign_reasoning(tmp_path):
    s = session("claude-code", [
        rec("user", Text("hello")),
        rec("assistant", Reasoning(text="think", signature="SIG"), kind="reasoning"),
        rec("assistant", ToolCall("toolu_1", "Bash", {"command": "echo hi"}), kind="tool_call"),
        rec("tool", ToolResult("toolu_1", "hi\n"), kind="tool_result"),
        rec("assistant", ToolCall("toolu_2", "Bash", {"command": "never"}), kind="tool_call"),
        rec("assistant", Text("done")),
    ])
    w, conv = convert(tmp_path, s)
    manifest, messages = (json.loads(data) for _, data in w.files)
    msgs = messages["messages"]
    assert [m["role"] for m in msgs] == ["user", "assistant", "user", "assistant"]
    assert msgs[0]["content"] == [{"type": "text", "text": '<user_input mode="act">hello</user_input>'}]
    assert msgs[2]["content"] == [{"type": "tool_result", "tool_use_id": "toolu_1", "name": "run_commands",
                                   "content": [{"query": "echo hi", "result": "hi\n", "success": True}]}]
    assert "SIG" not in json.dumps(messages) and "never" not in json.dumps(messages)
    assert manifest["cwd"] == "/w/app" and manifest["messages_path"] == str(w.files[1][0])
    assert manifest["metadata"]["histmigProvenance"]["sourceSession"] == s.id
    again = adapter.read(w.files[1][0])      # read back: the same conversation
    assert core(again) == [("text", "user", "hello"), ("tool_call", "run_commands", '{"commands":["echo hi"]}'),
                           ("tool_result", "hi\n", False), ("text", "assistant", "done")]
    assert adapter.serialize(again) == w.files[1][1]


def test_convert_cli_is_idempotent_and_cline_converts_out(tmp_path):
    home = tmp_path / "h"
    samples.install(home, tools=("codex", "cline"))
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}

    def hm(*args):
        return subprocess.run([sys.executable, "-m", "histmig", "--home", str(home), "--state-dir",
                               str(tmp_path / "st"), *args], env=env, capture_output=True, text=True)
    first = hm("convert", "--to", "cline", "--from", "codex", "--apply")
    assert first.returncode in (0, 3), first.stdout + first.stderr
    again = hm("convert", "--to", "cline", "--from", "codex", "--apply")
    assert "converted 0 of" in again.stdout, again.stdout
    out = hm("convert", "--to", "codex", "--from", "cline", "--apply")
    assert out.returncode in (0, 3) and "converting cline" in out.stdout, out.stdout + out.stderr
