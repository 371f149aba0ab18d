"""One bench runner: every command against its floor, interleaved A/B/A/B, on generated trees.

    python bench/run.py                       # 500 sessions, 5 pairs; writes the table into docs/bench.md
    python bench/run.py --sessions 2000       # (8000: needs ~4 GB in the work dir)
    python bench/run.py --quick --doc OUT.md  # a tiny tree, 1 pair: a smoke run (tests/test_bench_runner.py)
    python bench/run.py --scale 500,2000,8000 # every step at each size: histmig's time and memory across them
    python bench/run.py --sessions 200 --grow 100,400,1600   # the same sessions, longer: memory against line count

Each command and its floor run in fresh processes, one after the other, ``--pairs`` times (A, B, A,
B, ...); every process starts after a ``sync`` (not timed), so no step pays for the dirty pages of
the one before. Reported per command: the median wall time of histmig and of the floor, the ratio
histmig/floor of each pair (min and median), and histmig's peak RSS (``wait4``'s ``ru_maxrss``,
the largest over the pairs). A command that changes files runs on a fresh copy of its tree each
time (the copy is not timed). Everything lives under one temporary folder: HOME, CODEX_HOME,
CLAUDE_CONFIG_DIR, MINI_CC_HOME, QWEN_HOME and HISTMIG_STATE_DIR point into it; nothing real is read or written.

The trees: a Codex home from ``gen_codex.py`` (scan, doctor, flip, undo), a Claude Code + Codex
project from ``move_bench.py`` (move), small Codex sessions from ``convert_bench.py`` (convert) and a
Qwen Code project from ``qwen_bench.py`` (its scan and move), and Pi and Gemini CLI homes grown from
their bundled samples (``pi_bench.py``, ``scan_bench.py``: their scans). ``pack`` bundles the Codex home
against ``tar --zstd -cf`` of the same files.
"""
from __future__ import annotations

import argparse
import compileall
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

BEGIN, END = "<!-- bench/run.py: begin -->", "<!-- bench/run.py: end -->"
SCALE_MARKS = ("<!-- bench/run.py --scale: begin -->", "<!-- bench/run.py --scale: end -->")
GROW_MARKS = ("<!-- bench/run.py --grow: begin -->", "<!-- bench/run.py --grow: end -->")
PROVIDER = '[model_providers.my-provider]\nname = "My provider"\n'

