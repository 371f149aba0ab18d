"""Long human output through a pager, as git does: only when stdout is a terminal, through $PAGER
(default ``less -FRX``: quits when the text fits one screen, keeps colours, leaves the text on screen);
``PAGER=`` (empty) or ``cat`` prints directly (docs/scan-show.md, "Pager")."""
from __future__ import annotations

import os
import sys
import click

DEFAULT = "less -FRX"


def terminal_width() -> int | None:
    """Cells per line: $COLUMNS when set, else the terminal's width; None when stdout is not a terminal
    (a pipe or a file gets whole lines)."""
    cols = os.environ.get("COLUMNS", "").strip()
    if cols.isdigit() and int(cols) > 0:
        return int(cols)
    try:
        if sys.stdout.isatty():
            return os.get_terminal_size(sys.stdout.fileno()).columns or None
    except (OSError, ValueError, AttributeError):
        pass
    return None


def pager_command() -> str | None:
    """The pager to run, or None: stdout is not a terminal, $PAGER is empty or ``cat``, or the program
    is not installed."""
    try:
        if not sys.stdout.isatty():
            return None
    except (ValueError, AttributeError):
        return None
    import shlex
    import shutil                                  # only on a terminal: shutil loads bz2, lzma, zlib
    cmd = os.environ.get("PAGER", DEFAULT).strip()
    try:
        program = shlex.split(cmd)[0] if cmd else None
    except ValueError:
        return None
    if program is None or program == "cat" or shutil.which(program) is None:
        return None
    return cmd


def page(lines: list[str], *, enabled: bool = True) -> None:
    """Print ``lines`` through the pager when there is one (and ``enabled``), else directly."""
    cmd = pager_command() if enabled else None
    if cmd is None:
        for i in range(0, len(lines), 1000):       # echo flushes each call: a few calls, not one a line
            click.echo("\n".join(lines[i:i + 1000]))
        return
    import subprocess
    env = dict(os.environ)
    env.setdefault("LESS", "FRX")                  # for a $PAGER of plain ``less``
    sys.stdout.flush()
    proc = subprocess.Popen(cmd, shell=True, stdin=subprocess.PIPE, env=env)
    try:
        for line in lines:
            proc.stdin.write((line + "\n").encode("utf-8", "replace"))
    except BrokenPipeError:                        # the user quit the pager early: not an error
        pass
    finally:
        try:
            proc.stdin.close()
        except BrokenPipeError:
            pass
        while True:
            try:
                proc.wait()
                break
            except KeyboardInterrupt:              # ^C belongs to the pager while it runs
                continue
