"""Small Codex homes for tests: rollouts shaped like Codex 0.171.0 writes them (codex.md §0.3, §18),
plus ``state_5.sqlite`` / ``thread_history_1.sqlite`` with the columns histmig reads and writes.

Lines are compact JSON with raw non-ASCII, as serde_json writes them.
"""
from __future__ import annotations

import json
import os
import sqlite3
import uuid
from pathlib import Path

import orjson

from histmig.jsonio import zst

TS = "2026-11-29T10:00:00.000Z"


def tid(n: int) -> str:
    return str(uuid.UUID(int=0x019E9625_802F_7E91_840A_000000000000 + n))


def dumps(obj) -> bytes:
    return orjson.dumps(obj) + b"\n"


def session_meta(thread_id: str, provider: str | None = "openai", cwd: str = "/w/proj", *,
                 paginated: bool = True, omit_provider: bool = False, **more) -> dict:
    p = {"account_scoped": False, "session_id": thread_id, "id": thread_id, "timestamp": TS, "cwd": cwd,
         "runtime_workspace_roots": [cwd], "originator": "codex_exec", "cli_version": "0.171.0",
         "source": "exec", "thread_source": "user", "model_provider": provider,
         "base_instructions": {"text": "You are Codex. " * 40, "provenance": {"type": "model", "model": "gpt-5.5"}}}
    if omit_provider:
        del p["model_provider"]
    if paginated:
        p["history_mode"] = "paginated"
    p.update(more)
    return {"timestamp": TS, "type": "session_meta", "payload": p}


def settings(provider: str, cwd: str = "/w/proj") -> dict:
    return {"timestamp": TS, "type": "event_msg", "payload": {"type": "thread_settings_applied", "thread_settings": {
        "model": "gpt-5.5", "model_provider_id": provider, "approval_policy": "never", "cwd": cwd,
        "collaboration_mode": {"mode": "default"}}}}


