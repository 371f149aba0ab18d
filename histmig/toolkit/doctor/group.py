"""``cwd-missing`` findings gathered under the folder that actually went away.

Moving ``~/code`` to ``~/src`` leaves every project below it missing: one finding and one
``histmig move`` per project repeats the same news dozens of times, and a single
``histmig move ~/code ~/src`` fixes them all (move re-points every folder below OLD). This finds, for
each missing cwd, the topmost missing ancestor (its parent still exists) and groups the findings that
share it (docs/doctor.md, "Folders under one moved parent")."""
from __future__ import annotations

import os
from dataclasses import field
from typing import Any

from histmig.toolkit.doctor.base import dir_missing
from histmig.toolkit.doctor.locate import move_fix
from histmig.core.valueclass import FACTORY, value


@value
class MovedParent:
    root: str                          # the topmost missing folder
    findings: list[Any] = field(default_factory=list)
    new: str | None = None             # where the root likely went (from the findings' suggestions)

    def __init__(self, root: str, findings: list[Any] = FACTORY, new: str | None = None) -> None:
        self.root = root
        self.findings = [] if findings is FACTORY else findings
        self.new = new

    @property
    def sessions(self) -> int:
        return sum(f.count for f in self.findings)

    @property
    def fix(self) -> str:
        return move_fix(self.root, self.new)


def missing_cwd(finding) -> str | None:
    if not finding.code.endswith(".cwd-missing"):
        return None
    return finding.data.get("cwd") or finding.path


def missing_root(cwd: str) -> str:
    """The topmost missing ancestor of ``cwd`` (``cwd`` itself when its parent exists)."""
    root = os.path.normpath(cwd)
    while (parent := os.path.dirname(root)) != root and dir_missing(parent):
        root = parent
    return root


def group_moved(findings: list) -> tuple[list[MovedParent], list]:
    """(groups of two or more ``cwd-missing`` findings below one missing folder, the other findings)."""
    by_root: dict[str, list] = {}
    for f in findings:
        if (cwd := missing_cwd(f)) is not None:
            by_root.setdefault(missing_root(cwd), []).append(f)
    grouped = {root: fs for root, fs in by_root.items() if len({missing_cwd(f) for f in fs}) > 1}
    taken = {id(f) for fs in grouped.values() for f in fs}
    groups = [MovedParent(root, fs, _new_root(root, fs)) for root, fs in sorted(grouped.items())]
    return groups, [f for f in findings if id(f) not in taken]


def _new_root(root: str, findings: list) -> str | None:
    """The new place of ``root`` that the findings' suggestions agree on: a cwd ``root/rel`` likely
    moved to ``X/rel`` says ``X``. None when they disagree, or when fewer than half of the group's
    folders say anything: one look-alike folder found for one project out of five is a coincidence
    more often than a move, and the printed ``move`` of the whole parent would act on that guess."""
    votes: dict[str, set[str]] = {}
    for f in findings:
        new, cwd = f.data.get("suggested"), missing_cwd(f)
        rel = os.path.relpath(cwd, root)
        if new and rel != "." and new.rstrip("/").endswith("/" + rel):
            votes.setdefault(new.rstrip("/")[: -len(rel) - 1], set()).add(cwd)
    folders = {missing_cwd(f) for f in findings}
    if len(votes) != 1:
        return None
    [(new_root, voters)] = votes.items()
    return new_root if 2 * len(voters) >= len(folders) else None
