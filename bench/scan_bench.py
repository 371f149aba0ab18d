"""Benchmark ``histmig scan`` against its floors (docs/bench.md, issue 15's targets).

Builds a home (``--tree samples``: the bundled samples' real-client sessions copied until the home holds
N sessions, half Codex rollouts, half Claude Code transcripts; ``--tree gemini``: the Gemini CLI samples
copied the same way; ``--tree codex``: ``bench/gen_codex.py``
rollouts with a 20 KB line 1), then runs, each in a fresh process and interleaved in pairs:

  cold   ``histmig scan --json`` with no scan index   vs  ``cat`` of every session file
  warm   ``histmig scan --json`` with the index        vs  a Python program that only walks and stats them

and prints each pair's ratio (min and median over ``--pairs``, target: ≤ 2x for both) and peak RSS, and
the start-up alone (a scan of an empty home), the fixed part of both.
The machine may be shared: ratios within a pair are what to compare, not seconds across runs.

    python bench/scan_bench.py [--tree samples|codex|gemini] [--sessions 2000] [--mb 400] [--pairs 5] [--keep DIR]
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from histmig.cli import samples

SESSION_SUFFIXES = (".jsonl", ".jsonl.zst")
# the warm floor: the walk and one stat per session file, nothing read
WALK_STAT = """
import os, sys
n = 0
for top in sys.argv[1:]:
    for d, dirs, files in os.walk(top):
        for f in files:
            if f.endswith((".jsonl", ".jsonl.zst")):
                os.stat(os.path.join(d, f)); n += 1
print(n)
"""


def build_samples(home: Path, n: int) -> int:
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


def build_gemini(home: Path, n: int, mb: float = 0) -> int:
    """--tree gemini: the bundled Gemini CLI sessions copied until the home holds ``n`` (new short ids);
    ``mb``: each grown to about ``mb / n`` MB by repeating its turns (its user, ``$set`` and ``gemini``
    records after line 2) with fresh uuid4 ids and each answer 1.2 KB longer, as a long session is (the
    samples alone are 1-4 KB, their answers a line of the fake API)."""
    import random
    homes = samples.install(home, tools=("gemini",))
    src = sorted(homes.gemini.glob("tmp/*/chats/session-*.jsonl"))
    rng = random.Random(16)
    made = 0
    for i in range(max(n, len(src))):
        s = src[i % len(src)]
        dst = s if i < len(src) else s.with_name(s.name[:len("session-2026-12-01T14-02-")] + f"{i + 1:08x}.jsonl")
        data = s.read_bytes()
        turn = data.split(b"\n", 2)[2] if data.count(b"\n") > 2 else b""
        turn = turn.replace(b'"FAKE-ANSWER: ', b'"FAKE-ANSWER: ' + b"lorem ipsum " * 100)
        ids = sorted(set(re.findall(rb'^\{"id":"([0-9a-f-]{36})"', turn, re.M)))
        parts = [data]
        size = len(data)
        while turn and ids and size < mb * 1_000_000 / n:
            fresh = turn
            for old in ids:
                fresh = fresh.replace(old, str(uuid.UUID(int=rng.getrandbits(128), version=4)).encode())
            parts.append(fresh)
            size += len(fresh)
        if len(parts) > 1 or dst != s:
            dst.write_bytes(b"".join(parts))
        made += 1
    return made


def build_codex(home: Path, n: int, mb: float) -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import gen_codex
    return gen_codex.generate(home, n, mb)["sessions"]


def timed(cmd: list[str] | str, env: dict, shell: bool = False) -> tuple[float, int, float]:
    """Wall seconds, peak RSS MB and CPU seconds (user + sys of the process and the children it reaped:
    scan's workers, the shell's xargs and cat), the last being what a loaded machine disturbs least."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, shell=shell, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"failed: {cmd}")
    return wall, usage.ru_maxrss // 1024, usage.ru_utime + usage.ru_stime


