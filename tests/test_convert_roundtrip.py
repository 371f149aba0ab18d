"""Property: core(A -> B -> A) == core(A) for sessions using only kinds both formats store
(user and assistant text, shell tool calls and their text results), through real files and the
real read adapters, for every direction the issue names."""
from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from histmig import tools as registry
from histmig.toolkit.convert.common import Target
from histmig.toolkit.convert.flatten import flatten
from histmig.toolkit.convert.ids import Ids
from histmig.core.model import Record, Session, Text, ToolCall, ToolResult, core
from histmig.verbs.convert import WRITERS

PAIRS = [("codex", "claude-code"), ("claude-code", "codex"), ("claude-code", "mini-cc"), ("mini-cc", "claude-code"),
         ("claude-code", "manifest"), ("manifest", "claude-code"), ("codex", "mini-cc"), ("mini-cc", "codex"),
         ("qwen", "claude-code"), ("qwen", "codex"), ("qwen", "mini-cc")]

words = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9 .,!?é]{0,30}", fullmatch=True).map(str.strip).filter(bool)
command = st.from_regex(r"[a-z]{1,8}( -[a-z]{1,3})?( [a-z./]{1,10})?", fullmatch=True)
step = st.tuples(st.one_of(st.none(), words), command, words)          # (text before, command, output)
turn = st.tuples(words, st.lists(step, max_size=2), words)             # (prompt, tool steps, answer)


def synthetic(turns, cwd: str) -> Session:
    recs: list[Record] = []
    ts = iter(f"2026-09-01T10:{m:02d}:{s:02d}.000Z" for m in range(60) for s in range(60))
    n = 0
    for prompt, steps, answer in turns:
        recs.append(Record(kind="message", role="user", timestamp=next(ts), parts=[Text(prompt)]))
        for before, cmd, output in steps:
            n += 1
            parts = ([Text(before)] if before else []) + [ToolCall(f"toolu_{n}", "Bash", {"command": cmd})]
            recs.append(Record(kind="tool_call", role="assistant", timestamp=next(ts), parts=parts))
            recs.append(Record(kind="tool_result", role="user", timestamp=next(ts), parts=[ToolResult(f"toolu_{n}", output)]))
        recs.append(Record(kind="message", role="assistant", timestamp=next(ts), parts=[Text(answer)]))
    return Session(id="00000000-0000-4000-8000-000000000001", format="claude-code", cwd=cwd,
                   created="2026-09-01T10:00:00.000Z", records=recs)


def write_as(session: Session, fmt: str, root: Path, n: int) -> Session:
    """Convert ``session`` to ``fmt`` on disk and read it back with the real adapter."""
    home = root / f"{n}-{fmt}"
    home.mkdir()
    ids = Ids(seed=n, now=1.8e9)
    sid = ids.uuid7() if fmt == "codex" else ids.uuid4()
    conv = flatten(session, getattr(registry.adapter(session.format), "usage_of", None))
    w = WRITERS[fmt](conv, Target(home, sid, session.cwd, ids, session.format, session.id))
    for path, data in w.files:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    main = next(p for p, _ in w.files if p.name != "meta.json")
    return registry.adapter(fmt).read(main)


@pytest.mark.parametrize("a,b", PAIRS)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(turns=st.lists(turn, min_size=1, max_size=3))
def test_core_survives_a_round_trip(a, b, turns):
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        cwd = str(root / "proj")
        original = write_as(synthetic(turns, cwd), a, root, 1)
        there = write_as(original, b, root, 2)
        back = write_as(there, a, root, 3)
        assert core(original) and core(back) == core(original)


def test_the_generator_produces_tool_calls_that_reach_the_core():
    s = synthetic([("hi", [(None, "ls", "out")], "done")], "/w")
    assert [c[0] for c in core(s)] == ["text", "tool_call", "tool_result", "text"]
