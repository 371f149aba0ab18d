"""Record ``histmig/samples/cline/<case>/`` with the real Cline CLI (tests/e2e/cline_client.py).

    python -m tests.e2e.record_cline_samples [--target histmig/samples] [CASE ...]

Same rules as tests/e2e/record_samples.py: each case runs from scratch in ``/tmp/histmig-rec`` (HOME
``/tmp/histmig-rec/home``, projects under ``/tmp/histmig-rec/work/``), a path that names nobody, so the
files are kept byte for byte. Copied: ``data/sessions/`` of the Cline home (both files of each session).
Left out: ``data/settings/providers.json`` (the API key in clear text), the index databases in
``data/db/`` (the client lists sessions without them: docs/cline.md), logs. The hub daemon each run
leaves is stopped by its pid.
"""
from __future__ import annotations

import shutil
from pathlib import Path

from . import recorder, versions
from .cline_client import auth, cline_home, install, resume, run_cline, sessions
from .record_samples import REC_ROOT, UNICODE_DIR
from .recorder import fresh_dir, run_case


def plain(exe, scratch, api):
    run_cline(exe, scratch, api, "Say hello in one short sentence.", scratch.project("app")).check()


def tool_call(exe, scratch, api):
    run_cline(exe, scratch, api, "RUN: echo hello from the tool", scratch.project("app")).check()


def resumed(exe, scratch, api):
    proj = scratch.project("app")
    run_cline(exe, scratch, api, "first question", proj).check()
    sid = sessions(scratch)[0].parent.name
    r = resume(exe, scratch, api, sid, "second question RUN: echo again", proj)
    assert any("first question" in str(e.body) for e in r.requests), r.stdout[-2000:]


def unicode_cwd(exe, scratch, api):
    run_cline(exe, scratch, api, "hello from a unicode folder", scratch.project(*UNICODE_DIR)).check()


CASES = {"plain": plain, "tool-call": tool_call, "resumed": resumed, "unicode-cwd": unicode_cwd}


def record(case: str, fn, exe: Path, target: Path) -> Path:
    scratch = run_case(REC_ROOT, exe, fn, lambda s, api: auth(exe, s, api))
    out = fresh_dir(target / "cline" / case)
    shutil.copytree(cline_home(scratch) / "data" / "sessions", out / "data" / "sessions")
    return out


def main(argv: list[str] | None = None) -> int:
    return recorder.main(argv, tool="cline", doc=__doc__, cases=CASES, install=install, record=record,
                         root=REC_ROOT, version=versions.CLINE)


if __name__ == "__main__":
    raise SystemExit(main())