# Floors: the least a program doing the same job does, run the same way (a fresh process).
READ_ALL = '''import os, sys
n = 0
for top in sys.argv[1:]:
    for d, _, names in os.walk(top):
        for name in names:
            with open(os.path.join(d, name), "rb") as f:
                while chunk := f.read(1 << 20):
                    n += chunk.count(b"\\n")
print(n)
'''
# convert's floor: orjson loads + dumps + write of every line, one new file per session; with ``durable``
# also the least a crash-safe create adds (histmig/apply/creates.py): each new file written to a temp,
# one ``syncfs``, each temp renamed into place, one more ``syncfs`` for the names
CONVERT = '''import os, sys, orjson
src, out = sys.argv[1], sys.argv[2]
durable = sys.argv[3:] == ["durable"]
os.makedirs(out)
made = []
for d, _, names in os.walk(src):
    for name in sorted(names):
        dest = os.path.join(out, f".{len(made)}.tmp" if durable else f"{len(made)}.jsonl")
        with open(os.path.join(d, name), "rb") as f, open(dest, "xb" if durable else "wb") as w:
            for line in f:
                w.write(orjson.dumps(orjson.loads(line)) + b"\\n")
        made.append(dest)
if durable:
    import ctypes
    fd = os.open(out, os.O_RDONLY)
    ctypes.CDLL(None).syncfs(fd)
    for i, tmp in enumerate(made):
        os.rename(tmp, os.path.join(out, f"{i}.jsonl"))
    ctypes.CDLL(None).syncfs(fd)
'''
WALK_STAT = '''import os, sys
n = 0
for top in sys.argv[1:]:
    for d, _, names in os.walk(top):
        for name in names:
            n += os.stat(os.path.join(d, name)).st_size > 0
print(n)
'''
# the warm scan's floor with histmig's start-up in it: the interpreter and click alone take longer than
# walking and stating 2,000 files (docs/bench.md, "Listings"), so the walk runs after the same imports
WALK_STAT_CLI = "import histmig.cli  # what every histmig command loads before it starts\n" + WALK_STAT
# the warm scan's necessary work, after the same start-up (docs/bench.md, "Scaling"): the scan index
# loaded, every file walked and stat'ed, its record looked up by path and its stat checked, the rows
# (the walk's facts and the stored fields) sorted by time and written as indented JSON
WARM_NAMED_CLI = """import histmig.cli  # what every histmig command loads before it starts
import os, sys, orjson
records = {}
with open(sys.argv[1], "rb") as f:     # core/scanindex.py: a header line, then "path"<tab>record per line
    f.readline()
    for line in f:
        key, _, raw = line.partition(b"\t")
        records[orjson.loads(key)] = raw
rows = []
for top in sys.argv[2:]:
    for d, _, names in os.walk(top):
        for name in names:
            path = os.path.join(d, name)
            st = os.stat(path)
            raw = records.get(path)
            rec = None if raw is None else orjson.loads(raw)
            if rec is not None and rec[0] == [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns]:
                rows.append({"path": path, "size": st.st_size, "updated": st.st_mtime, **rec[2]})
if not rows:
    sys.exit("no file matched its record in the scan index: the floor measured nothing")
rows.sort(key=lambda r: r["updated"], reverse=True)
sys.stdout.buffer.write(orjson.dumps({"sessions": rows}, option=orjson.OPT_INDENT_2))
"""
# search's floor after the same start-up: that process becomes grep (exec: no second start-up)
GREP_CLI = """import histmig.cli  # what every histmig command loads before it starts
import os, sys
os.execvp("grep", ["grep", *sys.argv[1:]])
"""
# the cold listing's floor for small sessions (Pi, Gemini: a few KB each): every file read, every line
# of a .jsonl and every .json parsed, after the same start-up (docs/bench.md, "Listings")
READ_PARSE_CLI = """import histmig.cli  # what every histmig command loads before it starts
import os, sys, orjson
n = 0
for top in sys.argv[1:]:
    for d, _, names in os.walk(top):
        for name in names:
            with open(os.path.join(d, name), "rb") as f:
                data = f.read()
            if name.endswith(".jsonl"):
                for line in data.splitlines():
                    if line.strip():
                        orjson.loads(line)
                        n += 1
            elif name.endswith(".json"):
                orjson.loads(data)
                n += 1
print(n)
"""
# the cold Codex scan's necessary work (docs/scan-show.md, "What a Codex listing reads"), after the same
# start-up, in one process: every file read whole, line 1 parsed, every line holding the compact message
# marker found (bytes.find) and parsed, the last turn_context line parsed
READ_NAMED_CLI = """import histmig.cli  # what every histmig command loads before it starts
import os, sys, orjson
n = 0
def line(data, at):
    start = data.rfind(b"\\n", 0, at) + 1
    end = data.find(b"\\n", at)
    return orjson.loads(data[start:len(data) if end < 0 else end])
for top in sys.argv[1:]:
    for d, _, names in os.walk(top):
        for name in names:
            if not name.endswith(".jsonl"):
                continue
            with open(os.path.join(d, name), "rb") as f:
                data = f.read()
            n += len(line(data, 0))
            at = data.find(b'"type":"message"')
            while at >= 0:
                n += len(line(data, at))
                at = data.find(b'"type":"message"', data.find(b"\\n", at) + 1 or len(data))
            last = data.rfind(b'"turn_context"')
            if last >= 0:
                n += len(line(data, last))
print(n)
"""
LAUNCH = '''import json, os, subprocess, sys, time
cmd, shell, res = json.loads(sys.argv[1]), sys.argv[2] == "1", sys.argv[3]
os.sync()      # not timed: no step pays for the dirty pages of the one before
if sys.argv[4:] == ["drop"]:     # a cold page cache: every byte (the interpreter's too) from the disk
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3")
t0 = time.perf_counter()
p = subprocess.Popen(cmd, shell=shell)
_, status, ru = os.wait4(p.pid, 0)
wall = time.perf_counter() - t0
with open(res, "w") as f:
    json.dump([wall, ru.ru_maxrss / 1024, os.waitstatus_to_exitcode(status)], f)
'''
COPY_LISTED = '''import ctypes, os, shutil, sys
listing, out = sys.argv[1], sys.argv[2]
os.makedirs(out)
for i, path in enumerate(open(listing).read().splitlines()):
    shutil.copyfile(path, os.path.join(out, str(i)))
fd = os.open(out, os.O_RDONLY)
ctypes.CDLL(None).syncfs(fd)
'''


@dataclass
class Row:
    command: str
    floor: str
    pairs: list[tuple[float, float, float]] = field(default_factory=list)   # (histmig s, floor s, RSS MB)
    key: str = ""       # the command across tree sizes (--scale), when its text names a count; else the text

    def histmig(self) -> tuple[float, float]:
        """histmig's median wall seconds and largest peak RSS (MB) over the pairs."""
        return statistics.median(p[0] for p in self.pairs), max(p[2] for p in self.pairs)

    def add(self, a: tuple[float, float], b: tuple[float, float]) -> None:
        self.pairs.append((a[0], b[0], a[1]))

    def cells(self) -> list[str]:
        hm, rss = self.histmig()
        fl = statistics.median(p[1] for p in self.pairs)
        ratios = [p[0] / p[1] for p in self.pairs if p[1] > 0]
        ratio = f"{min(ratios):.1f}x min, {statistics.median(ratios):.1f}x median" if ratios else "-"
        return [self.command, f"{hm:.2f} s", f"{self.floor}: {fl:.2f} s", ratio, f"{rss:.0f} MB"]


