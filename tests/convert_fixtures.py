"""Small native sessions, written the way each real client writes them, for the convert tests."""
from __future__ import annotations

import json
import os
from pathlib import Path

import orjson
import pytest

from histmig.core.model import Record, Session
from histmig.tools import resolve_homes

CODEX_ID = "019e9625-802f-7e91-840a-cfe88d14117a"
CLAUDE_ID = "3a7770b4-aba3-46dd-b677-8fc2d71d4e06"
MINI_ID = "6ec7a169-ab5d-4f12-bf8d-16f92f2c50f4"

PATCH = ("*** Begin Patch\n*** Update File: src/app.py\n@@ def main():\n     x = 1\n-    y = 2\n+    y = 3\n"
         "*** Add File: NOTES.md\n+hello\n+world\n*** End Patch\n")


def _line(ts: str, type_: str, payload: dict) -> dict:
    return {"timestamp": ts, "type": type_, "payload": payload}


def codex_lines(cwd: str, sid: str = CODEX_ID, provider: str = "openai") -> list[dict]:
    t = "2026-06-05T04:58:2{}.{:03d}Z".format
    usage = {"input_tokens": 1200, "cached_input_tokens": 1000, "output_tokens": 50,
             "reasoning_output_tokens": 20, "total_tokens": 1250}
    return [
        _line(t(0, 653), "session_meta", {"id": sid, "timestamp": t(0, 593), "cwd": cwd, "originator": "codex_exec",
                                          "cli_version": "0.171.0", "source": "exec", "model_provider": provider,
                                          "base_instructions": {"text": "You are Codex."},
                                          "git": {"branch": "main", "commit_hash": "abc"}}),
        _line(t(1, 0), "response_item", {"type": "message", "role": "developer",
                                         "content": [{"type": "input_text", "text": "<permissions>sandboxed</permissions>"}]}),
        _line(t(1, 1), "response_item", {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": f"<environment_context>\n  <cwd>{cwd}</cwd>\n</environment_context>"}]}),
        _line(t(1, 2), "turn_context", {"cwd": cwd, "approval_policy": "never", "sandbox_policy": {"type": "read-only"},
                                        "model": "gpt-5.5", "summary": "auto"}),
        _line(t(1, 3), "response_item", {"type": "message", "role": "user",
                                         "content": [{"type": "input_text", "text": "list the files please"}]}),
        _line(t(1, 3), "event_msg", {"type": "user_message", "message": "list the files please", "images": [],
                                     "local_images": [], "text_elements": []}),
        _line(t(2, 0), "response_item", {"type": "reasoning", "summary": [{"type": "summary_text", "text": "**Listing**"}],
                                         "content": None, "encrypted_content": "gAAAAABsecret"}),
        _line(t(2, 1), "response_item", {"type": "function_call", "name": "exec_command",
                                         "arguments": json.dumps({"cmd": "ls -la", "workdir": cwd}), "call_id": "call_ls1"}),
        _line(t(2, 2), "event_msg", {"type": "token_count", "info": {"total_token_usage": usage, "last_token_usage": usage,
                                                                     "model_context_window": 258400}, "rate_limits": None}),
        _line(t(3, 0), "response_item", {"type": "function_call_output", "call_id": "call_ls1",
                                         "output": "Chunk ID: 1\nWall time: 0.0 seconds\nProcess exited with code 0\nOutput:\nREADME.md\nsrc\n"}),
        _line(t(3, 5), "response_item", {"type": "custom_tool_call", "status": "completed", "call_id": "call_p1",
                                         "name": "apply_patch", "input": PATCH}),
        _line(t(3, 6), "response_item", {"type": "custom_tool_call_output", "call_id": "call_p1",
                                         "output": "Success. Updated the following files:\nM src/app.py\nA NOTES.md\n"}),
        _line(t(4, 0), "event_msg", {"type": "agent_message", "message": "There are two entries.", "phase": "final_answer",
                                     "memory_citation": None}),
        _line(t(4, 1), "response_item", {"type": "message", "role": "assistant",
                                         "content": [{"type": "output_text", "text": "There are two entries."}],
                                         "phase": "final_answer"}),
        _line(t(4, 2), "event_msg", {"type": "token_count", "info": {"total_token_usage": usage, "last_token_usage": usage,
                                                                     "model_context_window": 258400}, "rate_limits": None}),
    ]


def write_codex(codex_home: Path, cwd: str, sid: str = CODEX_ID, lines: list[dict] | None = None) -> Path:
    path = codex_home / "sessions/2026/06/05" / f"rollout-2026-06-05T04-58-20-{sid}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(orjson.dumps(o) + b"\n" for o in (lines or codex_lines(cwd, sid))))
    return path


def _env(cwd: str, sid: str) -> dict:
    return {"userType": "external", "entrypoint": "cli", "cwd": cwd, "sessionId": sid, "version": "2.1.197",
            "gitBranch": "main"}


def claude_lines(cwd: str, sid: str = CLAUDE_ID) -> list[dict]:
    u = [f"00000000-0000-4000-8000-00000000000{i}" for i in range(8)]
    usage = {"input_tokens": 3, "cache_creation_input_tokens": 100, "cache_read_input_tokens": 900, "output_tokens": 40}
    asst = {"model": "claude-opus-4-1", "id": "msg_01A", "type": "message", "role": "assistant",
            "stop_reason": None, "stop_sequence": None, "usage": usage}
    asst2 = dict(asst, id="msg_01B")
    return [
        {"type": "file-history-snapshot", "messageId": u[0], "snapshot": {"messageId": u[0], "trackedFileBackups": {},
                                                                          "timestamp": "2026-03-20T19:06:50.000Z"}, "isSnapshotUpdate": False},
        {"parentUuid": None, "isSidechain": False, "type": "user", "message": {"role": "user", "content": "what is in here?"},
         "uuid": u[0], "timestamp": "2026-03-20T19:06:50.100Z", **_env(cwd, sid)},
        {"parentUuid": u[0], "isSidechain": False, "type": "assistant",
         "message": dict(asst, content=[{"type": "thinking", "thinking": "", "signature": "EsUCsig"}]),
         "uuid": u[1], "timestamp": "2026-03-20T19:06:51.000Z", **_env(cwd, sid)},
        {"parentUuid": u[1], "isSidechain": False, "type": "assistant",
         "message": dict(asst, content=[{"type": "text", "text": "Let me look."}]),
         "uuid": u[2], "timestamp": "2026-03-20T19:06:51.100Z", **_env(cwd, sid)},
        {"parentUuid": u[2], "isSidechain": False, "type": "assistant",
         "message": dict(asst, content=[{"type": "tool_use", "id": "toolu_01", "name": "Bash",
                                         "input": {"command": "ls", "description": "List files"}}], stop_reason="tool_use"),
         "uuid": u[3], "timestamp": "2026-03-20T19:06:51.200Z", **_env(cwd, sid)},
        {"parentUuid": u[3], "isSidechain": False, "type": "user",
         "message": {"role": "user", "content": [{"tool_use_id": "toolu_01", "type": "tool_result", "content": "README.md\nsrc",
                                                  "is_error": False}]},
         "uuid": u[4], "timestamp": "2026-03-20T19:06:52.000Z",
         "toolUseResult": {"stdout": "README.md\nsrc", "stderr": "", "interrupted": False, "isImage": False}, **_env(cwd, sid)},
        {"parentUuid": u[4], "isSidechain": False, "type": "assistant",
         "message": dict(asst2, content=[{"type": "tool_use", "id": "toolu_02", "name": "Edit",
                                          "input": {"file_path": f"{cwd}/src/app.py", "old_string": "y = 2", "new_string": "y = 3"}}],
                         stop_reason="tool_use"),
         "uuid": u[5], "timestamp": "2026-03-20T19:06:53.000Z", **_env(cwd, sid)},
        {"parentUuid": u[5], "isSidechain": False, "type": "user",
         "message": {"role": "user", "content": [{"tool_use_id": "toolu_02", "type": "tool_result",
                                                  "content": "The file has been updated."}]},
         "uuid": u[6], "timestamp": "2026-03-20T19:06:54.000Z", **_env(cwd, sid)},
        {"parentUuid": u[6], "isSidechain": False, "type": "assistant",
         "message": dict(asst2, id="msg_01C", content=[{"type": "text", "text": "Two entries; y is now 3."}], stop_reason="end_turn"),
         "uuid": u[7], "timestamp": "2026-03-20T19:06:55.000Z", **_env(cwd, sid)},
    ]


def claude_slug_dir(claude_home: Path, cwd: str) -> Path:
    from histmig.core.paths import claude_slug
    return claude_home / "projects" / claude_slug(os.path.realpath(cwd))


def write_claude(claude_home: Path, cwd: str, sid: str = CLAUDE_ID, lines: list[dict] | None = None) -> Path:
    path = claude_slug_dir(claude_home, cwd) / f"{sid}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(orjson.dumps(o) + b"\n" for o in (lines or claude_lines(cwd, sid))))
    return path


def mini_lines(cwd: str, sid: str = MINI_ID) -> list[dict]:
    u = [f"10000000-0000-4000-8000-00000000000{i}" for i in range(4)]
    head = lambda i, parent, ts: {"uuid": u[i], "parentUuid": parent, "sessionId": sid, "timestamp": ts, "cwd": cwd}  # noqa: E731
    return [
        {"type": "user", **head(0, None, "2026-10-22T09:55:53.674+00:00"),
         "message": {"role": "user", "content": "记一下：测试命令是 npm test"}},
        {"type": "assistant", **head(1, u[0], "2026-10-22T09:55:55.000+00:00"),
         "message": {"role": "assistant", "content": [{"type": "thinking", "thinking": "note it", "signature": "sigM"},
                                                      {"type": "tool_use", "id": "toolu_m1", "name": "Bash",
                                                       "input": {"command": "npm test"}}]},
         "usage": {"input_tokens": 100, "output_tokens": 20}},
        {"type": "user", **head(2, u[1], "2026-10-22T09:55:56.000+00:00"),
         "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_m1", "content": "ok"}]}},
        {"type": "assistant", **head(3, u[2], "2026-10-22T09:55:57.000+00:00"),
         "message": {"role": "assistant", "content": [{"type": "text", "text": "记住了。"}]},
         "usage": {"input_tokens": 100, "output_tokens": 20}},
    ]


