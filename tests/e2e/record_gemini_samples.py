"""Record ``histmig/samples/gemini/<case>/`` with the real Gemini CLI (tests/e2e/gemini_client.py).

    python -m tests.e2e.record_gemini_samples [--target DIR] [CASE ...]

Like tests/e2e/record_samples.py: every case runs from scratch in ``/tmp/histmig-rec`` (HOME
``/tmp/histmig-rec/home``, projects under ``/tmp/histmig-rec/work/``), so files are kept byte for byte.
Kept: ``projects.json``, ``tmp/<slug>/chats/``, both ``.project_root`` markers and ``settings.json``;
left out: logs, tool outputs, the shell history.
"""
from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

from . import gemini_client as gem
from . import versions
from .clients import Scratch
from .fake_api import FakeAPI
from .record_samples import REC_ROOT, SAMPLES_SECRET, UNICODE_DIR


def plain(exe: Path, s: Scratch, api: FakeAPI) -> None:
    gem.run_gemini(exe, s, api, "Say hello in one short sentence.", s.project("app")).check()


def tool_call(exe: Path, s: Scratch, api: FakeAPI) -> None:
    gem.run_gemini(exe, s, api, "RUN: echo hello from the tool", s.project("app")).check()


def resumed(exe: Path, s: Scratch, api: FakeAPI) -> None:
    app = s.project("app")
    gem.run_gemini(exe, s, api, "Say hello in one short sentence.", app).check()
    gem.run_gemini(exe, s, api, "Thanks. Now say goodbye.", app, resume="latest").check()


def unicode_cwd(exe: Path, s: Scratch, api: FakeAPI) -> None:
    gem.run_gemini(exe, s, api, "Hello from a folder with a space and データ.", s.project(*UNICODE_DIR)).check()


CASES = {"plain": plain, "tool-call": tool_call, "resumed": resumed, "unicode-cwd": unicode_cwd}


def export(gdir: Path, out: Path) -> None:
    for name in ("projects.json", "settings.json"):
        if (gdir / name).exists():
            shutil.copy2(gdir / name, out / name)
    for slug_dir in sorted((gdir / "tmp").iterdir()):
        if not slug_dir.is_dir() or not (slug_dir / ".project_root").exists():
            continue
        dst = out / "tmp" / slug_dir.name
        dst.mkdir(parents=True)
        shutil.copy2(slug_dir / ".project_root", dst / ".project_root")
        if (slug_dir / "chats").is_dir():
            shutil.copytree(slug_dir / "chats", dst / "chats")
        hist = gdir / "history" / slug_dir.name / ".project_root"
        if hist.exists():
            (out / "history" / slug_dir.name).mkdir(parents=True)
            shutil.copy2(hist, out / "history" / slug_dir.name / ".project_root")


def record(case: str, fn, exe: Path, target: Path) -> Path:
    shutil.rmtree(REC_ROOT, ignore_errors=True)
    scratch = Scratch(REC_ROOT).create()
    with FakeAPI(secret=SAMPLES_SECRET) as api:
        gem.setup(scratch)
        fn(exe, scratch, api)
    out = target / "gemini" / case
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    export(gem.gemini_dir(scratch), out)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--target", type=Path, default=Path(__file__).resolve().parents[2] / "histmig" / "samples")
    ap.add_argument("cases", nargs="*")
    args = ap.parse_args(argv)
    exe = gem.install()
    for case, fn in CASES.items():
        if args.cases and case not in args.cases:
            continue
        out = record(case, fn, exe, args.target)
        print(f"gemini/{case}: {sum(1 for p in out.rglob('*') if p.is_file())} files -> {out}")
    print(f"recorded with gemini {versions.GEMINI}", file=sys.stderr)
    shutil.rmtree(REC_ROOT, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