class Bench:
    def __init__(self, work: Path, quick: bool, sessions: int = 500):
        self.work, self.quick, self.sessions = work, quick, sessions
        self.hm = [sys.executable, "-m", "histmig", "-q"]

    def env(self, home: Path) -> dict[str, str]:
        return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", "HOME": str(home),
                "CODEX_HOME": str(home / ".codex"), "CLAUDE_CONFIG_DIR": str(home / ".claude"),
                "MINI_CC_HOME": str(home / ".mini_cc"), "QWEN_HOME": str(home / ".qwen"),
                "HISTMIG_STATE_DIR": str(home.parent / "state"),
                **({"PYTHONDONTWRITEBYTECODE": "1"} if os.environ.get("PYTHONDONTWRITEBYTECODE") else {})}

    def run(self, cmd, home: Path, *, shell: bool = False, ok=(0, 3), drop: bool = False) -> tuple[float, float]:
        """Wall seconds and peak RSS (MB) of one fresh process, started and reaped (wait4) by a
        small launcher: a child's ru_maxrss counts the image it was forked from (Linux keeps the
        high-water mark across exec), and this process holds the trees' and plans' data. ``drop``:
        the page cache is dropped first (root only: :func:`can_drop_caches`)."""
        with tempfile.TemporaryFile() as out, tempfile.NamedTemporaryFile("r") as res:
            p = subprocess.run([sys.executable, "-S", "-c", LAUNCH, json.dumps(cmd), str(int(shell)), res.name,
                                *(["drop"] if drop else [])],
                               env=self.env(home), stdout=out, stderr=out, cwd=ROOT)
            wall, rss, code = json.loads(res.read() or "[0, 0, -1]")
            if p.returncode != 0 or code not in ok:
                out.seek(0)
                raise SystemExit(f"{cmd!r} failed ({code}): {out.read().decode(errors='replace')[-2000:]}")
        return wall, rss

    def fresh(self, src: Path, name: str) -> Path:
        """A copy of a tree (its home and state dir) to change; not timed."""
        dst = self.work / name
        shutil.rmtree(dst, ignore_errors=True)
        shutil.copytree(src, dst, symlinks=True)
        return dst / "home"


def build(work: Path, sessions: int, mb: float) -> dict[str, Path]:
    """The three trees, each as ``<tree>/home`` (+ ``<tree>/state``)."""
    import convert_bench
    import gen_codex
    import move_bench
    import qwen_bench
    trees = {name: work / "trees" / name for name in ("codex", "move", "convert", "convert-all", "qwen")}
    codex = trees["codex"] / "home"
    gen_codex.generate(codex, sessions, mb)
    (codex / ".codex" / "config.toml").write_text(PROVIDER)
    move = trees["move"] / "home"
    old = str(work / "trees" / "move" / "work" / "app")
    Path(old + "-moved").mkdir(parents=True)
    move_bench.generate(move, sessions, mb, old)
    for name, count in convert_counts(sessions).items():
        convert = trees[name] / "home"
        (convert / ".claude").mkdir(parents=True)
        convert_bench.generate(convert / ".codex", count)
        convert_bench.precreate_projects(convert)
    qwen = str(trees["qwen"] / "work" / "app")
    Path(qwen + "-moved").mkdir(parents=True)
    qwen_bench.build(trees["qwen"] / "home", qwen, sessions, mb / 2)
    build_listings(work, trees, sessions, mb / 2)
    return trees


def build_listings(work: Path, trees: dict[str, Path], sessions: int, mb: float) -> None:
    """Pi and Gemini CLI homes (issue 16) from their bundled samples, for their listing rows: each grown
    to ``mb`` MB in all (the Qwen tree's size), so a session is as long as a real one."""
    import pi_bench
    import scan_bench
    trees["pi"], trees["gemini"] = work / "trees" / "pi", work / "trees" / "gemini"
    pi_bench.build(trees["pi"] / "home", sessions, 1, total_mb=mb)
    scan_bench.build_gemini(trees["gemini"] / "home", sessions, mb)


def files_of(home: Path, *tops: str) -> list[str]:
    return sorted(str(p) for top in tops for p in (home / top).rglob("*") if p.is_file())


def bench_reads(b: Bench, trees: dict[str, Path], pairs: int) -> list[Row]:
    home = trees["codex"] / "home"
    cat = f"find '{home}/.codex' -type f -exec cat {{}} + > /dev/null"
    rows = [Row("`scan --json` (index present)", "`cat` of every file"), Row("`doctor`", "`cat` of every file"),
            Row("`doctor`, cold (no doctor index)", "`cat` of every file"),
            Row("`scan --json --no-index` (cold)", "`cat` of every file"),
            Row("`scan --json` (index present)", "walk + stat (Python)"),
            Row("`scan --json` (index present)", "walk + stat after histmig's start-up"),
            Row("`scan --json --no-index` (cold)", "read + parse of the lines a listing names: line 1, the message "
                "lines, the last `turn_context` (Python, after histmig's start-up)"),
            Row("`scan --json` (index present)", WARM_FLOOR)]
    doctor_index = home.parent / "state" / "doctor-index.json"    # tools/codex/doctor_index.py
    walk = [sys.executable, "-c", WALK_STAT, str(home / ".codex")]
    walk_started = [sys.executable, "-c", WALK_STAT_CLI, str(home / ".codex")]
    named = [sys.executable, "-c", READ_NAMED_CLI, str(home / ".codex")]
    warm_named = warm_floor(home, ".codex")
    for _ in range(pairs):
        warm = b.run(b.hm + ["scan", "--json"], home)     # the index is present after the first run
        rows[0].add(warm, b.run(cat, home, shell=True))
        rows[4].add(warm, b.run(walk, home))
        rows[5].add(warm, b.run(walk_started, home))
        rows[7].add(warm, b.run(warm_named, home))
        cold = b.run(b.hm + ["scan", "--json", "--no-index"], home)
        rows[3].add(cold, b.run(cat, home, shell=True))
        rows[6].add(cold, b.run(named, home))
        doctor_index.unlink(missing_ok=True)            # not timed: the cold run reads every file, writes the index
        rows[2].add(b.run(b.hm + ["doctor"], home, ok=(0, 1, 3)), b.run(cat, home, shell=True))
        rows[1].add(b.run(b.hm + ["doctor"], home, ok=(0, 1, 3)), b.run(cat, home, shell=True))
    return [rows[0], rows[3], rows[6], rows[4], rows[5], rows[7], rows[1], rows[2]]


