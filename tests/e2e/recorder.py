"""What the per-client sample recorders share (tests/e2e/record_pi_samples.py, record_qwen_samples.py,
record_gemini_samples.py, record_copilot_samples.py, record_cline_samples.py, record_opencode_samples.py):
each case runs from scratch under a path that names nobody against a fake API signing with
``SAMPLES_SECRET`` (the rules of tests/e2e/record_samples.py), and a command line that records some or
all cases into ``histmig/samples/<tool>/<case>/``."""
from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path
from typing import Any, Callable

from .clients import Scratch
from .fake_api import FakeAPI
from .record_samples import SAMPLES_SECRET

Case = Callable[[Path, Scratch, FakeAPI], Any]          # (client executable, scratch, fake API)


def run_case(root: Path, exe: Path, fn: Case, setup: Callable[[Scratch, FakeAPI], Any] | None = None) -> Scratch:
    """Run one case in a fresh scratch world at ``root`` (``setup`` first, with the fake API up)."""
    shutil.rmtree(root, ignore_errors=True)
    scratch = Scratch(root).create()
    with FakeAPI(secret=SAMPLES_SECRET) as api:
        if setup is not None:
            setup(scratch, api)
        fn(exe, scratch, api)
    return scratch


def fresh_dir(out: Path) -> Path:
    """``out`` emptied (a case's sample folder is recorded whole)."""
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    return out


def main(argv: list[str] | None, *, tool: str, doc: str, cases: dict[str, Case], install: Callable[[], Path],
         record: Callable[[str, Case, Path, Path], Path], root: Path, version: str | None = None) -> int:
    """``python -m tests.e2e.record_<tool>_samples [--target DIR] [CASE ...]``."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("--target", type=Path, default=Path(__file__).resolve().parents[2] / "histmig" / "samples")
    ap.add_argument("cases", nargs="*", help=f"some of: {', '.join(cases)}")
    args = ap.parse_args(argv)
    unknown = [c for c in args.cases if c not in cases]
    if unknown:
        ap.error(f"unknown case {unknown[0]!r}")
    exe = install()
    for case, fn in cases.items():
        if not args.cases or case in args.cases:
            out = record(case, fn, exe, args.target)
            print(f"{tool}/{case}: {sum(1 for p in out.rglob('*') if p.is_file())} files -> {out}")
    if version is not None:
        print(f"recorded with {tool} {version}", file=sys.stderr)
    shutil.rmtree(root, ignore_errors=True)
    return 0
