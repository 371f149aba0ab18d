"""Benchmark: N generated Codex sessions converted to Claude Code in one ``histmig convert`` run.

    python bench/convert_bench.py [--sessions 2000] [--per-process 20] [--keep DIR]

Everything happens under a temporary HOME (never the real one). Reports wall time per session for
the batch run (dry run and --apply), peak RSS of that process, and, for comparison in the same run,
the per-session cost of one process per session (histmig itself started once per session, the way
one-process-per-session converters work; pitfalls.md reports 0.07-0.33 s/session for those).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from convert_fixtures import codex_lines  # noqa: E402


def generate(codex_home: Path, n: int, projects: int = 20) -> None:
    for i in range(n):
        sid = f"019e9625-802f-7e91-840a-{i:012x}"
        cwd = f"/srv/work/project-{i % projects}"
        lines = codex_lines(cwd, sid)
        day = 1 + i % 28
        path = codex_home / f"sessions/2026/06/{day:02d}" / f"rollout-2026-06-{day:02d}T04-58-20-{sid}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"".join(json.dumps(o, separators=(",", ":")).encode() + b"\n" for o in lines))


def precreate_projects(home: Path, projects: int = 20) -> None:
    """The Claude project folders exist, as they do for projects Claude was used in. (Also works
    around apply creating a shared new parent folder once per file: see docs/convert.md.)"""
    from histmig.core.paths import claude_slug
    for i in range(projects):
        (home / ".claude" / "projects" / claude_slug(f"/srv/work/project-{i}")).mkdir(parents=True, exist_ok=True)


def env_for(home: Path) -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "CODEX_HOME": str(home / ".codex"),
            "CLAUDE_CONFIG_DIR": str(home / ".claude"), "MINI_CC_HOME": str(home / ".mini_cc"),
            "HISTMIG_STATE_DIR": str(home / "state"), "LANG": "C.UTF-8"}


def timed(cmd: list[str], env: dict) -> tuple[float, int, str]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.perf_counter()
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=ROOT)
    wall = time.perf_counter() - t0
    if p.returncode not in (0, 3):
        raise SystemExit(f"{cmd[3:6]} failed ({p.returncode}): {p.stderr[-2000:]}")
    return wall, max(before, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss), p.stdout


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sessions", type=int, default=2000)
    ap.add_argument("--per-process", type=int, default=20)
    ap.add_argument("--keep", help="keep the generated tree in this folder")
    a = ap.parse_args()
    tmp = Path(a.keep or tempfile.mkdtemp(prefix="histmig-convert-bench-"))
    home = tmp / "home"
    (home / ".claude").mkdir(parents=True, exist_ok=True)
    generate(home / ".codex", a.sessions)
    precreate_projects(home)
    size = sum(p.stat().st_size for p in (home / ".codex").rglob("*.jsonl"))
    env = env_for(home)
    hm = [sys.executable, "-m", "histmig", "-q"]
    dry, _, _ = timed(hm + ["convert", "--to", "claude-code", "--from", "codex"], env)
    wall, rss, _ = timed(hm + ["convert", "--to", "claude-code", "--from", "codex", "--apply"], env)
    made = len(list((home / ".claude" / "projects").glob("*/*.jsonl")))
    # one process per session, on fresh sessions of a second home
    home2 = tmp / "home2"
    (home2 / ".claude").mkdir(parents=True, exist_ok=True)
    generate(home2 / ".codex", a.per_process)
    precreate_projects(home2)
    ids = [p.name[-42:-6] for p in sorted((home2 / ".codex").rglob("rollout-*.jsonl"))]
    t0 = time.perf_counter()
    for sid in ids:
        timed(hm + ["convert", "--to", "claude-code", sid, "--apply"], env_for(home2))
    per_process = (time.perf_counter() - t0) / len(ids)
    batch = wall / a.sessions
    print(json.dumps({"sessions": a.sessions, "source_bytes": size, "converted_files": made,
                      "dry_run_s": round(dry, 2), "apply_s": round(wall, 2),
                      "batch_ms_per_session": round(batch * 1000, 2),
                      "per_process_ms_per_session": round(per_process * 1000, 1),
                      "speedup_vs_per_process": round(per_process / batch, 1),
                      "speedup_vs_0.07s": round(0.07 / batch, 1), "peak_rss_mb": round(rss / 1024, 1)}, indent=2))
    if not a.keep:
        shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