WARM_FLOOR = "walk + stat + each file's record looked up in the loaded index + the rows as JSON (Python, after histmig's start-up)"


def warm_floor(home: Path, top: str) -> list[str]:
    """The warm scan's necessary-work floor (``WARM_NAMED_CLI``) over ``home/top``, with the index the
    scans keep in the runner's state dir (``Bench.env``; core/scanindex.py's ``FILE_NAME``)."""
    return [sys.executable, "-c", WARM_NAMED_CLI, str(home.parent / "state" / "scan-index.json"), str(home / top)]


def bench_flip(b: Bench, trees: dict[str, Path], pairs: int) -> list[Row]:
    flip = Row("`flip openai my-provider --apply`", "`cp -r` + `sync -f` (durable copy)")
    undo = Row("`undo` of that flip", "the flip's own apply")
    # the necessary work of a safe rewrite (bench/rewrite_floor.py): read, sha256 of old and new bytes,
    # temp, one syncfs, rename, of exactly the files the flip rewrites
    hashed = Row("`flip openai my-provider --apply`",
                 "read + sha256 of old and new bytes + temp + `syncfs` + rename of the files it rewrites (Python)")
    listing, stage = b.work / "flip-files.txt", b.work / "flip-stage"
    listing.write_text("\n".join(rewritten(b, b.fresh(trees["codex"], "flip"), ["flip", "openai", "my-provider"]))
                       + "\n")
    floor = [sys.executable, str(HERE / "rewrite_floor.py"), str(listing), str(stage)]
    # the least a temp-and-rename rewrite does: no hash, copied in the kernel as `cp` does
    kernel = Row("`flip openai my-provider --apply`",
                 "kernel copy (`copy_file_range`, no hash) + temp + `syncfs` + rename of the files it rewrites (Python)")
    for _ in range(pairs):
        home = b.fresh(trees["codex"], "flip")
        copy = b.work / "flip-copy"
        shutil.rmtree(copy, ignore_errors=True)
        applied = b.run(b.hm + ["flip", "openai", "my-provider", "--apply"], home)
        flip.add(applied, b.run(f"cp -r '{home / '.codex'}' '{copy}' && sync -f '{copy}'", home, shell=True))
        undo.add(b.run(b.hm + ["undo"], home), applied)
        home = b.fresh(trees["codex"], "flip")
        shutil.rmtree(stage, ignore_errors=True)
        hashed.add(applied, b.run(floor, home))
        home = b.fresh(trees["codex"], "flip")
        shutil.rmtree(stage, ignore_errors=True)
        kernel.add(applied, b.run(floor[:2] + ["--kernel"] + floor[2:], home))
    return [flip, hashed, kernel, undo]


def bench_move(b: Bench, trees: dict[str, Path], pairs: int) -> list[Row]:
    src = trees["move"]
    old, new = str(src / "work" / "app"), str(src / "work" / "app-moved")
    dry = Row("`move` (dry run)", "read all bytes + count lines (Python)")
    # the necessary work of a plan: every line that names OLD (each Claude record has a cwd) parsed once
    read_find_parse = '''import os, sys, orjson
needle, n = sys.argv[1].encode(), 0
for top in sys.argv[2:]:
    for d, _, names in os.walk(top):
        for name in names:
            with open(os.path.join(d, name), "rb") as f:
                buf = b""
                while chunk := f.read(1 << 20):
                    data = buf + chunk
                    end = data.rfind(b"\\n") + 1
                    i = data.find(needle, 0, end)
                    while i >= 0:
                        s, e = data.rfind(b"\\n", 0, i) + 1, data.find(b"\\n", i)
                        orjson.loads(data[s:e])
                        n += 1
                        i = data.find(needle, e + 1, end)
                    buf = data[end:]
print(n)
'''
    parsed = Row("`move` (dry run)", "read all bytes + find OLD + parse those lines (Python, orjson)")
    apply = Row("`move --apply`", "durable copy of the files it rewrites")
    hashed = Row("`move --apply`",
                 "read + sha256 of old and new bytes + temp + `syncfs` + rename of the files it rewrites (Python)")
    undo = Row("`undo` of that move", "the move's own apply")
    # histmig log of that move's transaction (a journal of tens of MB at 8,000 sessions, read a record
    # at a time: docs/safety.md) against reading the state dir's journals
    log = Row("`log --json` after that move", "`cat` of the state dir's journals")
    listing = b.work / "move-files.txt"
    listing.write_text("\n".join(rewritten(b, src / "home", ["move", old, new])) + "\n")
    stage, in_copy = b.work / "move-stage", b.work / "move-files-in-copy.txt"    # (rewritten in b.fresh's copy)
    in_copy.write_text(listing.read_text().replace(str(src) + os.sep, str(b.work / "move") + os.sep))
    home = src / "home"
    tops = [str(home / ".claude" / "projects"), str(home / ".codex" / "sessions")]
    floor_read = [sys.executable, "-c", READ_ALL, *tops]
    floor_parse = [sys.executable, "-c", read_find_parse, old, *tops]
    for _ in range(pairs):
        dry.add(b.run(b.hm + ["move", old, new], home), b.run(floor_read, home))
        parsed.add(b.run(b.hm + ["move", old, new], home), b.run(floor_parse, home))
        fresh = b.fresh(src, "move")
        out = b.work / "move-copy"
        shutil.rmtree(out, ignore_errors=True)
        a = b.run(b.hm + ["move", old, new, "--apply"], fresh)
        apply.add(a, b.run([sys.executable, "-c", COPY_LISTED, str(listing), str(out)], fresh))
        log.add(b.run(b.hm + ["log", "--json"], fresh),
                b.run(f"cat '{fresh.parent}'/state/tx/*/journal.jsonl > /dev/null", fresh, shell=True))
        undo.add(b.run(b.hm + ["undo"], fresh), a)
        fresh = b.fresh(src, "move")
        shutil.rmtree(stage, ignore_errors=True)
        hashed.add(a, b.run([sys.executable, str(HERE / "rewrite_floor.py"), str(in_copy), str(stage)], fresh))
    return [dry, parsed, apply, hashed, undo, log]


