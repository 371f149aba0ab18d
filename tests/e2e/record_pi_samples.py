"""Record ``histmig/samples/pi/<case>/`` with the real Pi client (tests/e2e/pi_client.py).

    python -m tests.e2e.record_pi_samples [--target DIR] [CASE ...]

Same rules as tests/e2e/record_samples.py: every case runs from scratch in ``/tmp/histmig-rec-pi`` (a path that
names nobody, so files are kept byte for byte) against a fake API signing with ``SAMPLES_SECRET``. Each case
is a Pi agent dir (``PI_CODING_AGENT_DIR``): ``sessions/`` and ``models.json`` (port replaced by 8080);
``auth.json`` and ``settings.json`` are left out.
"""
from __future__ import annotations

import argparse
import re
import shutil
import sys
from pathlib import Path

from . import versions
from .clients import Scratch
from .fake_api import FakeAPI
from .pi_client import agent_dir, install, pi_setup, run_pi
from .record_samples import SAMPLES_SECRET, UNICODE_DIR

REC_ROOT = Path("/tmp/histmig-rec-pi")     # its own folder: the other recorders clear theirs


def pi_plain(pi, s, api):
    run_pi(pi, s, api, "Say hello in one short sentence.", s.project("app")).check()


def pi_tool_thinking(pi, s, api):
    run_pi(pi, s, api, "RUN: echo hello from the tool", s.project("app")).check()


def pi_resumed(pi, s, api):
    app = s.project("app")
    run_pi(pi, s, api, "RUN: ls -a", app).check()
    run_pi(pi, s, api, "Thanks. Now summarise what you saw.", app, continue_=True).check()


def pi_unicode_cwd(pi, s, api):
    run_pi(pi, s, api, "Hello from a folder with a space and データ.", s.project(*UNICODE_DIR)).check()


CASES = {"plain": pi_plain, "tool-thinking": pi_tool_thinking, "resumed": pi_resumed, "unicode-cwd": pi_unicode_cwd}


def record(case: str, fn, pi: Path, target: Path) -> Path:
    shutil.rmtree(REC_ROOT, ignore_errors=True)
    scratch = Scratch(REC_ROOT).create()
    with FakeAPI(secret=SAMPLES_SECRET) as api:
        pi_setup(scratch, api)
        fn(pi, scratch, api)
    home, out = agent_dir(scratch), target / "pi" / case
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    shutil.copytree(home / "sessions", out / "sessions")
    (out / "models.json").write_text(re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:8080", (home / "models.json").read_text()))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--target", type=Path, default=Path(__file__).resolve().parents[2] / "histmig" / "samples")
    ap.add_argument("cases", nargs="*")
    args = ap.parse_args(argv)
    pi = install()
    for case, fn in CASES.items():
        if not args.cases or case in args.cases:
            out = record(case, fn, pi, args.target)
            print(f"pi/{case}: {sum(1 for p in out.rglob('*') if p.is_file())} files -> {out}")
    print(f"recorded with pi {versions.PI}", file=sys.stderr)
    shutil.rmtree(REC_ROOT, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
