"""Record ``histmig/samples/gemini/<case>/`` with the real Gemini CLI (tests/e2e/gemini_client.py).

    python -m tests.e2e.record_gemini_samples [--target DIR] [CASE ...]

Like tests/e2e/record_samples.py: every case runs from scratch in ``/tmp/histmig-rec`` (HOME
``/tmp/histmig-rec/home``, projects under ``/tmp/histmig-rec/work/``), so files are kept byte for byte.
Kept: ``projects.json``, ``tmp/<slug>/chats/``, both ``.project_root`` markers and ``settings.json``;
left out: logs, tool outputs, the shell history.
"""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

from . import gemini_client as gem
from . import recorder, versions
from .clients import Scratch
from .fake_api import FakeAPI
from .record_samples import REC_ROOT, UNICODE_DIR
from .recorder import fresh_dir, run_case


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
    scratch = run_case(REC_ROOT, exe, fn, lambda scratch, api: gem.setup(scratch))
    out = fresh_dir(target / "gemini" / case)
    export(gem.gemini_dir(scratch), out)
    return out


def main(argv: list[str] | None = None) -> int:
    return recorder.main(argv, tool="gemini", doc=__doc__, cases=CASES, install=gem.install, record=record,
                         root=REC_ROOT, version=versions.GEMINI)


if __name__ == "__main__":
    sys.exit(main())