def write_mini(mini_home: Path, cwd: str, sid: str = MINI_ID, lines: list[dict] | None = None) -> Path:
    from histmig.core.paths import claude_slug
    path = mini_home / "projects" / claude_slug(cwd) / f"{sid}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(orjson.dumps(o) + b"\n" for o in (lines or mini_lines(cwd, sid))))
    return path


MANIFEST_ID = "7b1c0d2e-3f40-4a5b-8c6d-7e8f90a1b2c3"


def write_manifest(claude_home: Path, cwd: str, sid: str = MANIFEST_ID) -> Path:
    from histmig.core.paths import claude_slug
    d = claude_home / "projects" / claude_slug(cwd) / "sessions" / sid
    d.mkdir(parents=True, exist_ok=True)
    meta = {"sessionId": sid, "projectPath": cwd, "cwd": cwd, "cliVersion": "0.3.0", "model": "claude-sonnet-4",
            "createdAt": "2026-09-01T10:00:00.000Z", "updatedAt": "2026-09-01T10:00:09.000Z"}
    (d / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    lines = [
        {"ts": "2026-09-01T10:00:00.000Z", "role": "user", "payload": {"message": {"role": "user", "content": "run the tests"}}},
        {"ts": "2026-09-01T10:00:03.000Z", "role": "assistant", "payload": {"message": {"role": "assistant", "content": [
            {"type": "tool_use", "id": "toolu_x1", "name": "Bash", "input": {"command": "pytest -q"}}]}}},
        {"ts": "2026-09-01T10:00:06.000Z", "role": "tool", "payload": {"message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_x1", "content": "3 passed"}]}}},
        {"ts": "2026-09-01T10:00:09.000Z", "role": "assistant", "payload": {"message": {"role": "assistant", "content": [
            {"type": "text", "text": "All 3 tests pass."}]}}},
    ]
    (d / "transcript.jsonl").write_bytes(b"".join(orjson.dumps(o) + b"\n" for o in lines))
    return d / "transcript.jsonl"


