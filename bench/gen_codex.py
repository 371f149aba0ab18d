"""Generate a synthetic Codex home for benchmarks: paginated rollouts shaped like Codex 0.171.0's
(ordinal on every line, a ~20 KB session_meta, thread_settings_applied, turn_context, reasoning with
encrypted_content, tool calls with outputs of varying size, token_usage_record, world_state), plus
``state_5.sqlite`` and ``thread_history_1.sqlite`` with each turn's byte offsets.

Mix: 90 % provider ``openai``, 10 % ``other``; 2 % archived; 1 % stored as ``.jsonl.zst``.

    python bench/gen_codex.py OUT_DIR --sessions 2000 --mb 800
"""
from __future__ import annotations

import argparse
import random
import sqlite3
import sys
import uuid
from pathlib import Path

import orjson
import zstandard

TS = "2026-11-29T10:00:00.000Z"
BASE = "You are Codex, a coding agent. Follow the instructions carefully. " * 300   # ~20 KB line 1


def _line(ordinal: int, kind: str, payload: dict) -> bytes:
    return orjson.dumps({"timestamp": TS, "ordinal": ordinal, "type": kind, "payload": payload}) + b"\n"


def _meta(thread_id: str, provider: str, cwd: str) -> dict:
    return {"account_scoped": False, "session_id": thread_id, "id": thread_id, "timestamp": TS, "cwd": cwd,
            "runtime_workspace_roots": [cwd], "originator": "codex_exec", "cli_version": "0.171.0", "source": "exec",
            "thread_source": "user", "model_provider": provider,
            "base_instructions": {"text": BASE, "provenance": {"type": "model", "model": "gpt-5.5"}},
            "history_mode": "paginated", "context_window": {"window_id": "w1"}, "git": {}}


