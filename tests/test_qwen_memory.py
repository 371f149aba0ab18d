"""Bounded memory for the Qwen Code reader and writer (the rule of tests/test_memory.py): a 400 MB Qwen
session of 1 MB lines is listed, shown, diagnosed, moved and converted, each in a child process whose peak
RSS stays under 200 MB."""
from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from histmig.tools.qwen.adapter import qwen_slug
from memgen import scratch_env, under_limit

SID = "00000000-0000-4000-8000-00000000a11e"


def big_qwen_session(qwen_home: Path, cwd: str, size: int = 400 << 20, line_bytes: int = 1 << 20) -> Path:
    folder = qwen_home / "projects" / qwen_slug(cwd) / "chats"
    folder.mkdir(parents=True)
    path = folder / f"{SID}.jsonl"
    text = ("lorem ipsum dolor sit amet " * (line_bytes // 27 + 1))[:line_bytes]
    parent, written, n = None, 0, 0
    with open(path, "wb") as fh:
        while written < size:
            uid = f"00000000-0000-4000-8000-{n:012d}"
            rec = {"uuid": uid, "parentUuid": parent, "sessionId": SID, "timestamp": "2026-11-30T04:55:44.000Z",
                   "type": "user" if n % 2 == 0 else "assistant", "cwd": cwd, "version": "0.24.4",
                   "message": {"role": "user" if n % 2 == 0 else "model", "parts": [{"text": text}]}}
            if n % 2:
                rec["usageMetadata"] = {"promptTokenCount": 1, "candidatesTokenCount": 1, "totalTokenCount": 2}
            line = orjson.dumps(rec) + b"\n"
            fh.write(line)
            written, parent, n = written + len(line), uid, n + 1
    return path


@pytest.mark.slow
def test_a_big_qwen_session_stays_under_200mb(isolated_homes, tmp_path):
    env = scratch_env(isolated_homes, tmp_path, 2, "for the session, its moved and converted copies")
    home = Path(isolated_homes["HOME"])
    app = home / "w" / "app"
    app.mkdir(parents=True)
    big_qwen_session(Path(isolated_homes["QWEN_HOME"]), str(app))
    for args in (["scan", "--tool", "qwen"], ["show", SID[:8]], ["show", SID[:8], "--format", "native"],
                 ["doctor", "--tool", "qwen"], ["move", str(app), str(home / "w" / "app2"), "--apply"],
                 ["convert", "--to", "claude-code", SID[:8], "--apply"], ["convert", "--to", "qwen", "--again", "--from",
                                                                         "claude-code", "--apply"]):
        under_limit(args, env, (0, 3))
    assert len(list(Path(isolated_homes["QWEN_HOME"]).glob("projects/*/chats/*.jsonl"))) == 2   # moved + converted back
