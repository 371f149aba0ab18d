"""Record ``histmig/samples/opencode/<case>/`` with the real OpenCode client (tests/e2e/opencode_client.py).

    python -m tests.e2e.record_opencode_samples [--target DIR] [CASE ...]

Same rules as tests/e2e/record_samples.py: every case runs from scratch in ``/tmp/histmig-rec-opencode``
against a fake API signing with ``SAMPLES_SECRET``. Each case is an OpenCode data folder holding
``opencode.db`` only, copied through SQLite's backup into one file (journal mode DELETE, no -wal/-shm);
the log, the repos cache and the config (port) are left out.
"""
from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

from . import recorder, versions
from .opencode_client import db_path, install, opencode_setup, run_opencode
from .record_samples import UNICODE_DIR
from .recorder import fresh_dir, run_case

REC_ROOT = Path("/tmp/histmig-rec-opencode")     # its own folder: the other recorders clear theirs


def oc_resumed(oc, s, api):
    app = s.project("app")
    run_opencode(oc, s, api, ["RUN:", "echo", "hello", "from", "the", "tool"], app).check()
    run_opencode(oc, s, api, ["Thanks.", "Now", "summarise", "what", "you", "saw."], app, continue_=True).check()


def oc_unicode_cwd(oc, s, api):
    run_opencode(oc, s, api, ["Hello", "from", "a", "folder", "with", "データ."], s.project(*UNICODE_DIR)).check()


CASES = {"resumed": oc_resumed, "unicode-cwd": oc_unicode_cwd}


def copy_db(src: Path, dst: Path) -> None:
    with sqlite3.connect(src) as s, sqlite3.connect(dst) as d:
        s.backup(d)
    con = sqlite3.connect(dst)
    con.execute("PRAGMA journal_mode=DELETE")
    con.execute("VACUUM")
    con.close()


def record(case: str, fn, oc: Path, target: Path) -> Path:
    scratch = run_case(REC_ROOT, oc, fn, opencode_setup)
    out = fresh_dir(target / "opencode" / case)
    copy_db(db_path(scratch), out / "opencode.db")
    return out


def main(argv: list[str] | None = None) -> int:
    return recorder.main(argv, tool="opencode", doc=__doc__, cases=CASES, install=install, record=record,
                         root=REC_ROOT, version=versions.OPENCODE)


if __name__ == "__main__":
    sys.exit(main())