def bench_qwen(b: Bench, trees: dict[str, Path], pairs: int) -> list[Row]:
    """Qwen Code (issue 16): its listing and its move on a tree of ``qwen_bench.py``."""
    src = trees["qwen"]
    old, new = str(src / "work" / "app"), str(src / "work" / "app-moved")
    home = src / "home"
    apply = Row("`move --tool qwen --apply`", "durable copy of the files it rewrites")
    listing = b.work / "qwen-files.txt"
    listing.write_text("\n".join(rewritten(b, src / "home", ["move", old, new])) + "\n")
    scans = scan_rows(b, home, "qwen", ".qwen", pairs)
    for _ in range(pairs):
        fresh = b.fresh(src, "qwen")
        out = b.work / "qwen-copy"
        shutil.rmtree(out, ignore_errors=True)
        a = b.run(b.hm + ["move", old, new, "--tool", "qwen", "--apply"], fresh)
        apply.add(a, b.run([sys.executable, "-c", COPY_LISTED, str(listing), str(out)], fresh))
    return [*scans, apply]


def bench_listings(b: Bench, trees: dict[str, Path], pairs: int) -> list[Row]:
    """Pi and Gemini CLI (issue 16) and Claude Code (the move tree's half) against issue 15's scan
    rules: cold (``--no-index``: every file read) against ``cat`` of the same files, warm (the scan
    index present) against a Python walk + stat."""
    rows = []
    for tool, top in (("pi", ".pi"), ("gemini", ".gemini")):
        rows += scan_rows(b, trees[tool] / "home", tool, top, pairs)
    rows += scan_rows(b, b.fresh(trees["move"], "claude-scan"), "claude-code", ".claude", pairs)
    return rows + [startup_row(b, trees["pi"] / "home", pairs)]


def startup_row(b: Bench, home: Path, pairs: int) -> Row:
    """histmig's own start-up (the interpreter, click, the command table and the homes) against the
    bare interpreter: what every command pays before it reads a file."""
    row = Row("`histmig --version` (start-up)", "`python -c pass`")
    for _ in range(pairs):
        row.add(b.run(b.hm + ["--version"], home), b.run([sys.executable, "-c", "pass"], home))
    return row


def scan_rows(b: Bench, home: Path, tool: str, top: str, pairs: int) -> list[Row]:
    """``scan --tool TOOL --json`` cold and warm, each against its floor (issue 15's targets)."""
    scan = b.hm + ["scan", "--tool", tool, "--json"]
    cold = Row(f"`scan --tool {tool} --json --no-index`", "`cat` of every file")
    warm = Row(f"`scan --tool {tool} --json` (index present)", "walk + stat (Python)")
    warm_started = Row(f"`scan --tool {tool} --json` (index present)", "walk + stat after histmig's start-up")
    parsed = Row(f"`scan --tool {tool} --json --no-index`",
                 "walk + read + parse every line (Python, orjson) after histmig's start-up")
    cat = f"find '{home}/{top}' -type f -exec cat {{}} + > /dev/null"
    walk = [sys.executable, "-c", WALK_STAT, str(home / top)]
    walk_started = [sys.executable, "-c", WALK_STAT_CLI, str(home / top)]
    read_parse = [sys.executable, "-c", READ_PARSE_CLI, str(home / top)]
    warm_named = Row(f"`scan --tool {tool} --json` (index present)", WARM_FLOOR)
    named = warm_floor(home, top)
    b.run(scan, home)               # builds the index the warm runs use
    for _ in range(pairs):
        c = b.run(scan + ["--no-index"], home)
        cold.add(c, b.run(cat, home, shell=True))
        parsed.add(c, b.run(read_parse, home))
        a = b.run(scan, home)
        warm.add(a, b.run(walk, home))
        warm_started.add(a, b.run(walk_started, home))
        warm_named.add(a, b.run(named, home))
    return [cold, parsed, warm, warm_started, warm_named]


