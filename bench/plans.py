"""Write the flip and move plans of two fixed bench trees, to compare two commits byte for byte.

    python bench/plans.py OUT_DIR [--trees DIR]     # at commit A, then at commit B into another OUT_DIR
    cmp A/flip.json B/flip.json && cmp A/move.json B/move.json

The trees (a 300-session Codex home from gen_codex.py, a 300-session Claude Code + Codex project from
move_bench.py's generator) are generated once under ``--trees`` (default /tmp/histmig-plan-trees) and
reused, so both runs plan the same files at the same paths. Issue 13 used it to show that the layout
change left every plan byte-identical.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
OLD, NEW = "/tmp/histmig-plan-trees-project/old", "/tmp/histmig-plan-trees-project/new"
PROVIDER = '\n[model_providers.my-provider]\nname = "x"\nbase_url = "http://127.0.0.1:1/v1"\n'


def make_trees(trees: Path) -> None:
    if (trees / "done").exists():
        return
    subprocess.run([sys.executable, str(HERE / "gen_codex.py"), str(trees / "flip"), "--sessions", "300", "--mb", "60"],
                   check=True, stdout=subprocess.DEVNULL)
    with open(trees / "flip" / ".codex" / "config.toml", "a") as f:
        f.write(PROVIDER)
    sys.path.insert(0, str(HERE))
    import move_bench
    move_bench.generate(trees / "move", 300, 60, OLD)
    (trees / "done").touch()


def plan(home: Path, out: Path, argv: list[str]) -> None:
    env = dict(os.environ, HOME=str(home), CODEX_HOME=str(home / ".codex"), CLAUDE_CONFIG_DIR=str(home / ".claude"),
               MINI_CC_HOME=str(home / ".mini_cc"), HISTMIG_STATE_DIR=str(home.parent / "state"))
    subprocess.run([sys.executable, "-m", "histmig", *argv, "--plan-out", str(out)], env=env, cwd=HERE.parent,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--trees", type=Path, default=Path("/tmp/histmig-plan-trees"))
    args = ap.parse_args(argv)
    make_trees(args.trees)
    args.out.mkdir(parents=True, exist_ok=True)
    plan(args.trees / "flip", args.out / "flip.json", ["flip", "openai", "my-provider", "--exact"])
    plan(args.trees / "move", args.out / "move.json", ["move", OLD, NEW])
    for name in ("flip.json", "move.json"):
        print(f"{args.out / name}: {(args.out / name).stat().st_size:,} bytes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
