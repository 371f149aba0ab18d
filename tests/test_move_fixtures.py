"""Builders for the move tests: Claude Code, mini-cc and manifest sessions shaped like the real files
(compact JSON, raw non-ASCII, ``cwd`` on every record), plus a helper that walks a whole home for any
structured field still naming the old path. (A test module so the move work owns it; its own test
checks the leftover finder.)"""
from __future__ import annotations

import os
import uuid
from pathlib import Path

import orjson

from histmig.tools import resolve_homes
from histmig.core.paths import claude_slug

MTIME = 1_780_000_000_123_456_789


def homes():
    return resolve_homes()


def sid(n: int) -> str:
    return str(uuid.UUID(int=0x5B1C0000_0000_4000_8000_000000000000 + n))


def jl(objs) -> bytes:
    return b"".join(orjson.dumps(o) + b"\n" for o in objs)


def claude_records(session: str, cwd: str, *, sub: str | None = None) -> list[dict]:
    """A short 2.1.x session: queue-operation, user, assistant tool_use, tool_result, text, last-prompt."""
    env = {"userType": "external", "entrypoint": "cli", "cwd": cwd, "sessionId": session, "version": "2.1.197",
           "gitBranch": ""}
    u1, a1, u2, a2 = (str(uuid.uuid5(uuid.NAMESPACE_URL, session + x)) for x in "abcd")
    return [
        {"type": "queue-operation", "operation": "dequeue", "timestamp": "2026-11-30T10:00:00.000Z", "sessionId": session},
        {"parentUuid": None, "isSidechain": False, "type": "user", "message": {"role": "user", "content": f"look at {cwd}/x.py – ünï"},
         "uuid": u1, "timestamp": "2026-11-30T10:00:00.100Z", **env},
        {"parentUuid": u1, "isSidechain": False, "type": "assistant", "message": {"id": "msg_1", "role": "assistant", "content": [
            {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": f"ls {cwd}"}}]},
         "uuid": a1, "timestamp": "2026-11-30T10:00:01.000Z", **env},
        {"parentUuid": a1, "isSidechain": False, "type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": f"{cwd}/x.py"}]},
         "uuid": u2, "timestamp": "2026-11-30T10:00:02.000Z", **{**env, "cwd": sub or cwd}},
        {"parentUuid": u2, "isSidechain": False, "type": "assistant", "message": {"id": "msg_2", "role": "assistant", "content": [
            {"type": "text", "text": "done"}]}, "uuid": a2, "timestamp": "2026-11-30T10:00:03.000Z", **env},
        {"type": "last-prompt", "lastPrompt": "look", "sessionId": session, "leafUuid": a2},
    ]


def claude_session(h, cwd: str, n: int = 1, *, subagent: bool = False, folder: str | None = None,
                   sub: str | None = None) -> Path:
    s = sid(n)
    proj = h.claude / "projects" / (folder or claude_slug(cwd))
    proj.mkdir(parents=True, exist_ok=True)
    path = proj / f"{s}.jsonl"
    path.write_bytes(jl(claude_records(s, cwd, sub=sub)))
    os.utime(path, ns=(MTIME, MTIME))
    if subagent:
        agent = proj / s / "subagents" / "agent-a1b2c3.jsonl"
        agent.parent.mkdir(parents=True)
        recs = [dict(r, isSidechain=True, agentId="a1b2c3") for r in claude_records(s, cwd)[1:3]]
        agent.write_bytes(jl(recs))
        (proj / s / "subagents" / "agent-a1b2c3.meta.json").write_bytes(
            orjson.dumps({"agentType": "Explore", "worktreePath": cwd + "/.claude/worktrees/x"}))
        (proj / s / "tool-results").mkdir()
        (proj / s / "tool-results" / "toolu_1.txt").write_text("big output")
    return path


def minicc_session(h, cwd: str, n: int = 1) -> Path:
    s = sid(100 + n)
    folder = h.mini_cc / "projects" / claude_slug(cwd)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{s}.jsonl"
    recs = [{"type": "user", "sessionId": s, "cwd": cwd, "uuid": "u1", "parentUuid": None,
             "timestamp": "2026-11-30T10:00:00+00:00", "message": {"role": "user", "content": "hi"}},
            {"type": "assistant", "sessionId": s, "cwd": cwd, "uuid": "a1", "parentUuid": "u1",
             "timestamp": "2026-11-30T10:00:01+00:00", "message": {"role": "assistant", "content": [{"type": "text", "text": "yo"}]}}]
    path.write_bytes(jl(recs))
    os.utime(path, ns=(MTIME, MTIME))
    return path


def manifest_session(h, cwd: str, n: int = 1, *, folder: str | None = None) -> Path:
    s = sid(200 + n)
    d = h.claude / "projects" / (folder or claude_slug(cwd)) / "sessions" / s
    d.mkdir(parents=True)
    meta = {"sessionId": s, "projectPath": cwd, "cwd": cwd, "cliVersion": "0.1", "model": "m",
            "createdAt": "2026-11-30T10:00:00.000Z", "updatedAt": "2026-11-30T10:00:00.000Z"}
    import json
    (d / "meta.json").write_text(json.dumps(meta, indent=2, ensure_ascii=False) + "\n")
    (d / "transcript.jsonl").write_bytes(jl([{"ts": "2026-11-30T10:00:00.000Z", "role": "user",
                                              "payload": {"message": {"role": "user", "content": f"in {cwd}"}}}]))
    return d / "meta.json"


def tool_trees(h) -> dict:
    """Snapshots (sha, mode, mtime_ns, ...) of every tool home, not histmig's own state folder."""
    from test_apply_fixtures import snapshot
    return {str(root): snapshot(root) for root in (h.claude, h.codex, h.mini_cc) if root.exists()}


# ---- checks ---------------------------------------------------------------------------------------

STRUCTURED_KEYS = {"cwd", "project", "projectPath", "relocatedCwd", "originalCwd", "worktreePath",
                   "runtime_workspace_roots", "workspace_roots", "writable_roots",
                   "workingDirectory", "additionalWorkingDirectories"}  # Claude Code 2.1.332 environment attachment


def structured_leftovers(root: Path, old: str) -> list[str]:
    """``file:key`` for every structured path field under ``root`` that still equals OLD or lies
    below it (message text is not a structured field and is ignored)."""
    from histmig.core.paths import is_under
    out: list[str] = []

    def walk(value, key, where):
        if isinstance(value, str):
            if key in STRUCTURED_KEYS and is_under(value, old):
                out.append(f"{where}:{key}")
        elif isinstance(value, dict):
            for k, v in value.items():
                walk(v, k if not isinstance(v, list) else k, where)
        elif isinstance(value, list):
            for v in value:
                walk(v, key, where)

    for p in sorted(root.rglob("*")):
        if not p.is_file() or not (p.name.endswith(".jsonl") or p.name.endswith(".json")):
            continue
        for raw in p.read_bytes().splitlines():
            try:
                obj = orjson.loads(raw)
            except orjson.JSONDecodeError:
                continue
            walk(obj, None, str(p))
        if p.name.endswith(".json"):
            try:
                walk(orjson.loads(p.read_bytes()), None, str(p))
            except orjson.JSONDecodeError:
                pass
    return out


def test_structured_leftovers_finds_cwd_but_not_message_text(tmp_path):
    f = tmp_path / "s.jsonl"
    f.write_bytes(jl([{"cwd": "/a/app/sub", "message": {"content": "/a/app"}}, {"cwd": "/a/app2"}]))
    assert structured_leftovers(tmp_path, "/a/app") == [f"{f}:cwd"]