def bench_search(b: Bench, trees: dict[str, Path], pairs: int) -> list[Row]:
    """``histmig search`` (issue 18) against ``grep -r -F`` over the same files: a phrase users typed
    (``step 7 done``: a user prompt and an answer per session), smart case (lower case: any case, so
    against ``grep -i``) and ``-s``, on the Codex tree and the Claude Code half of the move tree. The scan
    index is built first (not timed): search reads its metadata there and streams the files; then the
    same searches cold, with ``--no-index`` (sessions located by a walk, listing fields read for matches
    only)."""
    codex, claude = trees["codex"] / "home", trees["move"] / "home"
    cases = [(codex, ["search", "step 7 done"], f"grep -r -F -i 'step 7 done' '{codex}/.codex'", "`grep -r -F -i`"),
             (codex, ["search", "-s", "step 7 done"], f"grep -r -F 'step 7 done' '{codex}/.codex'", "`grep -r -F`"),
             (claude, ["search", "--tool", "claude-code", "-s", "step 7 in"],
              f"grep -r -F 'step 7 in' '{claude}/.claude/projects'", "`grep -r -F`")]
    # cold: no scan index (a first search; ``--no-index`` neither reads nor writes it), page cache warm
    cases += [(home, args[:1] + ["--no-index"] + args[1:], grep, floor) for home, args, grep, floor in cases]
    rows = []
    for home, args, grep, floor in cases:
        b.run(b.hm + ["scan", "--json"], home)
        tree = "Codex" if home == codex else "Claude Code"
        row = Row(f"`{' '.join(args)}` ({tree})", f"{floor} of the same files")
        # the Codex -s rows also against grep after histmig's start-up (docs/bench.md, "Search")
        started = Row(row.command, f"{floor} after histmig's start-up") if tree == "Codex" and "-s" in args else None
        for _ in range(pairs):
            a = b.run(b.hm + args, home, ok=(0, 1))
            row.add(a, b.run(grep, home, shell=True, ok=(0, 1)))
            if started is not None:
                started.add(a, b.run([sys.executable, "-c", GREP_CLI, *shlex.split(grep)[1:]], home, ok=(0, 1)))
        rows += [row] + ([started] if started is not None else [])
    return rows + cold_search_rows(b, codex, pairs)


def cold_search_rows(b: Bench, codex: Path, pairs: int) -> list[Row]:
    """``search --no-index -s`` on the Codex tree with the page cache dropped before each run, against
    grep from a dropped cache too: a first search after a reboot, where both wait on the disk
    (docs/bench.md, "search"). Only where this process may drop the cache (root); none otherwise."""
    if b.quick or not can_drop_caches():
        return []
    args = ["search", "--no-index", "-s", "step 7 done"]
    row = Row(f"`{' '.join(args)}` (Codex), page cache dropped", "`grep -r -F` of the same files, page cache dropped")
    for _ in range(pairs):
        row.add(b.run(b.hm + args, codex, ok=(0, 1), drop=True),
                b.run(f"grep -r -F 'step 7 done' '{codex}/.codex'", codex, shell=True, ok=(0, 1), drop=True))
    return [row]


def can_drop_caches() -> bool:
    return os.access("/proc/sys/vm/drop_caches", os.W_OK)


def rewritten(b: Bench, home: Path, command: list[str]) -> list[str]:
    """The files a plan rewrites (its write operations), for the floors that copy or rewrite them."""
    plan = b.work / "plan.json"
    b.run(b.hm + command + ["--plan-out", str(plan)], home)
    ops = json.loads(plan.read_text()).get("operations", [])
    return sorted({op["path"] for op in ops if op.get("kind") == "write" and os.path.isfile(op.get("path", ""))})


SHARE = {"convert": "a quarter of the sessions", "convert-all": "every session"}


