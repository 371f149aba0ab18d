"""apply_patch parsing/rendering and the tool-schema mapping between Codex and Claude, through the
neutral call vocabulary (histmig/toolkit/convert/calls.py) and each tool's ``calls`` hook."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from histmig.core.model import ToolCall
from histmig.toolkit.convert import calls as tools
from histmig.tools.claude_family.calls import CALLS as CLAUDE
from histmig.tools.codex.calls import CALLS as CODEX
from histmig.toolkit.convert.patch import FileOp, hunk_from_strings, parse_patch, render_patch

PATCH = ("*** Begin Patch\n*** Update File: src/a.py\n@@ def f():\n x = 1\n-y = 2\n+y = 3\n"
         "*** Add File: b.txt\n+hello\n*** Delete File: c\n*** End Patch\n")

line = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\n\r"), max_size=12)
block = st.lists(line, min_size=1, max_size=6).map("\n".join)


def test_parse_then_render_gives_the_same_patch():
    ops = parse_patch(PATCH)
    assert [(o.kind, o.path) for o in ops] == [("update", "src/a.py"), ("add", "b.txt"), ("delete", "c")]
    assert ops[0].hunks[0].header == "def f():" and ops[1].content == "hello\n"
    assert render_patch(ops) == PATCH


def test_parse_accepts_heredoc_wrapping_and_a_first_hunk_without_marker():
    ops = parse_patch("apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: a\n-x\n+y\n*** End Patch\nEOF\n")
    assert ops[0].hunks[0].old() == "x" and ops[0].hunks[0].new() == "y"


@settings(max_examples=200)
@given(block, block)
def test_edit_strings_survive_patch_and_back_exactly(old, new):
    hunk = hunk_from_strings(old, new)
    text = render_patch([FileOp("update", "f.txt", hunks=[hunk])])
    [op] = parse_patch(text)
    assert op.hunks[0].old() == old and op.hunks[0].new() == new


def codex_to_claude(name, arguments, cwd):
    return tools.translate(ToolCall("call_1", name, arguments), CODEX, CLAUDE, cwd)


def claude_to_codex(name, arguments, cwd, structured=None):
    [mapped] = tools.translate(ToolCall("toolu_1", name, arguments), CLAUDE, CODEX, cwd, structured)
    return mapped


def test_codex_shell_calls_become_bash_with_claude_schema():
    assert codex_to_claude("exec_command", {"cmd": "ls"}, "/w")[0].arguments == {"command": "ls"}
    assert codex_to_claude("shell", {"command": ["bash", "-lc", "echo hi"]}, "/w")[0].arguments == {"command": "echo hi"}
    assert codex_to_claude("shell", {"command": ["ls", "a b"]}, "/w")[0].arguments == {"command": "ls 'a b'"}
    m = codex_to_claude("local_shell_call", {"type": "exec", "command": ["pwd"], "working_directory": "/other"}, "/w")[0]
    assert m.name == "Bash" and m.arguments == {"command": "cd /other && pwd"}
    assert ("approximated", "shell workdir folded into the Bash command") in m.notes


def test_apply_patch_maps_to_write_and_edits_or_stays_apply_patch():
    calls = codex_to_claude("apply_patch", PATCH.replace("*** Delete File: c\n", ""), "/w")
    assert [(c.name, c.arguments["file_path"]) for c in calls] == [("Edit", "/w/src/a.py"), ("Write", "/w/b.txt")]
    kept = codex_to_claude("apply_patch", PATCH, "/w")     # a delete has no Edit/Write form
    assert [c.name for c in kept] == ["apply_patch"] and kept[0].arguments == {"input": PATCH}


def test_claude_edit_write_multiedit_become_correct_patches():
    m = claude_to_codex("Edit", {"file_path": "/w/a.py", "old_string": "a\nb", "new_string": "a\nc"}, "/w")
    assert m.name == "apply_patch" and m.arguments == "*** Begin Patch\n*** Update File: a.py\n@@\n a\n-b\n+c\n*** End Patch\n"
    m = claude_to_codex("Write", {"file_path": "/elsewhere/n.md", "content": "x\ny\n"}, "/w")
    assert m.arguments == "*** Begin Patch\n*** Add File: /elsewhere/n.md\n+x\n+y\n*** End Patch\n"
    m = claude_to_codex("MultiEdit", {"file_path": "/w/a", "edits": [{"old_string": "1", "new_string": "2"},
                                                                           {"old_string": "3", "new_string": "4"}]}, "/w")
    assert [(o.kind, len(o.hunks)) for o in parse_patch(m.arguments)] == [("update", 2)]


def test_structured_patch_from_tool_use_result_gives_whole_line_hunks():
    structured = {"structuredPatch": [{"oldStart": 3, "oldLines": 2, "newStart": 3, "newLines": 2,
                                       "lines": ["     x = foo(1)", "-    y = 2", "+    y = 3"]}]}
    m = claude_to_codex("Edit", {"file_path": "/w/a.py", "old_string": "2", "new_string": "3"}, "/w", structured)
    assert m.arguments == "*** Begin Patch\n*** Update File: a.py\n@@\n     x = foo(1)\n-    y = 2\n+    y = 3\n*** End Patch\n"


def test_bash_and_todowrite_map_to_codex_tools():
    assert claude_to_codex("Bash", {"command": "ls", "description": "x"}, "/w").arguments == {"cmd": "ls"}
    m = claude_to_codex("TodoWrite", {"todos": [{"content": "a", "status": "completed", "activeForm": "A"}]}, "/w")
    assert m.name == "update_plan" and m.arguments == {"plan": [{"step": "a", "status": "completed"}]}
    assert claude_to_codex("Read", {"file_path": "/w/x"}, "/w").arguments == {"file_path": "/w/x"}


def test_tool_ids_are_made_valid_and_unique_for_anthropic():
    taken: set[str] = set()
    assert tools.safe_tool_id("call:1/x", taken, "t") == "call_1_x"
    assert tools.safe_tool_id("call_1_x", taken, "t") == "call_1_x_2"


# ---- the neutral vocabulary: a call that goes out and comes back is the same call ----------------------

# a file's name: not "." or ".." (``/w/.`` is the folder /w itself, no file an edit could name)
path = line.filter(lambda s: s.strip() not in ("", ".", "..") and "/" not in s).map(lambda s: f"/w/{s.strip()}")
claude_calls = st.one_of(
    st.builds(lambda p, o, n, r: ("Edit", {"file_path": p, "old_string": o, "new_string": n} | r),
              path, block, block, st.sampled_from([{}, {"replace_all": True}])),
    st.builds(lambda p, es: ("MultiEdit", {"file_path": p, "edits": [{"old_string": o, "new_string": n} for o, n in es]}),
              path, st.lists(st.tuples(block, block), min_size=2, max_size=4)),
    st.builds(lambda p, c: ("Write", {"file_path": p, "content": c}), path, block),
    st.builds(lambda p, extra: ("Read", {"file_path": p} | extra), path,
              st.fixed_dictionaries({}, optional={"offset": st.integers(0, 10**6), "limit": st.integers(1, 10**6)})),
    st.builds(lambda todos: ("TodoWrite", {"todos": todos}), st.lists(st.fixed_dictionaries(
        {"content": line, "status": st.sampled_from(["pending", "in_progress", "completed"]), "activeForm": line}),
        max_size=4)),
    st.builds(lambda c, extra: ("Bash", {"command": c} | extra), block,
              st.fixed_dictionaries({}, optional={"timeout": st.integers(1, 600000), "description": line})),
)


@settings(max_examples=300)
@given(claude_calls)
def test_a_claude_call_through_the_neutral_vocabulary_comes_back_unchanged(call):
    name, args = call
    [back] = tools.translate(ToolCall("toolu_1", name, args), CLAUDE, CLAUDE, "/w")
    assert (back.name, back.arguments) == (name, args)


@settings(max_examples=200)
@given(path, block, block)
def test_a_claude_edit_through_codex_and_back_is_the_same_edit(p, old, new):
    from hypothesis import assume
    assume(old and old != new)             # a pure insertion has no anchor an Edit could use
    mapped = claude_to_codex("Edit", {"file_path": p, "old_string": old, "new_string": new}, "/w")
    [back] = tools.translate(ToolCall("call_1", mapped.name, mapped.arguments), CODEX, CLAUDE, "/w")
    assert (back.name, back.arguments) == ("Edit", {"file_path": p, "old_string": old, "new_string": new})
