"""Bounded memory for the OpenCode reader (the rule of tests/test_memory.py): a session of 250 messages of
1 MB each in OpenCode's database is shown (text and native), searched, exported and converted, each in a
child process whose peak RSS stays under 200 MB. Before ``adapter.stream`` a session was read whole
(every message row and part row kept as a record's raw bytes): ~800 MB for this one."""
from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import orjson
import pytest

from memgen import scratch_env, under_limit

SAMPLE = Path(__file__).resolve().parents[1] / "histmig" / "samples" / "opencode" / "resumed" / "opencode.db"


def big_opencode_session(data_home: Path, cwd: str, messages: int = 250, text_bytes: int = 1 << 20) -> str:
    """The recorded sample database with ``messages`` more messages (one text part each) in its session."""
    folder = data_home / "opencode"
    folder.mkdir(parents=True)
    shutil.copy(SAMPLE, folder / "opencode.db")
    text = ("lorem ipsum dolor sit amet " * (text_bytes // 27 + 1))[:text_bytes]
    with sqlite3.connect(folder / "opencode.db") as con:
        sid = con.execute("SELECT id FROM session").fetchone()[0]
        con.execute("UPDATE session SET directory = ?, path = ?", (cwd, cwd.lstrip("/")))
        for n in range(messages):
            mid, ts = f"msg_3{n:011x}AAAAAAAAAAAAAA", 1796137270686 + n
            data = {"role": "user", "time": {"created": ts}, "agent": "build",
                    "model": {"providerID": "anthropic", "modelID": "claude-sonnet-4-5"}}
            if n % 2:
                data = {"parentID": f"msg_3{n - 1:011x}AAAAAAAAAAAAAA", "role": "assistant", "mode": "build",
                        "agent": "build", "path": {"cwd": cwd, "root": "/"}, "cost": 0.0,
                        "tokens": {"total": 2, "input": 1, "output": 1, "reasoning": 0, "cache": {"write": 0, "read": 0}},
                        "modelID": "claude-sonnet-4-5", "providerID": "anthropic",
                        "time": {"created": ts, "completed": ts}, "finish": "stop"}
            con.execute("INSERT INTO message VALUES (?, ?, ?, ?, ?)", (mid, sid, ts, ts, orjson.dumps(data).decode()))
            con.execute("INSERT INTO part VALUES (?, ?, ?, ?, ?, ?)", (f"prt_3{n:011x}AAAAAAAAAAAAAA", mid, sid, ts, ts,
                                                                      orjson.dumps({"type": "text", "text": text}).decode()))
    return sid


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_big_opencode_session_stays_under_200mb(isolated_homes, tmp_path):
    env = scratch_env(isolated_homes, tmp_path, 2, "for the database, its export and its converted copy")
    home = Path(isolated_homes["HOME"])
    app = home / "w" / "app"
    app.mkdir(parents=True)
    sid = big_opencode_session(Path(isolated_homes["XDG_DATA_HOME"]), str(app))
    for args in (["show", sid], ["show", sid, "--format", "native"], ["search", "--no-index", "-s", "lorem"],
                 ["export", "--to", "markdown", sid, "--out", str(tmp_path / "md")],
                 ["convert", "--to", "claude-code", sid, "--apply"]):
        under_limit(args, env, (0, 3))
    assert len(list(Path(isolated_homes["CLAUDE_CONFIG_DIR"]).glob("projects/*/*.jsonl"))) == 1
