"""Benchmark the Qwen Code reader and move planner (issue 16: the speed and memory rules of the other
readers hold for the new ones) on a generated Qwen home.

Copies the recorded samples (histmig/samples/qwen/) until the home holds N sessions in one project
(--mb pads each to about the given total with a long answer), then times, each in a fresh process:

  1. ``find … -name '*.jsonl' -exec head -qn1 {} +``     (the floor: open every file, read its head)
  2. ``histmig scan --tool qwen --json``                 (heads and tails only)
  3. ``histmig move OLD NEW --tool qwen``                (dry run: every record's cwd planned)
  4. ``histmig move OLD NEW --tool qwen --apply``
  5. ``histmig undo``

    python bench/qwen_bench.py [--sessions 2000] [--mb 200] [--keep DIR]
"""
from __future__ import annotations

import shutil
import sys
import uuid
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.scan_bench import head_floor, histmig_env, print_steps, timed, tree_args  # noqa: E402
from histmig.tools.qwen.adapter import qwen_slug  # noqa: E402

SAMPLE = Path(__file__).resolve().parent.parent / "histmig/samples/qwen/resumed/projects"
REC = "/tmp/histmig-rec/work/app"


def build(home: Path, old: str, n: int, mb: float) -> None:
    src = next(SAMPLE.glob("*/chats/*.jsonl"))
    data = src.read_bytes().replace(f'"cwd":"{REC}"'.encode(), orjson.dumps({"cwd": old})[1:-1])
    pad = int(max(0, mb * 1_000_000 // n - len(data)))
    if pad:
        rec = orjson.loads(data.splitlines()[-1])
        rec["message"] = {"role": "model", "parts": [{"text": "x" * pad}]}
        data += orjson.dumps(rec) + b"\n"
    chats = home / ".qwen" / "projects" / qwen_slug(old) / "chats"
    chats.mkdir(parents=True)
    for i in range(n):
        sid = str(uuid.UUID(int=i + 1, version=4))
        (chats / f"{sid}.jsonl").write_bytes(data.replace(src.stem.encode(), sid.encode()))


def main() -> None:
    args, root = tree_args("qwen", 2000)
    home, old, new = root / "home", str(root / "work/app"), str(root / "work/app2")
    build(home, old, args.sessions, args.mb)
    Path(new).mkdir(parents=True)     # the project was moved (mv): NEW exists, OLD does not
    size = sum(f.stat().st_size for f in home.rglob("*.jsonl"))
    env, hm = histmig_env(home, root / "state", "QWEN_HOME", "QWEN_RUNTIME_DIR")
    rows = [head_floor(home, env),
            ("histmig scan --tool qwen --json", timed([*hm, "scan", "--tool", "qwen", "--json"], env)),
            ("histmig move --tool qwen (dry run)", timed([*hm, "move", old, new, "--tool", "qwen"], env)),
            ("histmig move --tool qwen --apply", timed([*hm, "move", old, new, "--tool", "qwen", "--apply"], env)),
            ("histmig undo", timed([*hm, "undo"], env))]
    print_steps(f"{args.sessions:,} Qwen sessions, {size / 1e6:.0f} MB", rows)
    if not args.keep:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
