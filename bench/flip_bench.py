"""Benchmark ``histmig flip`` against baselines on the same generated history, in one run.

    python bench/flip_bench.py            # 2,000 sessions / ~800 MB (needs ~2.5 GB in /tmp)
    python bench/flip_bench.py --small    # 200 sessions / ~80 MB, a minute or two

Measured (wall time, peak RSS of the child process):
- baseline ``find … | xargs head -qn1`` over the same rollouts (what a dry run must approach);
- ``histmig flip openai my-provider`` (dry run, line 1 of each file only);
- baseline ``cp -r`` of the Codex home (what an apply must not be slower than);
- the naive rewrite-line-1 script from the tutorial (seed 003), run on that copy;
- a floor: the least any durable, verified rewrite of the same files does (informative);
- ``histmig flip openai my-provider --apply`` (plan with exact patches + journaled apply + DB rows);
- ``histmig undo`` of that flip (an inverse plan applied through the same journaled path).
Everything runs under a temporary folder with HOME, CODEX_HOME and the state dir pointed into it.
Page cache is warm for every step (the generator just wrote the files); numbers are comparable
with each other, not with a cold disk.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gen_codex import generate  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent

# The tutorial's flip script, verbatim apart from comments (seed 003, lines 133-161).
NAIVE = '''import json
import os
import sys
from pathlib import Path

old, new = sys.argv[1], sys.argv[2]
apply = "--apply" in sys.argv

codex_home = Path(os.environ.get("CODEX_HOME", Path.home() / ".codex"))
hit = 0
for f in (codex_home / "sessions").rglob("rollout-*.jsonl"):
    text = f.read_text(encoding="utf-8")
    head, sep, rest = text.partition("\\n")
    meta = json.loads(head)
    payload = meta.get("payload", meta)
    if payload.get("model_provider") != old:
        continue
    hit += 1
    if apply:
        payload["model_provider"] = new
        f.write_text(json.dumps(meta, ensure_ascii=False) + sep + rest, encoding="utf-8")

verb = "rewrote" if apply else "matched"
print(f"{verb} {hit} sessions")
'''

# The least any durable, verified rewrite of the same files does (informative): for each rollout,
# stream it into a new file with line 1 changed, sha256 what was written, two files at a time;
# then one syncfs. No plan, no checks, no journal, no backups, no rename, no database.
FLOOR = '''import ctypes, hashlib, os, sys
from concurrent.futures import ThreadPoolExecutor

root, out = sys.argv[1], sys.argv[2]
os.makedirs(out)
files = [os.path.join(d, n) for top in ("sessions", "archived_sessions")
         for d, _, names in os.walk(os.path.join(root, top)) for n in names
         if n.startswith("rollout-") and n.endswith(".jsonl")]


def one(job):
    i, path = job
    h = hashlib.sha256()
    with open(path, "rb") as src, open(os.path.join(out, str(i)), "xb") as dst:
        first = src.readline().replace(b'"model_provider":"openai"', b'"model_provider":"my-provider"', 1)
        h.update(first)
        dst.write(first)
        while chunk := src.read(1 << 20):
            h.update(chunk)
            dst.write(chunk)
    return h.hexdigest()


with ThreadPoolExecutor(2) as ex:
    n = len(list(ex.map(one, enumerate(files))))
fd = os.open(out, os.O_RDONLY)
ctypes.CDLL(None).syncfs(fd)
print(f"rewrote {n} files durably")
'''


def run_child(cmd, env, *, shell=False):
    """Run and reap with wait4 so each step gets its own peak RSS. Every step starts after a
    ``sync`` (not timed): dirty pages left by the step before (the generator, a copy) would
    otherwise be written back during, and charged to, whichever step comes next."""
    os.sync()
    t0 = time.perf_counter()
    with tempfile.TemporaryFile() as out:
        p = subprocess.Popen(cmd, env=env, shell=shell, stdout=out, stderr=out, cwd=ROOT)
        _, status, ru = os.wait4(p.pid, 0)
        dt = time.perf_counter() - t0
        out.seek(0)
        text = out.read().decode(errors="replace")
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 3):
        raise SystemExit(f"{cmd!r} failed ({code}): {text[-2000:]}")
    return dt, ru.ru_maxrss / 1024, text


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", action="store_true", help="200 sessions / ~80 MB")
    ap.add_argument("--sessions", type=int)
    ap.add_argument("--mb", type=float)
    ap.add_argument("--keep", action="store_true", help="keep the generated tree")
    a = ap.parse_args(argv)
    sessions = a.sessions or (200 if a.small else 2000)
    mb = a.mb or (80 if a.small else 800)
    work = Path(tempfile.mkdtemp(prefix="histmig-flip-bench-"))
    try:
        return bench(work, sessions, mb)
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)


def bench(work: Path, sessions: int, mb: float) -> int:
    t0 = time.perf_counter()
    stats = generate(work / "orig", sessions, mb)
    codex = work / "orig" / ".codex"
    # flip refuses a NEW that config.toml does not define (issue 12 case 7), as a user's config would define it
    (codex / "config.toml").write_text('[model_providers.my-provider]\nname = "My provider"\n')
    print(f"generated {stats['sessions']} sessions, {stats['bytes'] / 2**20:.0f} MiB "
          f"({stats['openai']} openai, {stats['compressed']} .zst, {stats['archived']} archived) "
          f"in {time.perf_counter() - t0:.1f}s", flush=True)
    env = {"PATH": os.environ["PATH"], "HOME": str(work / "orig"), "CODEX_HOME": str(codex),
           "HISTMIG_STATE_DIR": str(work / "state"), "LANG": "C.UTF-8"}
    hm = [sys.executable, "-m", "histmig"]
    head_cmd = (f"find '{codex}/sessions' '{codex}/archived_sessions' -name 'rollout-*.jsonl' -print0 "
                "| xargs -0 head -qn1 > /dev/null")
    rows = []
    run_child(head_cmd, env, shell=True)                                  # warm-up
    rows.append(("baseline: find | head -qn1", *run_child(head_cmd, env, shell=True)[:2]))
    rows.append(("histmig flip (dry run)", *run_child(hm + ["flip", "openai", "my-provider"], env)[:2]))
    copy = work / "copy" / ".codex"
    copy.parent.mkdir()
    rows.append(("baseline: cp -r", *run_child(["cp", "-r", str(codex), str(copy)], env)[:2]))
    # informative only (the target is plain cp -r): the same copy made durable, as apply is
    durable = work / "copy-durable" / ".codex"
    durable.parent.mkdir()
    rows.append(("baseline: cp -r + sync -f (durable copy)",
                 *run_child(f"cp -r '{codex}' '{durable}' && sync -f '{durable}'", env, shell=True)[:2]))
    shutil.rmtree(work / "copy-durable")
    naive = work / "naive_flip.py"
    naive.write_text(NAIVE)
    nenv = dict(env, CODEX_HOME=str(copy), HOME=str(work / "copy"))
    rows.append(("baseline: naive line-1 script --apply", *run_child([sys.executable, str(naive), "openai",
                                                                      "my-provider", "--apply"], nenv)[:2]))
    shutil.rmtree(work / "copy")
    floor = work / "floor.py"
    floor.write_text(FLOOR)
    rows.append(("floor: durable rewrite of the same files (stream + sha256 + syncfs; informative)",
                 *run_child([sys.executable, str(floor), str(codex), str(work / "floor-out")], env)[:2]))
    shutil.rmtree(work / "floor-out")
    dt, rss, text = run_child(hm + ["flip", "openai", "my-provider", "--apply"], env)
    rows.append(("histmig flip --apply", dt, rss))
    # undo is an inverse plan through the same journaled path (issue 12): compare it with the apply
    rows.append(("histmig undo", *run_child(hm + ["undo"], env)[:2]))
    report(rows, stats, text)
    return 0


def report(rows, stats, apply_out: str) -> None:
    t = {name: (dt, rss) for name, dt, rss in rows}
    print("\n| step | wall s | peak RSS MB |\n|---|---:|---:|")
    for name, dt, rss in rows:
        print(f"| {name} | {dt:.2f} | {rss:.0f} |")
    dry, head = t["histmig flip (dry run)"][0], t["baseline: find | head -qn1"][0]
    app, cp = t["histmig flip --apply"][0], t["baseline: cp -r"][0]
    print(f"\ndry run / head baseline = {dry / head:.2f}x (target <= 2x)")
    print(f"apply / cp -r = {app / cp:.2f}x (target <= 1x)")
    print(f"peak RSS of apply = {t['histmig flip --apply'][1]:.0f} MB (target < 100 MB)")
    print(f"undo / apply = {t['histmig undo'][0] / app:.2f}x, peak RSS of undo = {t['histmig undo'][1]:.0f} MB")
    print("apply said: " + " | ".join(ln for ln in apply_out.splitlines() if ln.startswith(("flipping", "applied"))))


if __name__ == "__main__":
    sys.exit(main())
