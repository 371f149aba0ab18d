"""Benchmark histmig on a large Pi history: listing, move planning and doctor, against reading the
same files' first lines; and one big Pi session shown with bounded memory.

Installs the recorded Pi samples into a scratch home and copies them (new UUIDv7 ids, one project folder
per 50 sessions) until the home holds N sessions; the long session repeats a tool turn until it is
``--mb`` MB. Each step runs in a fresh process; wall time and peak RSS (``wait4``) are reported.

    python bench/pi_bench.py [--sessions 5000] [--mb 200] [--keep DIR]
"""
from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.scan_bench import head_floor, histmig_env, print_steps, timed, tree_args  # noqa: E402
from histmig.cli import samples              # noqa: E402
from histmig.tools.pi.layout import pi_slug   # noqa: E402

WORK = "/tmp/histmig-pi-bench-work"


def build(home: Path, n: int, mb: int, total_mb: float = 0) -> tuple[int, str]:
    """``n`` sessions (the first one ``mb`` MB long); ``total_mb``: every session grown by repeating its
    turns (the lines after its first user prompt) until the tree holds about that many MB, as a real
    history does (the recorded samples alone are 2-4 KB a session, where start-up dominates a listing)."""
    homes = samples.install(home, tools=("pi",))
    root = homes.pi / "sessions"
    src = sorted(root.rglob("*.jsonl"))
    lines = [p.read_bytes().split(b"\n", 1) for p in src]
    for old in list(root.iterdir()):
        shutil.rmtree(old)
    for i in range(n):
        head, rest = lines[i % len(lines)]
        header = json.loads(head)
        cwd = f"{WORK}/p{i // 50}"
        sid = f"01a231e8-{i >> 16:04x}-7{i & 0xfff:03x}-8000-{i:012x}"
        header.update(id=sid, cwd=cwd)
        folder = root / pi_slug(cwd)
        folder.mkdir(exist_ok=True)
        with open(folder / f"2026-12-01T00-00-00-000Z_{sid}.jsonl", "wb") as fh:
            fh.write(json.dumps(header, separators=(",", ":")).encode() + b"\n" + rest)
            grow = int(total_mb * 1_000_000 // n) - len(head) - len(rest)
            turn = b"".join(ln + b"\n" for ln in rest.splitlines()[3:])
            if grow > 0 and turn and i:
                fh.write(turn * (grow // len(turn) + 1))
            if i == 0:       # the long one: its tool turns repeated up to --mb, written in pieces
                turn = b"".join(ln + b"\n" for ln in rest.splitlines()[3:])
                for _ in range(max(1, mb * 1_000_000 // max(len(turn), 1))):
                    fh.write(turn)
    return n, f"01a231e8-0000-7000-8000-{0:012x}"


def main() -> None:
    args, root = tree_args("pi", 5000)
    home = root / "home"
    n, big = build(home, args.sessions, args.mb)
    size = sum(f.stat().st_size for f in home.rglob("*.jsonl"))
    env, hm = histmig_env(home, root / "state", "PI_CODING_AGENT_DIR", "PI_CODING_AGENT_SESSION_DIR")
    steps = [
        head_floor(home, env),
        ("histmig scan --tool pi --json", timed([*hm, "scan", "--tool", "pi", "--json"], env)),
        ("histmig move (dry run, 50 sessions + the long one)", timed([*hm, "move", f"{WORK}/p0", f"{WORK}/q0",
                                                                      "--tool", "pi"], env)),
        ("histmig doctor --tool pi (every line read)", timed(f"{' '.join(hm)} doctor --tool pi > /dev/null; test $? -le 1",
                                                             env, shell=True)),
        (f"histmig show <the {args.mb} MB session>", timed(f"{' '.join(hm)} show {big} > /dev/null", env, shell=True)),
    ]
    print_steps(f"{n:,} Pi sessions, {size / 1e6:.0f} MB", steps)
    if not args.keep:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
