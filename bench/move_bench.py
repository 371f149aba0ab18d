"""Benchmark ``histmig move`` against ``cp -r`` of the same files, in the same run.

Generates one project's history in scratch homes: Claude Code sessions (``cwd`` on every record,
assistant records with tool calls and large tool results, a sub-agent file per tenth session) and
Codex paginated rollouts with both state databases (every turn's byte offsets), ~1,300 sessions and
~500 MB by default. Then times, each in a fresh process:

  1. ``histmig move OLD NEW``            (dry run: the whole plan, every byte edit computed)
  2. ``histmig move OLD NEW --apply``    (plan + journal + backups + rewrite + renames + SQL)
  3. ``histmig undo``
  4. ``cp -r`` of the same session files (the floor: reading and writing every byte once)

    python bench/move_bench.py [--sessions 1300] [--mb 500] [--keep DIR]

Peer tools users run today for this take 10-25 s on a history of this size (pitfalls.md §32 lists
their memory use); the printed table is what docs/move.md quotes.
"""
from __future__ import annotations

import argparse
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import orjson

TS = "2026-11-30T10:00:00.000Z"


def claude_session(sid: str, cwd: str, target: int, rng: random.Random) -> bytes:
    env = {"userType": "external", "entrypoint": "cli", "cwd": cwd, "sessionId": sid, "version": "2.1.197", "gitBranch": "main"}
    out, parent, n = bytearray(), None, 0
    while len(out) < target:
        n += 1
        u, a, r = (str(uuid.UUID(int=rng.getrandbits(128), version=4)) for _ in range(3))
        recs = [
            {"parentUuid": parent, "isSidechain": False, "type": "user", "message": {"role": "user", "content": f"step {n} in {cwd}"},
             "uuid": u, "timestamp": TS, **env},
            {"parentUuid": u, "isSidechain": False, "type": "assistant", "message": {
                "id": f"msg_{n}", "role": "assistant", "model": "claude-opus-4-6", "content": [
                    {"type": "tool_use", "id": f"toolu_{n}", "name": "Read", "input": {"file_path": f"{cwd}/src/m{n}.py"}}],
                "usage": {"input_tokens": 3, "output_tokens": 90}}, "requestId": f"req_{n}", "uuid": a, "timestamp": TS, **env},
            {"parentUuid": a, "isSidechain": False, "type": "user", "message": {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": f"toolu_{n}", "content": "x = 1\n" * rng.randint(50, 2500)}]},
             "uuid": r, "timestamp": TS, "toolUseResult": {"type": "text"}, **env},
        ]
        parent = r
        out += b"".join(orjson.dumps(x) + b"\n" for x in recs)
    return bytes(out)


def codex_rollout(tid: str, cwd: str, target: int, rng: random.Random) -> tuple[bytes, list[tuple]]:
    lines = [("session_meta", {"session_id": tid, "id": tid, "timestamp": TS, "cwd": cwd, "runtime_workspace_roots": [cwd],
                               "originator": "codex_exec", "cli_version": "0.171.0", "source": "exec", "model_provider": "openai",
                               "base_instructions": {"text": "You are Codex. " * 1400}, "history_mode": "paginated"}),
             ("event_msg", {"type": "thread_settings_applied", "thread_settings": {"model_provider_id": "openai", "cwd": cwd}})]
    out, turns, ordinal, n = bytearray(), [], 0, 0

    def emit(kind, payload):
        nonlocal ordinal
        out.extend(orjson.dumps({"timestamp": TS, "ordinal": ordinal, "type": kind, "payload": payload}) + b"\n")
        ordinal += 1

    for kind, payload in lines:
        emit(kind, payload)
    while len(out) < target:
        n += 1
        start, start_ord = len(out), ordinal
        emit("event_msg", {"type": "task_started", "turn_id": f"t{n}"})
        emit("turn_context", {"turn_id": f"t{n}", "cwd": cwd, "model": "gpt-5.5", "summary": "auto",
                              "sandbox_policy": {"type": "workspace-write", "writable_roots": [cwd]}})
        emit("response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": f"<environment_context><cwd>{cwd}</cwd></environment_context>"}]})
        emit("response_item", {"type": "function_call_output", "call_id": f"c{n}", "output": "ok\n" * rng.randint(100, 8000)})
        emit("world_state", {"full": True, "state": {"environments": {"local": {"cwd": cwd}}}})
        emit("event_msg", {"type": "task_complete", "turn_id": f"t{n}"})
        turns.append((f"t{n}", start_ord, start, ordinal - 1, len(out)))
    return bytes(out), turns


