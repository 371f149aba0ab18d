"""Record ``histmig/samples/copilot/<case>/`` with the real Copilot CLI (tests/e2e/copilot_client.py).

    python -m tests.e2e.record_copilot_samples [--target histmig/samples] [CASE ...]

Same rules as tests/e2e/record_samples.py: each case runs from scratch in ``/tmp/histmig-rec`` (HOME
``/tmp/histmig-rec/home``, projects under ``/tmp/histmig-rec/work/``), a path that names nobody, so the
files are kept byte for byte. Copied: ``session-state/<uuid>/`` (events.jsonl, workspace.yaml,
checkpoints/, rewind-file-snapshots/). Left out: the index database ``session-store.db`` (derived;
the client rebuilds its rows), lock files, logs, config.json.
"""
from __future__ import annotations

import shutil
from pathlib import Path

from . import recorder, versions
from .copilot_client import copilot_home, install, run_copilot
from .record_samples import REC_ROOT, UNICODE_DIR
from .recorder import fresh_dir, run_case


def plain(exe, scratch, api):
    run_copilot(exe, scratch, api, "Say hello in one short sentence.", scratch.project("app")).check()


def tool_call(exe, scratch, api):
    run_copilot(exe, scratch, api, "RUN: echo hello from the tool", scratch.project("app")).check()


def resumed(exe, scratch, api):
    proj = scratch.project("app")
    run_copilot(exe, scratch, api, "first question", proj).check()
    run_copilot(exe, scratch, api, "second question RUN: echo again", proj, continue_=True).check()


def unicode_cwd(exe, scratch, api):
    run_copilot(exe, scratch, api, "hello from a unicode folder", scratch.project(*UNICODE_DIR)).check()


CASES = {"plain": plain, "tool-call": tool_call, "resumed": resumed, "unicode-cwd": unicode_cwd}
KEEP = ("events.jsonl", "workspace.yaml", "checkpoints/index.md", "rewind-file-snapshots/tracking.json")


def record(case: str, fn, exe: Path, target: Path) -> Path:
    scratch = run_case(REC_ROOT, exe, fn)
    out = fresh_dir(target / "copilot" / case)
    for d in sorted((copilot_home(scratch) / "session-state").iterdir()):
        for name in KEEP:
            if (d / name).is_file():
                (out / "session-state" / d.name / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(d / name, out / "session-state" / d.name / name)
    return out


def main(argv: list[str] | None = None) -> int:
    return recorder.main(argv, tool="copilot", doc=__doc__, cases=CASES, install=install, record=record,
                         root=REC_ROOT, version=versions.COPILOT)


if __name__ == "__main__":
    raise SystemExit(main())