def tree_args(tool: str, sessions: int) -> tuple[argparse.Namespace, Path]:
    """``--sessions N --mb MB --keep DIR`` of a one-tool bench, and its work folder (``--keep``, else a
    temporary one the bench removes)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--sessions", type=int, default=sessions)
    ap.add_argument("--mb", type=int, default=200)
    ap.add_argument("--keep", type=Path)
    args = ap.parse_args()
    return args, args.keep or Path(tempfile.mkdtemp(prefix=f"histmig-{tool}-bench-"))


def histmig_env(home: Path, state: Path, *unset: str) -> tuple[dict, list[str]]:
    """The environment of a bench run on ``home`` (the tool's own home variables in ``unset`` removed, so
    ``--home`` decides) and the ``histmig --home`` command line to run in it."""
    env = dict(os.environ, HOME=str(home), HISTMIG_STATE_DIR=str(state))
    for var in unset:
        env.pop(var, None)
    return env, [sys.executable, "-m", "histmig", "--home", str(home)]


def head_floor(home: Path, env: dict) -> tuple[str, tuple[float, int, float]]:
    """The floor step: open every session file under ``home`` and read its first line."""
    return ("baseline: find -exec head -qn1",
            timed(f"find {home} -name '*.jsonl' -exec head -qn1 {{}} + > /dev/null", env, shell=True))


def print_steps(title: str, steps: list[tuple[str, tuple[float, int, float]]]) -> None:
    """A table of :func:`timed` results, one row per step."""
    width = max(len(name) for name, _ in steps) + 2
    print(title)
    print(f"{'step':<{width}}{'wall s':>8}{'peak MB':>9}{'cpu s':>8}")
    for name, (wall, rss, cpu) in steps:
        print(f"{name:<{width}}{wall:>8.2f}{rss:>9}{cpu:>8.2f}")


def session_files(home: Path) -> list[str]:
    return sorted(str(p) for p in home.rglob("*") if p.name.endswith(SESSION_SUFFIXES) and p.is_file())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tree", choices=("samples", "codex", "gemini"), default="samples")
    ap.add_argument("--sessions", type=int, default=2000)
    ap.add_argument("--mb", type=float, default=400, help="--tree codex: total size")
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--keep", type=Path, help="build (or reuse) the tree here and leave it")
    args = ap.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="histmig-scan-bench-"))
    home, state = root / "home", root / "state"
    if not home.exists():
        n = (build_samples(home, args.sessions) if args.tree == "samples" else build_gemini(home, args.sessions)
             if args.tree == "gemini" else build_codex(home, args.sessions, args.mb))
    files = session_files(home)
    n, size = len(files), sum(os.path.getsize(f) for f in files)
    listing = root / "files.txt"
    listing.write_text("\0".join(files))
    env = dict(os.environ, HOME=str(home), HISTMIG_STATE_DIR=str(state))
    for var in ("CODEX_HOME", "CLAUDE_CONFIG_DIR", "MINI_CC_HOME", "CODEX_SQLITE_HOME", "GEMINI_CLI_HOME"):
        env.pop(var, None)
    scan = [sys.executable, "-m", "histmig", "--home", str(home), "scan", "--json"]
    cat = f"xargs -0 cat < {listing} > /dev/null"
    walk = [sys.executable, "-c", WALK_STAT, str(home)]
    # bytecode compiled once, as an install does (with PYTHONDONTWRITEBYTECODE every run would recompile)
    subprocess.run([sys.executable, "-c", "import compileall, os, histmig; "
                    "compileall.compile_dir(os.path.dirname(histmig.__file__), quiet=1)"], env=env, check=True)
    timed(cat, env, shell=True)                    # page cache warm for both sides
    rows: dict[str, list] = {"cold": [], "warm": []}
    startup: list[float] = []                      # informative: scan of an empty home (start-up, imports)
    empty = root / "empty"
    empty.mkdir(exist_ok=True)
    empty_scan = [sys.executable, "-m", "histmig", "--home", str(empty), "scan", "--json"]
    for _ in range(args.pairs):
        shutil.rmtree(state, ignore_errors=True)
        floor, run = timed(cat, env, shell=True), timed(scan, env)
        rows["cold"].append((run[0] / floor[0], run[0], floor[0], run[1], run[2] / max(floor[2], 1e-3), run[2], floor[2]))
        floor, run = timed(walk, env), timed(scan, env)
        rows["warm"].append((run[0] / floor[0], run[0], floor[0], run[1], run[2] / max(floor[2], 1e-3), run[2], floor[2]))
        startup.append(timed(empty_scan, dict(env, HOME=str(empty)))[0])
    print(f"{n:,} session files, {size / 1e6:.0f} MB ({args.tree} tree), {args.pairs} interleaved pairs")
    print(f"{'scan --json':<12}{'floor':<34}{'ratio min':>10}{'median':>8}{'scan s':>8}{'floor s':>8}{'peak MB':>8}")
    for name, floor_name in (("cold", "cat of every session file"), ("warm", "Python walk + stat of each file")):
        r = rows[name]
        ratios = [x[0] for x in r]
        print(f"{name:<12}{floor_name:<34}{min(ratios):>9.2f}x{statistics.median(ratios):>7.2f}x"
              f"{statistics.median(x[1] for x in r):>8.2f}{statistics.median(x[2] for x in r):>8.2f}"
              f"{max(x[3] for x in r):>8}")
    print(f"{'CPU':<12}{'(user + sys)':<34}{'ratio min':>10}{'median':>8}{'scan s':>8}{'floor s':>8}")
    for name in ("cold", "warm"):
        r = rows[name]
        ratios = [x[4] for x in r]
        print(f"{name:<12}{'':<34}{min(ratios):>9.2f}x{statistics.median(ratios):>7.2f}x"
              f"{statistics.median(x[5] for x in r):>8.2f}{statistics.median(x[6] for x in r):>8.2f}")
    print(f"(start-up: a scan of an empty home takes {statistics.median(startup):.2f} s, median)")
    if not args.keep:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