def generate(root: Path, sessions: int, mb: float, old: str) -> dict:
    rng = random.Random(7)
    claude_home, codex_home = root / ".claude", root / ".codex"
    from histmig.core.paths import claude_slug
    proj = claude_home / "projects" / claude_slug(old)
    proj.mkdir(parents=True)
    n_codex = sessions // 4
    n_claude = sessions - n_codex
    per = int(mb * 1024 * 1024 / sessions)
    for i in range(n_claude):
        sid = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        cwd = old if i % 5 else f"{old}/pkg{i % 3}"
        (proj / f"{sid}.jsonl").write_bytes(claude_session(sid, cwd, int(per * rng.uniform(0.3, 1.7)), rng))
        if i % 10 == 0:
            sub = proj / sid / "subagents"
            sub.mkdir(parents=True)
            (sub / "agent-a1.jsonl").write_bytes(claude_session(sid, old, per // 10, rng))
    day = codex_home / "sessions" / "2026" / "11" / "30"
    day.mkdir(parents=True)
    st = sqlite3.connect(codex_home / "state_5.sqlite")
    st.execute("CREATE TABLE threads (id TEXT PRIMARY KEY, rollout_path TEXT, model_provider TEXT NOT NULL, cwd TEXT, archived INTEGER, history_mode TEXT, model TEXT)")
    th = sqlite3.connect(codex_home / "thread_history_1.sqlite")
    th.executescript("CREATE TABLE thread_turns (thread_id TEXT, turn_id TEXT, rollout_ordinal INTEGER, rollout_byte_offset INTEGER,"
                     " rollout_end_ordinal INTEGER, rollout_end_byte_offset INTEGER, PRIMARY KEY (thread_id, turn_id));"
                     "CREATE TABLE thread_history_projection_state (thread_id TEXT PRIMARY KEY, next_rollout_byte_offset INTEGER, next_rollout_ordinal INTEGER);")
    for i in range(n_codex):
        tid = str(uuid.UUID(int=(0x019E << 112) + i))
        data, turns = codex_rollout(tid, old, int(per * rng.uniform(0.3, 1.7)), rng)
        path = day / f"rollout-2026-11-30T10-{i // 60 % 60:02d}-{i % 60:02d}-{tid}.jsonl"
        path.write_bytes(data)
        st.execute("INSERT INTO threads VALUES (?,?,?,?,0,'paginated','gpt-5.5')", (tid, str(path), "openai", old))
        th.executemany("INSERT INTO thread_turns VALUES (?,?,?,?,?,?)", [(tid, *t) for t in turns])
        th.execute("INSERT INTO thread_history_projection_state VALUES (?,?,?)", (tid, len(data), data.count(b"\n")))
    st.commit(); th.commit(); st.close(); th.close()
    total = sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
    return {"claude": n_claude, "codex": n_codex, "bytes": total}


def timed(cmd: list[str], env: dict) -> tuple[float, float, int]:
    """Wall seconds, peak RSS (MB) of this one child (reaped with wait4, so each step gets its own
    number rather than the running maximum over all children) and its exit code."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    return wall, ru.ru_maxrss / 1024, os.waitstatus_to_exitcode(status)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sessions", type=int, default=1300)
    ap.add_argument("--mb", type=float, default=500)
    ap.add_argument("--keep", type=Path, help="generate here and keep it (default: a temp dir, removed)")
    args = ap.parse_args(argv)
    root = args.keep or Path(tempfile.mkdtemp(prefix="histmig-move-bench-"))
    root.mkdir(parents=True, exist_ok=True)
    try:
        old, new = str(root / "work" / "app"), str(root / "work" / "app-moved")
        Path(new).mkdir(parents=True)
        t0 = time.perf_counter()
        info = generate(root, args.sessions, args.mb, old)
        print(f"generated {info['claude']} Claude + {info['codex']} Codex sessions, "
              f"{info['bytes'] / 1e6:.0f} MB in {time.perf_counter() - t0:.1f} s")
        os.system("sync")
        env = {"PATH": os.environ["PATH"], "HOME": str(root), "CLAUDE_CONFIG_DIR": str(root / ".claude"),
               "CODEX_HOME": str(root / ".codex"), "MINI_CC_HOME": str(root / ".mini_cc"),
               "HISTMIG_STATE_DIR": str(root / ".state"), "LANG": "C.UTF-8"}
        hm = [sys.executable, "-m", "histmig"]
        rows = [("histmig move (dry run, full plan)", *timed(hm + ["move", old, new], env)),
                ("histmig move --apply", *timed(hm + ["move", old, new, "--apply"], env)),
                ("histmig undo", *timed(hm + ["undo"], env))]
        copy = root / "copy"
        copy.mkdir()
        rows.append(("cp -r (same session files)", *timed(["cp", "-r", str(root / ".claude" / "projects"),
                                                             str(root / ".codex" / "sessions"), str(copy)], env)))
        print(f"{'step':<36} {'wall s':>8} {'max RSS MB':>11} {'rc':>3}")
        for name, wall, rss, rc in rows:
            print(f"{name:<36} {wall:>8.2f} {rss:>11.0f} {rc:>3}")
        return 0 if all(r[3] == 0 for r in rows) else 1
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
