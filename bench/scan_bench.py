"""Benchmark ``histmig scan`` on a large history against reading the same files' first lines.

Installs the bundled samples into a scratch home and copies their real-client sessions until the
home holds N sessions (half Codex rollouts, half Claude Code transcripts, ~60 KB each), then times,
each in a fresh process:

  1. ``find … -name '*.jsonl' -exec head -qn1 {} +``   (the floor: open every file, read its head)
  2. ``histmig scan --json``                           (heads and tails only, every field parsed)

    python bench/scan_bench.py [--sessions 10000] [--keep DIR]
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from histmig.cli import samples


def build(home: Path, n: int) -> int:
    homes = samples.install(home, tools=("codex", "claude-code"))
    claude = [p for p in (homes.claude / "projects").glob("*/*.jsonl")]
    codex = list((homes.codex / "sessions").rglob("rollout-*.jsonl"))
    made = len(claude) + len(codex)
    for i in range(max(0, n - made)):
        if i % 2:
            src = claude[i % len(claude)]
            dst = src.with_name(f"{uuid.UUID(int=i + 1, version=4)}.jsonl")
        else:
            src = codex[i % len(codex)]
            dst = src.with_name(src.name[:len("rollout-2026-11-30T04-55-44-")] + f"{uuid.UUID(int=i + 1, version=4)}.jsonl")
        shutil.copyfile(src, dst)
        made += 1
    return made


def timed(cmd: list[str] | str, env: dict, shell: bool = False) -> tuple[float, int]:
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, shell=shell, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"failed: {cmd}")
    return wall, usage.ru_maxrss // 1024


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sessions", type=int, default=10000)
    ap.add_argument("--keep", type=Path)
    args = ap.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="histmig-scan-bench-"))
    home = root / "home"
    n = build(home, args.sessions)
    size = sum(f.stat().st_size for f in home.rglob("*.jsonl*"))
    env = dict(os.environ, HOME=str(home), HISTMIG_STATE_DIR=str(root / "state"))
    for var in ("CODEX_HOME", "CLAUDE_CONFIG_DIR", "MINI_CC_HOME", "CODEX_SQLITE_HOME"):
        env.pop(var, None)
    head = timed(f"find {home} -name '*.jsonl' -exec head -qn1 {{}} + > /dev/null", env, shell=True)
    scan = timed([sys.executable, "-m", "histmig", "--home", str(home), "scan", "--json"], env)
    print(f"{n:,} sessions, {size / 1e6:.0f} MB")
    print(f"{'step':<44}{'wall s':>8}{'peak MB':>9}")
    print(f"{'baseline: find -exec head -qn1':<44}{head[0]:>8.2f}{head[1]:>9}")
    print(f"{'histmig scan --json':<44}{scan[0]:>8.2f}{scan[1]:>9}   ({scan[0] / head[0]:.1f}x the baseline)")
    if not args.keep:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
