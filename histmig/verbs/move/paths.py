"""The paths a move uses: what the clients record, not what the user typed.

Claude Code and Codex both record ``realpath(getcwd())`` (docs/specs/claude-code.md §2.1, docs/specs/codex.md §14), so a
project opened through a symlink is on record under its target. OLD is used as its realpath (the
typed spelling is matched too, by ``make_pathmap``). NEW is what a client started in NEW will record:
its realpath when it exists, else the realpath of its parent plus its name.

One case cannot be decided: OLD is itself a symlink and NEW does not exist yet. ``mv LINK NEWLINK``
keeps the link's target, so nothing the clients record changes and nothing must move; moving the
target folder to NEW changes everything. Guessing wrong re-points the history at a folder the clients
never read, so that case is refused, naming both commands.
"""
from __future__ import annotations

import os
import shlex
from dataclasses import field

from histmig.core.diagnostics import RefusedError, Warning
from histmig.core.valueclass import FACTORY, value


@value
class Resolved:
    old: str                 # OLD as the clients record it
    new: str                 # NEW as the clients will record it
    typed_old: str
    typed_new: str
    warnings: list[Warning] = field(default_factory=list)

    def __init__(self, old: str, new: str, typed_old: str, typed_new: str, warnings: list[Warning] = FACTORY) -> None:
        self.old = old
        self.new = new
        self.typed_old = typed_old
        self.typed_new = typed_new
        self.warnings = [] if warnings is FACTORY else warnings


def _abs(path: str) -> str:
    return os.path.normpath(os.path.abspath(os.path.expanduser(path)))


def recorded_new(typed_new: str, typed_old: str) -> tuple[str, str]:
    """(NEW as a client started there records it, how it was decided)."""
    if os.path.exists(typed_new):
        return os.path.realpath(typed_new), "its realpath"
    if os.path.islink(typed_old) and typed_old != typed_new:
        target = os.path.realpath(typed_old)
        raise RefusedError(
            f"OLD_PATH {typed_old} is a symlink to {target} (the path Claude Code and Codex record) and NEW_PATH "
            f"{typed_new} does not exist yet, so what the clients will record there is unknown. Renaming the link "
            f"(mv {shlex.quote(typed_old)} {shlex.quote(typed_new)}) changes nothing they record: no move is needed. "
            f"Moving the folder itself: histmig move {shlex.quote(target)} {shlex.quote(typed_new)} "
            "(or run this command again once NEW_PATH exists). Nothing written.")
    parent = os.path.realpath(os.path.dirname(typed_new))
    return os.path.join(parent, os.path.basename(typed_new)), "the realpath of its parent"


def resolve(old: str, new: str) -> Resolved:
    """OLD and NEW as recorded; a ``path-resolved`` warning for each that differs from the typed
    path, and ``same-recorded-path`` when the two are one recorded path."""
    if not old or not new or any(c in old + new for c in "\x00\n"):
        return Resolved(old, new, old, new)     # make_pathmap names the unusable path
    typed_old, typed_new = _abs(old), _abs(new)
    rec_old = os.path.realpath(typed_old)
    rec_new, how = recorded_new(typed_new, typed_old)
    res = Resolved(rec_old, rec_new, typed_old, typed_new)
    if rec_old == rec_new and typed_old != typed_new:
        res.warnings.append(Warning("same-recorded-path", f"{typed_old} and {typed_new} both resolve to {rec_old}, "
                                    "the path Claude Code and Codex record: history recorded there stays; only "
                                    f"values that name {typed_old} itself move", path=typed_old))
    elif rec_old != typed_old:
        res.warnings.append(Warning("path-resolved", f"OLD_PATH {typed_old} is recorded by the clients as {rec_old}; "
                                    "using that", path=typed_old, extra={"typed": typed_old, "used": rec_old}))
    if rec_new != typed_new:
        res.warnings.append(Warning("path-resolved", f"NEW_PATH {typed_new} will be recorded by the clients as "
                                    f"{rec_new} ({how}); using that", path=typed_new,
                                    extra={"typed": typed_new, "used": rec_new}))
    return res
