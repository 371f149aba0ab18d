"""Bounded memory for Cline CLI (the rule of tests/test_memory.py), reader and writer: a Cline session of
~150 MB (many small messages and a few of 4 MB) is listed, shown (text and native), searched, exported,
diagnosed, moved, the move undone and the session converted to Codex; and a Codex rollout of 600,000
tiny lines is converted to Cline (a ~130 MB messages file). Each command runs in a child process whose
peak RSS stays under 200 MB. Before the writer streamed (tools/cline/write.py), ``convert --to cline``
built the whole messages list and its JSON text in memory: ~1.1 GB here, 7.3 GB for a 300 MB rollout."""
from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest

from memgen import THREAD, scratch_env, under_limit, zst_rollout

SID = "1796137263007_memry"


def big_cline_session(data: Path, cwd: str, size: int = 150 << 20, huge_every: int = 40_000,
                      huge_bytes: int = 4 << 20) -> Path:
    """``<data>/sessions/<SID>/``: a manifest and a messages file of ``size`` bytes as Cline writes it
    (``JSON.stringify(doc, null, 2)``): a prompt, a ``run_commands`` call, its result and an answer, over
    and over; every ``huge_every``-th result ``huge_bytes`` long."""
    folder = data / "sessions" / SID
    folder.mkdir(parents=True)
    path = folder / f"{SID}.messages.json"
    manifest = {"version": 1, "session_id": SID, "source": "cli", "pid": 1, "started_at": "2026-12-01T15:01:03.038Z",
                "ended_at": "2026-12-01T15:01:04.902Z", "exit_code": 0, "status": "completed", "interactive": False,
                "provider": "openai-compatible", "model": "fake-model", "cwd": cwd, "workspace_root": cwd,
                "prompt": "question 0", "metadata": {"title": "question 0"}, "messages_path": str(path)}
    (folder / f"{SID}.json").write_text(json.dumps(manifest, ensure_ascii=False, indent=2) + "\n")
    head = {"version": 1, "updated_at": "2026-12-01T15:01:04.746Z", "agent": "lead", "sessionId": SID}
    model = {"modelInfo": {"id": "fake-model", "provider": "openai-compatible"},
             "metrics": {"inputTokens": 1, "outputTokens": 1, "cacheReadTokens": 0, "cacheWriteTokens": 0}}
    huge = ("lorem ipsum dolor sit amet " * (huge_bytes // 27 + 1))[:huge_bytes]
    written, n = 0, 0
    with open(path, "wb") as fh:
        fh.write(json.dumps(head, indent=2)[:-2].encode() + b',\n  "messages": [\n')
        while written < size:
            ts, k = 1796137263674 + n, n % 4
            if k == 0:
                msg = {"id": f"u{n}", "role": "user", "content": [
                    {"type": "text", "text": f'<user_input mode="act">question {n}</user_input>'}], "ts": ts}
            elif k == 1:
                msg = {"id": f"a{n}", "role": "assistant", "content": [
                    {"type": "tool_use", "id": f"call_{n}", "name": "run_commands", "input": {"commands": [f"echo {n}"]}}],
                    "ts": ts, **model}
            elif k == 2:
                out = huge if n % huge_every == 2 else f"{n}"
                msg = {"id": f"r{n}", "role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": f"call_{n - 1}", "name": "run_commands",
                     "content": [{"query": f"echo {n - 1}", "result": out, "success": True}]}], "ts": ts}
            else:
                msg = {"id": f"a{n}", "role": "assistant", "content": [{"type": "text", "text": f"answer {n}"}],
                       "ts": ts, **model}
            data = (b",\n    " if n else b"    ") + orjson.dumps(msg, option=orjson.OPT_INDENT_2).replace(b"\n", b"\n    ")
            fh.write(data)
            written, n = written + len(data), n + 1
        fh.write(b'\n  ],\n  "system_prompt": "You are Cline."\n}\n')
    return path


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_a_big_cline_session_stays_under_200mb_read_moved_and_written(isolated_homes, tmp_path):
    env = scratch_env(isolated_homes, tmp_path, 3, "for the sessions, their converted copies and the spool")
    home = Path(isolated_homes["HOME"])
    app, moved = home / "w" / "app", home / "w" / "app2"
    app.mkdir(parents=True)
    cline_data = Path(isolated_homes["CLINE_DIR"]) / "data"
    messages = big_cline_session(cline_data, str(app))
    before = messages.read_bytes()[-4096:], messages.stat().st_size
    for args in (["scan", "--tool", "cline"], ["show", SID], ["show", SID, "--format", "native"],
                 ["search", "--no-index", "-s", "question 40000"],
                 ["export", "--to", "markdown", SID, "--out", str(tmp_path / "md")], ["doctor", "--tool", "cline"],
                 ["convert", "--to", "codex", SID, "--apply"]):
        under_limit(args, env, (0, 3))
    assert len(list(Path(isolated_homes["CODEX_HOME"]).glob("sessions/*/*/*/*.jsonl"))) == 1
    app.rename(moved)
    under_limit(["move", str(app), str(moved), "--tool", "cline", "--apply"], env)
    assert json.loads((messages.parent / f"{SID}.json").read_text())["cwd"] == str(moved)
    under_limit(["undo"], env)
    assert json.loads((messages.parent / f"{SID}.json").read_text())["cwd"] == str(app)
    assert (messages.read_bytes()[-4096:], messages.stat().st_size) == before     # never rewritten
    # the writer: a Codex rollout of 600,000 tiny lines (~130 MB of Cline JSON)
    zst_rollout(Path(isolated_homes["CODEX_HOME"]), str(moved), lines=600_000)
    under_limit(["convert", "--to", "cline", THREAD, "--apply"], env, (0, 3))
    written = [p for p in cline_data.glob("sessions/*/*.messages.json") if p != messages]
    assert len(written) == 1 and written[0].stat().st_size > 100 << 20
