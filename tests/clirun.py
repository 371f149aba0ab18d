"""Run the real CLI entry point in-process (error handling and exit codes included)."""
from __future__ import annotations

import contextlib
import io
from dataclasses import dataclass

from histmig.cli import cli
from histmig.cli.common import run_guarded


@dataclass
class Result:
    exit_code: int
    stdout: str
    stderr: str


def histmig(*args: str) -> Result:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = run_guarded(cli, [str(a) for a in args])
    return Result(code, out.getvalue(), err.getvalue())
