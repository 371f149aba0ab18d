"""Claude Code checks: is each session in the folder Claude reads for its cwd?

Claude files a session under ``projects/<slug of realpath(cwd)>/`` and, started in a folder, reads
only that folder's sessions (docs/specs/claude-code.md §2). ``check_slug`` (doctor_claude) reports a folder none
of whose sessions belong to it; this module reports single sessions:

- ``claude.session-cwd-mismatch``: a session whose cwd's folder is another one than the folder it is
  in, among sessions that do belong there (a half-done move), or whose cwd is a symlinked spelling
  (Claude records the realpath, so started there it reads the target's folder);
- ``claude.project-split``: sessions of one cwd in two folders, the right one and another (what a
  partial undo or an interrupted move leaves): Claude started in the cwd sees only the right one.

A misfiled session is moved into the right folder as a repair (its ``<id>.jsonl`` and ``<id>/`` side
folder, renames that undo reverses) unless that folder holds the same id (``claude.duplicate-session``
covers that) or the session is live. A symlinked cwd is left to ``histmig move``, which also rewrites
the recorded cwd.
"""
from __future__ import annotations

import os
import shlex
from collections import Counter, defaultdict
from dataclasses import field
from pathlib import Path

from histmig.toolkit.doctor.base import Finding, dir_exists
from histmig.tools.claude_family.transcript import Transcript
from histmig.toolkit.move.common import dir_fingerprint
from histmig.core.paths import SLUG_MAX, claude_slug, slug_prefix
from histmig.core.plan import Fingerprint, Rename
from histmig.core.valueclass import FACTORY, value

REPAIR = "histmig doctor --repair --apply"
SAMPLE = 5


@value
class Filing:
    findings: list[Finding] = field(default_factory=list)
    covered: set[Path] = field(default_factory=set)   # folders wholly reported here (check_slug skips them)

    def __init__(self, findings: list[Finding] = FACTORY, covered: set[Path] = FACTORY) -> None:
        self.findings = [] if findings is FACTORY else findings
        self.covered = set() if covered is FACTORY else covered


def slug_matches(folder: str, cwd: str) -> bool:
    slug = claude_slug(cwd)
    if folder == slug:
        return True
    # long paths: Bun-hash era folders share only the 200-character prefix (docs/specs/claude-code.md §2.3)
    return len(slug) > SLUG_MAX and folder.startswith(slug_prefix(cwd) + "-")


def recorded(cwd: str) -> str:
    """The cwd as Claude records it when started there: the realpath of an existing folder."""
    return os.path.realpath(cwd) if dir_exists(cwd) else cwd


def check_filing(folders: dict[Path, list[Transcript]], live: dict[str, int]) -> Filing:
    homes_of: dict[str, Path] = {}          # recorded cwd -> a folder holding its rightly filed sessions
    for folder, ts in folders.items():
        for t in ts:
            if t.first_cwd and slug_matches(folder.name, recorded(t.first_cwd)):
                homes_of.setdefault(recorded(t.first_cwd), folder)
    copies = Counter(t.id.lower() for ts in folders.values() for t in ts)
    groups: dict[tuple[Path, str], list[Transcript]] = defaultdict(list)
    for folder, ts in folders.items():
        for t in ts:
            if copies[t.id.lower()] > 1:
                continue                     # an id in two folders: claude.duplicate-session's finding
            if t.first_cwd and not slug_matches(folder.name, recorded(t.first_cwd)):
                groups[(folder, recorded(t.first_cwd))].append(t)
    out = Filing()
    for (folder, cwd), ts in sorted(groups.items()):
        right = homes_of.get(cwd)
        literal = any(t.first_cwd and slug_matches(folder.name, t.first_cwd) for t in folders[folder])
        if right is None and not literal:
            continue                         # no session here belongs here: check_slug's folder finding
        if right is not None and all(t in ts or copies[t.id.lower()] > 1 for t in folders[folder]):
            out.covered.add(folder)
        out.findings.append(_finding(folder, cwd, ts, right, live))
    return out


def _finding(folder: Path, cwd: str, ts: list[Transcript], right: Path | None, live: dict[str, int]) -> Finding:
    ids = sorted(t.id for t in ts)
    names = ", ".join(ids[:SAMPLE]) + (f" and {len(ids) - SAMPLE} more" if len(ids) > SAMPLE else "")
    typed = sorted({t.first_cwd for t in ts if t.first_cwd != cwd})
    target = right or folder.parent / claude_slug(cwd)
    if right is not None:
        code = "claude.project-split"
        detail = (f"sessions of {cwd} are split across {right.name} and {folder.name} ({len(ts)} here: {names}); "
                  f"Claude started in {cwd} reads only {right.name}")
    else:
        code = "claude.session-cwd-mismatch"
        detail = (f"{len(ts)} session(s) in {folder.name} were recorded in {cwd}, whose folder is {target.name}: "
                  f"{names}; Claude started in {cwd} never lists them")
    if typed:    # a symlinked spelling: move rewrites the recorded cwd and re-files the sessions
        detail += f" (recorded as {typed[0]}, a symlink to {cwd})"
        return Finding(code, detail, path=str(folder), count=len(ts),
                       fix=f"histmig move {shlex.quote(typed[0])} {shlex.quote(cwd)} --apply",
                       data={"cwd": cwd, "folder": target.name, "ids": ids})
    ops, left = [], []
    for t in ts:
        why = _blocked(t, target, live)
        if why:
            left.append(f"{t.id} ({why})")
        else:
            ops += _renames(t, target)
    fix = REPAIR if not left else (f"{REPAIR} (moves {len(ts) - len(left)}); by hand: " + "; ".join(left))
    return Finding(code, detail, path=str(folder), count=len(ts), fix=fix, repair=ops,
                   data={"cwd": cwd, "folder": target.name, "ids": ids})


def _blocked(t: Transcript, target: Path, live: dict[str, int]) -> str | None:
    if t.id in live:
        return f"live session, pid {live[t.id]}"
    if (target / t.path.name).exists() or (target / t.id).exists():
        return f"{target.name} holds the same session id"
    return None


def _renames(t: Transcript, target: Path) -> list[Rename]:
    """The session file and its ``<id>/`` side folder (sub-agents, tool results), into ``target``."""
    session = {"tool": "claude-code", "id": t.id}
    why = f"re-filed under the folder of its cwd ({target.name})"
    ops = [Rename(src=str(t.path), dst=str(target / t.path.name), expect=Fingerprint.of(t.path, with_hash=False),
                  session=session, reason=why)]
    side = t.path.parent / t.id
    if side.is_dir() and not side.is_symlink():
        ops.append(Rename(src=str(side), dst=str(target / t.id), expect=dir_fingerprint(str(side)),
                          session=session, reason=why))
    return ops