def convert_counts(sessions: int) -> dict[str, int]:
    """The convert trees: a quarter of the run's sessions (the row of earlier runs) and all of them
    (issue 15 states convert's memory target at 2,000 sessions; a start-up weighs less there)."""
    return {"convert": max(2, sessions // 4), "convert-all": max(2, sessions)}


def bench_convert(b: Bench, trees: dict[str, Path], pairs: int) -> list[Row]:
    rows = []
    for name, count in convert_counts(b.sessions).items():
        command = f"`convert --to claude-code --from codex --all --apply`, {count:,} sessions"
        key = f"`convert --to claude-code --from codex --all --apply`, {SHARE[name]}"
        row = Row(command, "orjson loads+dumps+write of the same lines", key=key)
        durable = Row(command, "orjson loads+dumps+write of the same lines to temps + `syncfs` + rename + `syncfs`",
                      key=key)
        for _ in range(pairs):
            a = b.run(b.hm + ["convert", "--to", "claude-code", "--from", "codex", "--all", "--apply"],
                      b.fresh(trees[name], "convert"))
            for floor, extra in ((row, []), (durable, ["durable"])):
                home = b.fresh(trees[name], "convert")
                floor.add(a, b.run([sys.executable, "-c", CONVERT, str(home / ".codex" / "sessions"),
                                    str(floor_folder(home)), *extra], home))
        rows += [row, durable]
    return rows


def floor_folder(home: Path) -> Path:
    """Where convert's floor writes: a new folder beside the ones convert writes into, in a fresh copy
    of the tree as convert's own run had. Where a new folder lies decides what a create costs on ext4
    (the inode allocator searches the parent's block group first): on the bench VM 2,000 creates in a
    new folder under the copied tree took 160-180 us each, under /tmp 30-40 us (docs/bench.md, the
    run 22 paragraph)."""
    return home / ".claude" / "projects" / "-floor"


def bench_pack(b: Bench, trees: dict[str, Path], pairs: int) -> list[Row]:
    """``pack --all`` of the Codex tree (issue 19) against ``tar --zstd -cf`` of the same files, and
    against the same ``tar`` run beside ``openssl dgst -sha256`` of every file (what a bundle needs
    besides the tar: a sha256 per file; docs/bench.md, "pack"), all three in the same loop."""
    home = trees["codex"] / "home"
    tops = [t for t in ("sessions", "archived_sessions") if (home / ".codex" / t).is_dir()]
    row = Row("`pack --all -o B.tar.zst`", "`tar --zstd -cf` of the same files")
    hashed = Row("`pack --all -o B.tar.zst`", "that `tar` beside `openssl dgst -sha256` of each file")
    for i in range(pairs):
        out, tar = b.work / f"pack-{i}.tar.zst", b.work / f"tar-{i}.tar.zst"
        a = b.run(b.hm + ["pack", "--all", "-o", str(out)], home)
        row.add(a, b.run(f"tar --zstd -cf '{tar}' -C '{home / '.codex'}' {' '.join(tops)}", home, shell=True))
        tar.unlink(missing_ok=True)
        hashed.add(a, b.run(f"cd '{home / '.codex'}' && {{ tar --zstd -cf '{tar}' {' '.join(tops)} & find {' '.join(tops)} "
                            "-type f -print0 | xargs -0 openssl dgst -sha256 >/dev/null; wait; }", home, shell=True))
        out.unlink(missing_ok=True)
        tar.unlink(missing_ok=True)
    return [row, hashed]


def table(rows: list[Row]) -> str:
    lines = ["| command | histmig | floor in the same loop | ratio | peak RSS |", "|---|---|---|---|---|"]
    return "\n".join(lines + ["| " + " | ".join(r.cells()) + " |" for r in rows])


def write_doc(doc: Path, text: str, marks: tuple[str, str] = (BEGIN, END)) -> None:
    """Replace the runner's part of ``doc`` (between its markers), or add it at the end."""
    begin, end = marks
    block = f"{begin}\n{text}\n{end}"
    old = doc.read_text() if doc.exists() else "# Benchmarks\n"
    if begin in old and end in old:
        new = old[:old.index(begin)] + block + old[old.index(end) + len(end):]
    else:
        new = old.rstrip("\n") + "\n\n" + block + "\n"
    doc.write_text(new)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sessions", type=int, default=500, help="sessions per tree (500, 2000, 8000)")
    ap.add_argument("--scale", help="several sizes, e.g. 500,2000,8000 (run smallest first): every step at each "
                    "(trees built and removed in turn) and one table of histmig's time and memory across them")
    ap.add_argument("--mb", type=float, help="MB of the Codex and move trees (default: 0.4 MB per session)")
    ap.add_argument("--grow", help="several tree sizes in MB at --sessions sessions, e.g. 100,400,1600 (smallest "
                    "first): every step at each, the same sessions made longer, and one table of histmig's time "
                    "and memory across them (memory must not grow with the lines read)")
    ap.add_argument("--pairs", type=int, default=5, help="A/B pairs per command (at least 5 for a result)")
    ap.add_argument("--quick", action="store_true", help="a tiny tree and 1 pair: a smoke run, not a measurement")
    ap.add_argument("--work", type=Path, help="work folder (default: a new temporary one, removed after)")
    ap.add_argument("--doc", type=Path, default=ROOT / "docs" / "bench.md", help="the page the table is written into")
    ap.add_argument("--no-doc", action="store_true", help="print the table only")
    ap.add_argument("--no-compile", action="store_true", help="do not compile histmig's bytecode first")
    ap.add_argument("--only", action="append", help="only this step (reads, flip, move, convert, qwen, listings, "
                    "search, pack; repeatable)")
    a = ap.parse_args(argv)
    if a.grow:
        return grow_main(a)
    sizes = sorted({int(n) for n in a.scale.split(",")}) if a.scale else [a.sessions]
    sizes, pairs = ([8 * (i + 1) for i in range(len(sizes))], 1) if a.quick else (sizes, a.pairs)
    return _into_doc(a, lambda work: _sizes(work, a, sizes, pairs))


def _sizes(work: Path, a: argparse.Namespace, sizes: list[int], pairs: int) -> tuple[str, tuple[str, str]]:
    """One size's table, or with ``--scale`` the table across the sizes; and the page's marks for it."""
    runs = [(n, *run_size(work / f"n{n}" if a.scale else work, n, a, pairs)) for n in sizes]
    if a.scale:
        return scale_report(runs, pairs, a.quick), SCALE_MARKS
    n, rows, size = runs[0]
    return report(rows, n, size, pairs, a.quick), (BEGIN, END)


def grow_main(a: argparse.Namespace) -> int:
    """``--grow``: :func:`run_size` at each tree size, the number of sessions fixed, into one table."""
    mbs = sorted({float(x) for x in a.grow.split(",")})
    sessions, mbs, pairs = (8, [float(i + 1) for i in range(len(mbs))], 1) if a.quick else (a.sessions, mbs, a.pairs)

    def grown(work: Path) -> tuple[str, tuple[str, str]]:
        runs = [(mb, *run_size(work / f"mb{mb:g}", sessions, argparse.Namespace(**{**vars(a), "mb": mb, "scale": "grow"}),
                               pairs)) for mb in mbs]
        return grow_report(runs, sessions, pairs, a.quick), GROW_MARKS
    return _into_doc(a, grown)


def _into_doc(a: argparse.Namespace, make) -> int:
    """Compile, make the tables in a work folder (removed after unless ``--work``), print them and
    write them between their marks in the page."""
    if not a.no_compile:      # as an install does: PYTHONDONTWRITEBYTECODE would recompile every run
        compileall.compile_dir(str(ROOT / "histmig"), quiet=1)
    work = a.work or Path(tempfile.mkdtemp(prefix="histmig-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        text, marks = make(work)
        print("\n" + text)
        if not a.no_doc:
            write_doc(a.doc, text, marks)
        return 0
    finally:
        if not a.work:
            shutil.rmtree(work, ignore_errors=True)


def run_size(work: Path, sessions: int, a: argparse.Namespace, pairs: int) -> tuple[list[Row], int]:
    """Every step (or ``--only``'s) on trees of ``sessions`` sessions: their rows, and the Codex home's bytes.
    With ``--scale`` each size's trees are removed after its steps (an 8,000-session set is ~12 GB)."""
    mb = a.mb or (1 if a.quick else sessions * 0.4)
    work.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    trees = build(work, sessions, mb)
    size = sum(os.path.getsize(f) for f in files_of(trees["codex"] / "home", ".codex"))
    print(f"{sessions:,} sessions: trees built in {time.perf_counter() - t0:.1f} s (Codex home: "
          f"{size / 2**20:.0f} MiB)", flush=True)
    b = Bench(work, a.quick, sessions)
    rows = []
    steps = (bench_reads, bench_flip, bench_move, bench_convert, bench_qwen, bench_listings, bench_search, bench_pack)
    for step in [s for s in steps if not a.only or s.__name__ in {f"bench_{n}" for n in a.only}]:
        done = step(b, trees, pairs)
        rows += done
        print("\n".join("| " + " | ".join(r.cells()) + " |" for r in done), flush=True)
    if a.scale and not a.work:
        shutil.rmtree(work, ignore_errors=True)
    return rows, size


def scale_report(runs: list[tuple[int, list[Row], int]], pairs: int, quick: bool) -> str:
    """histmig's median time and peak RSS per command at each size (a command once, however many floors
    it ran against), and two growth figures: the time per session added between the two largest
    sizes against the same between the two before them (1.0x: linear), and the peak RSS added from
    the smallest size to the largest."""
    when = time.strftime("%Y-%m-%d", time.gmtime())
    sizes = [n for n, _, _ in runs]
    head = (f"`python bench/run.py --scale {','.join(map(str, sizes))} --pairs {pairs}`{' --quick' if quick else ''}, "
            f"{when}: histmig's median wall time and largest peak RSS over {pairs} run(s) at each size (Codex "
            f"homes of {', '.join(f'{s / 2**20:,.0f}' for _, _, s in runs)} MiB). Per session added: (time at the "
            f"largest size - time at the middle one) / the sessions between them, against the same between the "
            f"two smaller sizes (1.0x: linear; start-up and other fixed costs cancel out).")
    return head + "\n\n" + _across(runs, [f"{n:,} sessions" for n in sizes], "per session added")


def grow_report(runs: list[tuple[float, list[Row], int]], sessions: int, pairs: int, quick: bool) -> str:
    """:func:`scale_report` across tree sizes at one number of sessions: what grows with the bytes and
    lines of the sessions rather than with their number."""
    when = time.strftime("%Y-%m-%d", time.gmtime())
    mbs = [mb for mb, _, _ in runs]
    head = (f"`python bench/run.py --sessions {sessions} --grow {','.join(f'{mb:g}' for mb in mbs)} --pairs {pairs}`"
            f"{' --quick' if quick else ''}, {when}: the same {sessions:,} sessions in trees of each size (Codex homes "
            f"of {', '.join(f'{s / 2**20:,.0f}' for _, _, s in runs)} MiB; longer sessions, not more of them): "
            f"histmig's median wall time and largest peak RSS over {pairs} run(s) at each size. Per MB added: "
            f"(time at the largest size - time at the middle one) / the MB between them, against the same between "
            f"the two smaller sizes (1.0x: linear in the bytes).")
    return head + "\n\n" + _across(runs, [f"{mb:,.0f} MB" for mb in mbs], "per MB added")


def _across(runs: list[tuple[float, list[Row], int]], heads: list[str], growth: str) -> str:
    """The table of histmig's time and peak RSS per command at each run's size (``heads``), then the
    time growth between the sizes and the RSS added from the first to the last."""
    cols = ["command", *heads, growth, "RSS added"]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    by_size = [{(r.key or r.command): r.histmig() for r in rows} for _, rows, _ in runs]
    for key in by_size[-1]:
        got = [m.get(key) for m in by_size]
        cells = ["-" if g is None else f"{g[0]:.2f} s, {g[1]:.0f} MB" for g in got]
        lines.append("| " + " | ".join([key, *cells, _growth([n for n, _, _ in runs], got), _rss_added(got)]) + " |")
    return "\n".join(lines)


def _growth(sizes: list[float], got: list) -> str:
    if len(sizes) < 3 or any(g is None for g in got[-3:]):
        return "-"
    (n1, n2, n3), (t1, t2, t3) = sizes[-3:], [g[0] for g in got[-3:]]
    if not n1 < n2 < n3:
        return "-"
    before, after = (t2 - t1) / (n2 - n1), (t3 - t2) / (n3 - n2)
    return f"{after / before:.1f}x" if before > 0 else "-"


def _rss_added(got: list) -> str:
    if got[0] is None or got[-1] is None:
        return "-"
    return f"{got[-1][1] - got[0][1]:+.0f} MB"


def report(rows: list[Row], sessions: int, size: int, pairs: int, quick: bool) -> str:
    when = time.strftime("%Y-%m-%d", time.gmtime())
    head = (f"`python bench/run.py --sessions {sessions} --pairs {pairs}`{' --quick' if quick else ''}, {when}: "
            f"Codex home of {sessions:,} sessions ({size / 2**20:.0f} MiB), move tree of {sessions:,} sessions, "
            f"{' and '.join(f'{n:,}' for n in convert_counts(sessions).values())} sessions to convert. Wall times are medians of {pairs} pair(s); "
            f"ratio = histmig / floor within each pair.")
    return head + "\n\n" + table(rows)


if __name__ == "__main__":
    sys.exit(main())