def _turn(n: int, ordinal: int, cwd: str, rng: random.Random) -> list[tuple[str, dict]]:
    t = f"turn-{n:04d}"
    out_len = rng.randint(500, 60_000)
    ri = lambda p: ("response_item", p)  # noqa: E731
    return [
        ("event_msg", {"type": "task_started", "turn_id": t, "started_at": 1780635500}),
        ("turn_context", {"turn_id": t, "cwd": cwd, "approval_policy": "never",
                          "sandbox_policy": {"type": "read-only"}, "model": "gpt-5.5", "summary": "auto"}),
        ri({"type": "message", "role": "user", "content": [{"type": "input_text", "text": f"please do step {n}"}]}),
        ri({"type": "reasoning", "id": f"rs_{n}", "summary": [{"type": "summary_text", "text": "**Planning**"}],
            "content": None, "encrypted_content": "gAAAAAB" + "Q" * rng.randint(800, 3000)}),
        ri({"type": "function_call", "name": "exec_command", "arguments": "{\"cmd\":\"make test\"}", "call_id": f"c{n}"}),
        ri({"type": "function_call_output", "call_id": f"c{n}", "output": "ok " * (out_len // 3)}),
        ri({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": f"step {n} done"}]}),
        ("event_msg", {"type": "item_completed", "thread_id": "x", "turn_id": t, "item": {"type": "AgentMessage"}}),
        ("token_usage_record", {"input_tokens": 1000 + n, "output_tokens": 20}),
        ("world_state", {"full": True, "state": {"environments": {"local": {"cwd": cwd}}}}),
        ("event_msg", {"type": "token_count", "info": None, "rate_limits": None}),
        ("event_msg", {"type": "task_complete", "turn_id": t, "last_agent_message": f"step {n} done"}),
    ]


def rollout(thread_id: str, provider: str, target_bytes: int, rng: random.Random) -> tuple[bytes, list[tuple]]:
    """Bytes of one rollout and its turns ``(turn_id, ord0, off0, ord1, off1)``."""
    cwd = f"/home/dev/proj{rng.randint(1, 40)}"
    buf = bytearray(_line(0, "session_meta", _meta(thread_id, provider, cwd)))
    ordinal = 1
    buf += _line(ordinal, "event_msg", {"type": "thread_settings_applied", "thread_settings": {
        "model": "gpt-5.5", "model_provider_id": provider, "approval_policy": "never", "cwd": cwd}})
    ordinal += 1
    turns, n = [], 0
    while len(buf) < target_bytes:
        n += 1
        start = (ordinal, len(buf))
        for kind, payload in _turn(n, ordinal, cwd, rng):
            buf += _line(ordinal, kind, payload)
            ordinal += 1
        turns.append((f"turn-{n:04d}", start[0], start[1], ordinal - 1, len(buf)))
    return bytes(buf), turns


def generate(out: Path, sessions: int, total_mb: float, seed: int = 7) -> dict:
    rng = random.Random(seed)
    codex = out / ".codex"
    (codex / "archived_sessions").mkdir(parents=True, exist_ok=True)
    state = sqlite3.connect(codex / "state_5.sqlite")
    state.executescript("""CREATE TABLE threads (id TEXT PRIMARY KEY, rollout_path TEXT NOT NULL, created_at INTEGER,
      updated_at INTEGER, source TEXT, model_provider TEXT NOT NULL, cwd TEXT, title TEXT, first_user_message TEXT,
      preview TEXT, archived INTEGER DEFAULT 0, history_mode TEXT, model TEXT);""")
    hist = sqlite3.connect(codex / "thread_history_1.sqlite")
    hist.executescript("""CREATE TABLE thread_turns (thread_id TEXT NOT NULL, turn_id TEXT NOT NULL, rollout_ordinal INTEGER,
      status TEXT, rollout_byte_offset INTEGER, rollout_end_ordinal INTEGER, rollout_end_byte_offset INTEGER,
      PRIMARY KEY (thread_id, turn_id));
      CREATE TABLE thread_history_projection_state (thread_id TEXT PRIMARY KEY, next_rollout_byte_offset INTEGER,
      next_rollout_ordinal INTEGER);""")
    per = int(total_mb * 1024 * 1024 / sessions)
    stats = {"sessions": sessions, "bytes": 0, "compressed": 0, "archived": 0, "openai": 0}
    cctx = zstandard.ZstdCompressor(level=3, write_content_size=True)
    for i in range(sessions):
        thread_id = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        provider = "openai" if rng.random() < 0.9 else "other"
        data, turns = rollout(thread_id, provider, int(per * rng.uniform(0.5, 1.5)), rng)
        archived, compressed = rng.random() < 0.02, rng.random() < 0.01
        day = f"2026/{1 + i % 12:02d}/{1 + i % 28:02d}"
        folder = codex / ("archived_sessions" if archived else f"sessions/{day}")
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"rollout-2026-{1 + i % 12:02d}-{1 + i % 28:02d}T10-00-00-{thread_id}.jsonl"
        if compressed:
            path = path.with_name(path.name + ".zst")
            path.write_bytes(cctx.compress(data))
        else:
            path.write_bytes(data)
        state.execute("INSERT INTO threads VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                      (thread_id, str(path), 1, 1, "exec", provider, "/home/dev", "t", "p", "p", int(archived),
                       "paginated", "gpt-5.5"))
        hist.executemany("INSERT INTO thread_turns VALUES (?,?,?,?,?,?,?)",
                         [(thread_id, t, o0, "completed", b0, o1, b1) for t, o0, b0, o1, b1 in turns])
        hist.execute("INSERT INTO thread_history_projection_state VALUES (?,?,?)",
                     (thread_id, len(data), turns[-1][3] + 1 if turns else 2))
        stats["bytes"] += len(data)
        stats["compressed"] += compressed
        stats["archived"] += archived
        stats["openai"] += provider == "openai"
    state.commit()
    hist.commit()
    state.close()
    hist.close()
    return stats


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--sessions", type=int, default=2000)
    ap.add_argument("--mb", type=float, default=800)
    ap.add_argument("--seed", type=int, default=7)
    a = ap.parse_args(argv)
    if a.out.exists() and any(a.out.iterdir()):
        print(f"refusing: {a.out} is not empty", file=sys.stderr)
        return 1
    print(generate(a.out, a.sessions, a.mb, a.seed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
