"""What the write path guards besides the files themselves, as its caller describes it.

The apply engine knows no tool (pyproject.toml's forbidden contract): the locks a tool's own client
takes and the way to see that one of its sessions is live come from the tool's folder
(``histmig/tools/<tool>/guards.py``, collected by :func:`histmig.tools.guards_for`). A caller that
passes none gets the tool table's (``histmig.core.homes.tool_guards``, installed when the table
loads), so a plain ``apply_plan(plan, homes)`` takes the same locks as ``histmig.api.apply``.

- :class:`FileLock`: a lock a client holds while it writes one file (Claude Code's
  ``~/.claude.json.lock``): checked before anything is written (a fresh one refuses the apply),
  held around each write of that file, which is then never batched with others.
- :class:`FolderLock`: held around the whole run when an operation writes under ``root``
  (Codex's rollout-maintenance lock).
- ``live``: op session tool name (``session["tool"]`` in a plan) -> a :data:`LiveProbe`; its
  operations that touch a live session are skipped (docs/safety.md, "Skip messages").
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, ContextManager, Mapping

# One apply's check of one tool's sessions: ``check(session) -> (reason, skip code)`` or None for an
# operation's ``session`` dict ({"tool", "id", "folder"}). A probe is made fresh for every apply
# (``start()``): what it caches (a live-session registry, one lock probe per thread) lasts one check.
Check = Callable[[Mapping[str, Any]], "tuple[str, str] | None"]
LiveProbe = Callable[[], Check]


@dataclass(frozen=True)
class FileLock:
    path: Path                                   # the file as its client names it (the lock is named after it)
    check: Callable[[Path], None]                # raises LockedError while the client holds it
    hold: Callable[[Any, Path], ContextManager]  # (fsio.FS, path): held around one write of the file


@dataclass(frozen=True)
class FolderLock:
    root: Path
    hold: Callable[[Path], ContextManager]


@dataclass(frozen=True)
class WriteGuards:
    file_locks: tuple[FileLock, ...] = ()
    folder_locks: tuple[FolderLock, ...] = ()
    live: Mapping[str, LiveProbe] = field(default_factory=dict)

    def __add__(self, other: "WriteGuards") -> "WriteGuards":
        return WriteGuards(self.file_locks + other.file_locks, self.folder_locks + other.folder_locks,
                           {**self.live, **other.live})


def default_guards(homes: Any) -> WriteGuards:
    """The tool table's guards for ``homes`` (none when no table is loaded: then nothing names a tool)."""
    from histmig.core import homes as homes_module
    made = homes_module.tool_guards(homes) if homes_module.tool_guards is not None else None
    return made if made is not None else WriteGuards()
