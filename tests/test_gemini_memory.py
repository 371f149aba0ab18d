"""Bounded memory for the Gemini CLI reader (issue 16; the rule of tests/test_memory.py): a Gemini session
of many small lines -- each message kept where the log's replay can find it, past ``records.SPILL_AT``
messages on disk -- is listed, shown, searched, diagnosed and converted, each in a child process whose
peak RSS stays under 200 MB (the replay held ~400 bytes a message in memory before: ~250 MB here)."""
from __future__ import annotations

import shutil
from pathlib import Path

import orjson
import pytest

from histmig.cli.samples import samples_root
from memgen import scratch_env, under_limit

MESSAGES = 550_000
SID8 = "1962fdfc"


def big_gemini_session(home: Path, messages: int = MESSAGES) -> Path:
    """The unicode-cwd sample with ``messages`` small messages appended (a ``$set lastUpdated`` line every
    ten, ids scattered as UUIDs are), then one redefinition of an early message and a rewind."""
    gemini = home / ".gemini"
    shutil.copytree(samples_root() / "gemini" / "unicode-cwd", gemini)
    path = next(gemini.glob("tmp/*/chats/session-*.jsonl"))
    ts = "2026-12-01T14:03:20.000Z"

    def mid(i: int) -> str:
        return f"{i * 2654435761 % 2**32:08x}-0000-4000-8000-{i:012d}"
    with open(path, "ab") as fh:
        block = []
        for i in range(messages):
            if i % 2 == 0:
                msg = {"id": mid(i), "timestamp": ts, "type": "user", "content": [{"text": f"question {i}"}]}
            else:
                msg = {"id": mid(i), "timestamp": ts, "type": "gemini", "content": f"answer {i}", "thoughts": [],
                       "tokens": {"input": 1, "output": 1, "cached": 0, "thoughts": 0, "tool": 0, "total": 2},
                       "model": "gemini-2.5-flash"}
            block.append(orjson.dumps(msg))
            if i % 10 == 9:
                block.append(b'{"$set":{"lastUpdated":"2026-12-01T14:03:20.000Z"}}')
            if len(block) >= 10_000:
                fh.write(b"\n".join(block) + b"\n")
                block = []
        block.append(orjson.dumps({"id": mid(3), "timestamp": ts, "type": "gemini", "content": "redefined"}))
        block.append(orjson.dumps({"$rewindTo": mid(messages - 2)}))
        fh.write(b"\n".join(block) + b"\n")
    return path


@pytest.mark.slow
def test_a_long_gemini_session_stays_under_200mb(isolated_homes, tmp_path):
    env = scratch_env(isolated_homes, tmp_path, 2, "for the session, its converted copy and the replay's temporary store")
    big_gemini_session(Path(isolated_homes["GEMINI_CLI_HOME"]))
    for args in (["scan", "--tool", "gemini"], ["show", SID8, "--format", "text"], ["show", SID8, "--format", "native"],
                 ["search", "--no-index", "-s", "question 549996"], ["doctor", "--tool", "gemini"],
                 ["convert", "--to", "claude-code", SID8, "--apply"]):
        under_limit(args, env, (0, 1, 3))      # 1: doctor found something (retention)
    assert len(list(Path(isolated_homes["CLAUDE_CONFIG_DIR"]).glob("projects/*/*.jsonl"))) == 1