THREADS_SQL = """CREATE TABLE threads (
    id TEXT PRIMARY KEY, rollout_path TEXT NOT NULL, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,
    source TEXT NOT NULL, model_provider TEXT NOT NULL, cwd TEXT NOT NULL, title TEXT NOT NULL,
    sandbox_policy TEXT NOT NULL, approval_mode TEXT NOT NULL, tokens_used INTEGER NOT NULL DEFAULT 0,
    has_user_event INTEGER NOT NULL DEFAULT 0, archived INTEGER NOT NULL DEFAULT 0, archived_at INTEGER,
    git_sha TEXT, git_branch TEXT, git_origin_url TEXT, preview TEXT NOT NULL DEFAULT '',
    first_user_message TEXT NOT NULL DEFAULT '', cli_version TEXT NOT NULL DEFAULT '',
    history_mode TEXT NOT NULL DEFAULT 'legacy', model TEXT, future_required INTEGER NOT NULL);"""


def make_state_db(codex_home: Path) -> Path:
    import sqlite3
    codex_home.mkdir(parents=True, exist_ok=True)
    db = codex_home / "state_5.sqlite"
    con = sqlite3.connect(db)
    con.executescript(THREADS_SQL)
    con.close()
    return db


# -- fixtures shared by the convert tests (imported by name: pytest finds them there) -------------
@pytest.fixture
def homes(isolated_homes):
    h = resolve_homes()
    for d in (h.codex, h.claude, h.mini_cc):
        d.mkdir(parents=True, exist_ok=True)
    return h


@pytest.fixture
def proj(isolated_homes):
    p = Path(isolated_homes["HOME"]) / "work" / "my app"
    p.mkdir(parents=True)
    return str(p)


def cli(*args: str) -> int:
    try:
        from histmig.cli import main
        main(list(args))
    except SystemExit as e:
        return e.code
    return 0


# ---- sessions of the common model, built by hand (the writers' unit tests) ------------------------

def session(fmt: str, recs: list[Record]) -> Session:
    """A session of tool ``fmt`` in /w/app holding ``recs``."""
    return Session(id="00000000-0000-4000-8000-0000000000aa", format=fmt, cwd="/w/app",
                   created="2026-09-01T10:00:00.000Z", records=recs)


def rec(role: str, *parts, kind: str = "message", usage=None) -> Record:
    """One record of ``parts`` said by ``role``."""
    return Record(kind=kind, role=role, timestamp="2026-09-01T10:00:01.000Z", parts=list(parts), usage=usage)
