"""``--rehome 'C:\\Users\\x=/home/x'``: a bundle packed on Windows (Codex and Claude Code run there)
unpacked on a POSIX machine (docs/pack.md, "Bundles from Windows"). The clients record Windows cwds
as ``C:\\Users\\x\\code\\app`` (Claude Code's ``~/.claude.json`` keys as ``C:/Users/x/code/app``); a value
that *is* such a path under OLD becomes NEW with the rest of the path below it, backslashes turned
into ``/``: the same rule ``move`` applies to POSIX paths (histmig/toolkit/move/common.py ``PathMap``),
with Windows' spelling: either separator, the drive letter and the folder names in any case."""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import orjson

from histmig.core.diagnostics import UsageError
from histmig.toolkit.move.common import PathMap

WINDOWS = re.compile(r"^(?:[A-Za-z]:[\\/]|\\\\[^\\/])")


def is_windows(path: str) -> bool:
    """``C:\\…``, ``C:/…`` or a UNC path ``\\\\server\\share``."""
    return bool(WINDOWS.match(path))


def _plain(path: str) -> str:
    """``/``-separated, no trailing separator (``C:\\Users\\x\\`` -> ``C:/Users/x``)."""
    p = path.replace("\\", "/")
    return p.rstrip("/") if len(p.rstrip("/")) > 2 else p


@dataclass(frozen=True)
class WindowsPathMap(PathMap):
    """``olds``: the Windows folder(s), ``/``-separated; ``new``: the POSIX folder they map to."""

    def rebase(self, path: Any) -> str | None:
        if not isinstance(path, str) or not is_windows(path):
            return None
        p = path.replace("\\", "/")
        low = p.lower()
        for old in self.olds:
            n = len(old)
            if low[:n] == old.lower() and (len(p) == n or p[n] == "/"):
                rest = p[n:].strip("/")
                return self.new if not rest else self.new.rstrip("/") + "/" + rest
        return None

    def covers(self, path: Any) -> bool:
        return self.rebase(path) is not None

    @cached_property
    def needles(self) -> tuple[bytes, ...]:
        """What a line holding such a path contains, to find the lines worth parsing: OLD after its
        drive letter, with ``\\`` (raw and as JSON writes it) or ``/``. Spelled as given: a line whose
        path differs from OLD in capitals (past the drive letter) is not found (docs/pack.md)."""
        out: list[bytes] = []
        for old in self.olds:
            tail = old[2:] if old[1:2] == ":" else old      # "/Users/x" or "//server/share"
            for form in (tail.replace("/", "\\"), tail):
                for b in (form.encode("utf-8", "surrogatepass"), orjson.dumps(form)[1:-1],
                          orjson.dumps(form)[1:-1].replace(b"/", b"\\/")):
                    if b not in out:
                        out.append(b)
        return tuple(out)


def windows_pathmap(old: str, new: str) -> PathMap:
    """The map for ``--rehome OLD=NEW`` with a Windows OLD; NEW must be a POSIX folder."""
    if is_windows(new) or not new or "\x00" in new or "\n" in new:
        raise UsageError(f"--rehome {old}={new}: NEW must be a folder of this machine")
    olds = (_plain(old),)
    if len(olds[0]) <= 3:
        raise UsageError(f"--rehome {old}: refusing to re-home a whole drive; name the user folder (C:\\Users\\x)")
    new_abs = os.path.normpath(os.path.abspath(os.path.expanduser(new)))
    return WindowsPathMap(olds, os.path.realpath(new_abs))
