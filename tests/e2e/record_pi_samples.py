"""Record ``histmig/samples/pi/<case>/`` with the real Pi client (tests/e2e/pi_client.py).

    python -m tests.e2e.record_pi_samples [--target DIR] [CASE ...]

Same rules as tests/e2e/record_samples.py: every case runs from scratch in ``/tmp/histmig-rec-pi`` (a path that
names nobody, so files are kept byte for byte) against a fake API signing with ``SAMPLES_SECRET``. Each case
is a Pi agent dir (``PI_CODING_AGENT_DIR``): ``sessions/`` and ``models.json`` (port replaced by 8080);
``auth.json`` and ``settings.json`` are left out.
"""
from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

from . import recorder, versions
from .pi_client import agent_dir, install, pi_setup, run_pi
from .record_samples import UNICODE_DIR
from .recorder import fresh_dir, run_case

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
    home = agent_dir(run_case(REC_ROOT, pi, fn, pi_setup))
    out = fresh_dir(target / "pi" / case)
    shutil.copytree(home / "sessions", out / "sessions")
    (out / "models.json").write_text(re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:8080", (home / "models.json").read_text()))
    return out


def main(argv: list[str] | None = None) -> int:
    return recorder.main(argv, tool="pi", doc=__doc__, cases=CASES, install=install, record=record, root=REC_ROOT,
                         version=versions.PI)


if __name__ == "__main__":
    sys.exit(main())
