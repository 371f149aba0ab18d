"""Running histmig against a test's scratch world, and reading what it left (shared by e2e tests).

``histmig(scratch, ...)`` passes every home explicitly (HOME, Codex, Claude, mini-cc, state dir), so
the child never reads the caller's environment; ``codex_rows`` / ``log`` / ``doctor_healthy`` read
the results the keeps-working tests compare.
"""
from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

from .clients import Scratch

ROOT = Path(__file__).resolve().parents[2]


def state_dir(scratch: Scratch) -> Path:
    return scratch.root / "histmig-state"


def histmig(scratch: Scratch, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    homes = ["--home", str(scratch.home), "--codex-home", str(scratch.codex_home),
             "--claude-home", str(scratch.claude_dir), "--mini-cc-home", str(scratch.home / ".mini_cc"),
             "--state-dir", str(state_dir(scratch))]
    env = {"HOME": str(scratch.home), "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}
    return subprocess.run([sys.executable, "-m", "histmig", *homes, *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)


def shown(p: subprocess.CompletedProcess) -> str:
    """A finished histmig run as text for an assertion message."""
    return f"{p.args[-6:]} exited {p.returncode}\n--stdout--\n{p.stdout[-4000:]}\n--stderr--\n{p.stderr[-4000:]}"


def ok(p: subprocess.CompletedProcess, *codes: int) -> subprocess.CompletedProcess:
    """Assert the exit code (0 unless ``codes`` says otherwise) and return the run."""
    assert p.returncode in (codes or (0,)), shown(p)
    return p


def log(scratch: Scratch) -> list[dict]:
    """``histmig log --json``: every transaction, newest last."""
    return json.loads(ok(histmig(scratch, "log", "--json")).stdout)["transactions"]


def last_txid(scratch: Scratch) -> str:
    return log(scratch)[-1]["txid"]


def tx_state(scratch: Scratch, txid: str) -> str:
    return next(t["state"] for t in log(scratch) if t["txid"] == txid)


def doctor_healthy(scratch: Scratch, *ignore: str) -> None:
    """``histmig doctor`` for Codex and Claude Code exits 0 (healthy); the report on failure."""
    p = histmig(scratch, "doctor", "--tool", "codex", "--tool", "claude", *(f"--ignore={c}" for c in ignore))
    assert p.returncode == 0, "doctor is not healthy:\n" + shown(p)


def codex_rows(codex_home: Path) -> dict:
    """The Codex database rows a flip, move or convert touches, keyed by thread id."""
    db, hist = codex_home / "state_5.sqlite", codex_home / "thread_history_1.sqlite"
    out: dict = {"threads": {}, "turns": [], "next": {}}
    if db.exists():
        with sqlite3.connect(db) as con:
            for tid, prov, cwd, path, arch in con.execute(
                    "SELECT id, model_provider, cwd, rollout_path, archived FROM threads ORDER BY id"):
                out["threads"][tid] = {"provider": prov, "cwd": cwd, "rollout_path": path, "archived": arch}
    if hist.exists():
        with sqlite3.connect(hist) as con:
            out["turns"] = con.execute("SELECT thread_id, turn_id, rollout_byte_offset, rollout_end_byte_offset "
                                       "FROM thread_turns ORDER BY 1, 2").fetchall()
            out["next"] = dict(con.execute("SELECT thread_id, next_rollout_byte_offset "
                                           "FROM thread_history_projection_state").fetchall())
    return out


def rollouts(codex_home: Path) -> list[Path]:
    """Every rollout file, live and archived."""
    return sorted([*codex_home.glob("sessions/**/rollout-*"), *codex_home.glob("archived_sessions/rollout-*")])


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def files_with_sha(root: Path, digest: str) -> list[Path]:
    """Every regular file under ``root`` whose content has this sha256."""
    return [p for p in root.rglob("*") if p.is_file() and not p.is_symlink()
            and sha256(p.read_bytes()) == digest]


def new_session_id(done: subprocess.CompletedProcess) -> str:
    """The id of the session ``convert --apply`` created (its ``converting OLD -> NEW ...`` line)."""
    line = next(ln for ln in done.stdout.splitlines() if ln.startswith("converting "))
    return line.split(" -> ")[1].split()[0]