def turn(n: int, cwd: str = "/w/proj", prompt: str = "fix the bug") -> list[dict]:
    t = f"turn-{n}"
    item = lambda p: {"timestamp": TS, "type": "response_item", "payload": p}  # noqa: E731
    return [
        {"timestamp": TS, "type": "event_msg", "payload": {"type": "task_started", "turn_id": t}},
        item({"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "<permissions instructions>x</permissions instructions>"}]}),
        item({"type": "message", "role": "user", "content": [{"type": "input_text", "text": f"<environment_context>\n  <cwd>{cwd}</cwd>\n</environment_context>"}]}),
        {"timestamp": TS, "type": "turn_context", "payload": {"turn_id": t, "cwd": cwd, "approval_policy": "never",
                                                              "sandbox_policy": {"type": "read-only"}, "model": "gpt-5.5", "summary": "auto"}},
        item({"type": "message", "role": "user", "content": [{"type": "input_text", "text": f"{prompt} #{n} – ünïcode"}]}),
        item({"type": "reasoning", "id": f"rs_{n}", "summary": [{"type": "summary_text", "text": "thinking"}],
              "content": None, "encrypted_content": "gAAAAAB" + "x" * 200}),
        item({"type": "function_call", "name": "exec_command", "arguments": "{\"cmd\":\"ls\"}", "call_id": f"call_{n}"}),
        item({"type": "function_call_output", "call_id": f"call_{n}", "output": "a.py\nb.py"}),
        item({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": f"done {n}"}], "phase": "final_answer"}),
        {"timestamp": TS, "type": "token_usage_record", "payload": {"input_tokens": 10, "output_tokens": 2}},
        {"timestamp": TS, "type": "world_state", "payload": {"full": True, "state": {"environments": {"local": {"cwd": cwd}}}}},
        {"timestamp": TS, "type": "event_msg", "payload": {"type": "task_complete", "turn_id": t, "last_agent_message": f"done {n}"}},
    ]


def rollout(thread_id: str, provider: str | None = "openai", *, turns: int = 2, paginated: bool = True,
            cwd: str = "/w/proj", omit_provider: bool = False, settings_provider: str | None = None,
            extra_lines: list[dict] | None = None, meta_more: dict | None = None) -> bytes:
    """A rollout's bytes. Paginated ones carry ``ordinal`` on every line (second key, as Codex writes)."""
    objs = [session_meta(thread_id, provider, cwd, paginated=paginated, omit_provider=omit_provider, **(meta_more or {}))]
    objs.append(settings(settings_provider or provider or "openai", cwd))
    for n in range(1, turns + 1):
        objs += turn(n, cwd)
    objs += extra_lines or []
    out = bytearray()
    for i, o in enumerate(objs):
        if paginated:
            o = {"timestamp": o["timestamp"], "ordinal": i, **{k: v for k, v in o.items() if k != "timestamp"}}
        out += dumps(o)
    return bytes(out)


def rollout_path(codex_home: Path, thread_id: str, *, archived: bool = False, compressed: bool = False) -> Path:
    name = f"rollout-2026-11-29T10-00-00-{thread_id}.jsonl" + (".zst" if compressed else "")
    folder = codex_home / ("archived_sessions" if archived else "sessions/2026/11/29")
    return folder / name


def write_rollout(codex_home: Path, thread_id: str, data: bytes, *, archived: bool = False,
                  compressed: bool = False, mtime_ns: int = 1_780_000_000_123_456_789) -> Path:
    path = rollout_path(codex_home, thread_id, archived=archived, compressed=compressed)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(zst.compress(data) if compressed else data)
    os.utime(path, ns=(mtime_ns, mtime_ns))
    return path


STATE_SCHEMA = """
CREATE TABLE threads (id TEXT PRIMARY KEY, rollout_path TEXT NOT NULL, created_at INTEGER, updated_at INTEGER,
  source TEXT, model_provider TEXT NOT NULL, cwd TEXT, title TEXT, first_user_message TEXT, preview TEXT,
  archived INTEGER DEFAULT 0, history_mode TEXT, model TEXT);
"""
HISTORY_SCHEMA = """
CREATE TABLE thread_turns (thread_id TEXT NOT NULL, turn_id TEXT NOT NULL, rollout_ordinal INTEGER, status TEXT,
  rollout_byte_offset INTEGER, rollout_end_ordinal INTEGER, rollout_end_byte_offset INTEGER,
  PRIMARY KEY (thread_id, turn_id));
CREATE TABLE thread_items (thread_id TEXT, turn_id TEXT, item_id TEXT, rollout_ordinal INTEGER, item_json TEXT);
CREATE TABLE thread_history_projection_state (thread_id TEXT PRIMARY KEY, next_rollout_byte_offset INTEGER,
  next_rollout_ordinal INTEGER);
"""


def state_db(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(path)
    con.executescript(STATE_SCHEMA)
    for r in rows:
        full = {"created_at": 1, "updated_at": 1, "source": "exec", "cwd": "/w/proj", "title": "t",
                "preview": "p", "archived": 0, "history_mode": "paginated", "model": "gpt-5.5", **r}
        cols = ", ".join(full)
        con.execute(f"INSERT INTO threads ({cols}) VALUES ({', '.join('?' * len(full))})", list(full.values()))
    con.commit()
    con.close()
    return path


def turn_offsets(data: bytes) -> list[tuple[str, int, int, int, int]]:
    """``(turn_id, start_ordinal, start_offset, end_ordinal, end_offset)`` per turn, found the way
    Codex projects them: a turn spans task_started .. task_complete (end = the line after it)."""
    out, pos, start = [], 0, None
    for i, raw in enumerate(data.splitlines(keepends=True)):
        obj = orjson.loads(raw)
        p = obj.get("payload", {})
        if p.get("type") == "task_started":
            start = (p["turn_id"], i, pos)
        pos += len(raw)
        if p.get("type") == "task_complete" and start:
            out.append((start[0], start[1], start[2], i, pos))
            start = None
    return out


def history_db(path: Path, threads: dict[str, bytes]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(path)
    con.executescript(HISTORY_SCHEMA)
    for thread_id, data in threads.items():
        for t, so, sb, eo, eb in turn_offsets(data):
            con.execute("INSERT INTO thread_turns VALUES (?,?,?,?,?,?,?)", (thread_id, t, so, "completed", sb, eo, eb))
        con.execute("INSERT INTO thread_history_projection_state VALUES (?,?,?)",
                    (thread_id, len(data), data.count(b"\n")))
    con.commit()
    con.close()
    return path


def home_with(codex_home: Path, sessions: dict[str, bytes], *, provider_rows: dict[str, str] | None = None,
              archived: set[str] = frozenset(), compressed: set[str] = frozenset()) -> dict[str, Path]:
    """Write rollouts + both databases; returns ``{thread_id: path}``."""
    paths = {t: write_rollout(codex_home, t, d, archived=t in archived, compressed=t in compressed)
             for t, d in sessions.items()}
    rows = [{"id": t, "rollout_path": str(p), "model_provider": (provider_rows or {}).get(t, "openai"),
             "archived": int(t in archived)} for t, p in paths.items()]
    state_db(codex_home / "state_5.sqlite", rows)
    history_db(codex_home / "thread_history_1.sqlite", sessions)
    return paths


def naive_flip(codex_home: Path, old: str, new: str) -> int:
    """The provider-flip script of seed 003 (lines 133-161), with --apply: line 1 re-dumped with
    json.dumps (default separators, ensure_ascii=False), state databases untouched. Tests use it to
    reproduce the broken state users are left with."""
    hit = 0
    for f in (codex_home / "sessions").rglob("rollout-*.jsonl"):
        text = f.read_text(encoding="utf-8")
        head, sep, rest = text.partition("\n")
        meta = json.loads(head)
        payload = meta.get("payload", meta)
        if payload.get("model_provider") != old:
            continue
        hit += 1
        payload["model_provider"] = new
        f.write_text(json.dumps(meta, ensure_ascii=False) + sep + rest, encoding="utf-8")
    return hit
