"""What the write path guards for Pi (histmig/apply/guards.py). Pi keeps no registry and no file open
(it appends with ``appendFileSync``), so a live Pi is found by its process: a ``pi-coding-agent``
command line in /proc whose working folder is the project of an operation's session (the header cwd
it had, the cwd the move gives it, or the project its slug folder is named after). Such an operation
waits with its whole folder (``live-folder``): a running Pi would append to the old path."""
from __future__ import annotations

import os
from typing import Any, Mapping

from histmig.apply.guards import WriteGuards
from histmig.core.paths import is_under
from histmig.tools.pi.layout import pi_slug

PROC = "/proc"


def running_pis() -> list[tuple[int, str]]:
    """(pid, working folder) of every running Pi but ourselves; [] where /proc is not readable."""
    out = []
    try:
        pids = [int(p) for p in os.listdir(PROC) if p.isdigit() and int(p) != os.getpid()]
    except OSError:
        return out
    for pid in pids:
        try:
            with open(f"{PROC}/{pid}/cmdline", "rb") as fh:
                if b"pi-coding-agent" not in fh.read():
                    continue
            cwd = os.readlink(f"{PROC}/{pid}/cwd")
        except OSError:
            continue
        out.append((pid, cwd.removesuffix(" (deleted)")))
    return out


def start():
    procs: list[tuple[int, str]] | None = None

    def check(s: Mapping[str, Any]) -> tuple[str, str] | None:
        nonlocal procs
        if not (s.get("cwd") or s.get("folder")):
            return None
        if procs is None:
            procs = running_pis()
        for pid, cwd in procs:
            if any(isinstance(s.get(k), str) and is_under(cwd, s[k]) for k in ("cwd", "new_cwd")) \
                    or (s.get("folder") and pi_slug(cwd) == os.path.basename(str(s["folder"]))):
                return (f"a running Pi (pid {pid}) works in {cwd}; its project's sessions wait until it ends, "
                        "then re-run the command", "live-folder")
        return None
    return check


def guards(homes: Any) -> WriteGuards:
    return WriteGuards(live={"pi": start})
