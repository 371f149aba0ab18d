"""Record ``histmig/samples/qwen/<case>/`` with the real Qwen Code (tests/e2e/qwen_client.py).

    python -m tests.e2e.record_qwen_samples [--target histmig/samples] [CASE ...]

Same rules as tests/e2e/record_samples.py: each case runs from scratch in ``/tmp/histmig-rec`` (HOME
``/tmp/histmig-rec/home``, projects under ``/tmp/histmig-rec/work/``), a path that names nobody, so the
files are kept byte for byte. Copied: the Qwen home's ``projects/`` (sessions, ``meta.json``,
``extract-cursor.json``, ``memory/``). Left out: ``usage/``, ``usage_record.jsonl``, ``installation_id``,
settings, extension state.
"""
from __future__ import annotations

import shutil
from pathlib import Path

from . import recorder
from .qwen_client import install, qwen_home, run_qwen
from .record_samples import REC_ROOT, UNICODE_DIR
from .recorder import fresh_dir, run_case


def plain(exe, scratch, api):
    run_qwen(exe, scratch, api, "Say hello in one short sentence.", scratch.project("app")).check()


def tool_call(exe, scratch, api):
    run_qwen(exe, scratch, api, "RUN: echo hello from the tool", scratch.project("app")).check()


def resumed(exe, scratch, api):
    proj = scratch.project("app")
    run_qwen(exe, scratch, api, "first question", proj).check()
    run_qwen(exe, scratch, api, "second question RUN: echo again", proj, continue_=True).check()


def unicode_cwd(exe, scratch, api):
    run_qwen(exe, scratch, api, "hello from a unicode folder", scratch.project(*UNICODE_DIR)).check()


CASES = {"plain": plain, "tool-call": tool_call, "resumed": resumed, "unicode-cwd": unicode_cwd}


def record(case: str, fn, exe: Path, target: Path) -> Path:
    scratch = run_case(REC_ROOT, exe, fn)
    out = fresh_dir(target / "qwen" / case)
    shutil.copytree(qwen_home(scratch) / "projects", out / "projects")
    return out


def main(argv: list[str] | None = None) -> int:
    return recorder.main(argv, tool="qwen", doc=__doc__, cases=CASES, install=install, record=record, root=REC_ROOT)


if __name__ == "__main__":
    raise SystemExit(main())
