"""Checks that turn operations into skips instead of refusing the plan (issue 12 case 6): open
writers, live sessions, recently active files, database rows that changed since the plan, and the
rule that a session and a project folder are changed completely or not at all.

Every function here works on the :class:`~histmig.apply.options.Prepared` list of
:func:`histmig.apply.check.precheck`, before anything is written.
"""
from __future__ import annotations

import os
import stat
import time
from typing import Mapping

from histmig.apply.guards import Check, LiveProbe
from histmig.apply.options import ApplyOptions, Prepared
from histmig.core.diagnostics import Skip
from histmig.core.livewriters import open_writers


def mark_skip(prep: Prepared, reason: str, code: str = "skipped") -> Prepared:
    prep.skip = Skip(prep.op.paths()[0], reason, code)
    return prep


_REFINABLE = ("grew", "changed")   # a file a live agent writes: the live check names the real cause


def _open(p: Prepared) -> bool:
    """Still to be checked: not skipped, or skipped only because it changed since the plan."""
    return p.skip is None or p.skip.code in _REFINABLE


def check_writers(preps: list[Prepared]) -> None:
    wanted: dict[tuple[int, int], list[Prepared]] = {}
    for p in preps:
        if _open(p) and p.st is not None:
            for k in _inodes(p):
                wanted.setdefault(k, []).append(p)
    for k, holders in open_writers(wanted).items():
        for p in wanted[k]:
            if _open(p):
                who = ", ".join(h.describe() for h in holders)
                mark_skip(p, f"open for writing by {who}; quit it and re-run", "open-writer")


def _inodes(p: Prepared) -> list[tuple[int, int]]:
    if not stat.S_ISDIR(p.st.st_mode):
        return [(p.st.st_dev, p.st.st_ino)]
    out = []
    for folder, _dirs, files in os.walk(p.path):  # followlinks=False: do not leave the folder
        for f in files:
            try:
                st = os.lstat(os.path.join(folder, f))
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode):
                out.append((st.st_dev, st.st_ino))
    return out


def check_sessions(preps: list[Prepared], live: Mapping[str, LiveProbe]) -> None:
    """Skip what touches a live session: each tool's probe (``live``, from its folder's guards:
    :mod:`histmig.apply.guards`) says whether an operation's session or folder is in use."""
    checks: dict[LiveProbe, Check] = {}   # one fresh check per probe and apply: it caches what it reads
    for p in preps:
        s = getattr(p.op, "session", None) or {}
        probe = live.get(s.get("tool"))
        if not _open(p) or probe is None:
            continue
        if probe not in checks:
            checks[probe] = probe()
        found = checks[probe](s)
        if found is not None:
            mark_skip(p, *found)


def check_active(preps: list[Prepared], opts: ApplyOptions) -> None:
    if opts.quiet_seconds is None or opts.include_active:
        return
    now = time.time_ns()
    for p in preps:
        if p.skip is None and p.st is not None and p.method in ("replace", "inplace"):
            age = (now - p.st.st_mtime_ns) / 1e9
            if age < opts.quiet_seconds:
                mark_skip(p, f"active (modified {age:.0f}s ago, --quiet-seconds {opts.quiet_seconds:g}); "
                              "use --include-active", "active")


def propagate_session_skips(preps: list[Prepared]) -> None:
    """A session is changed completely or not at all, and so is a project folder (``session``'s
    ``folder``: a Claude slug folder moves whole or waits whole): skipping one of their operations
    skips the rest (a flipped database row with an unflipped rollout would disagree; a folder moved
    without one of its rewrites would hold a session that still names the old path)."""
    units: dict[tuple, list[Prepared]] = {}
    for p in preps:
        for u in unit_keys(p):
            units.setdefault(u, []).append(p)
    todo = [u for u, ps in units.items() if any(p.skip is not None for p in ps)]
    seen = set(todo)
    while todo:
        unit = todo.pop()
        cause = next(p.skip for p in units[unit] if p.skip is not None)
        for p in units[unit]:
            if p.skip is None:
                what = "project folder" if unit[0] == "folder" else "session"
                mark_skip(p, f"skipped with the rest of its {what} (see {cause.path})", "session-skipped")
                todo += [u for u in unit_keys(p) if u not in seen]
                seen.update(unit_keys(p))


def held_back(p: Prepared, skipped_units: set) -> Skip | None:
    """The skip of an operation whose session or project folder had an operation skipped while the
    apply ran (a file changed at its last check): the rest of it is not written either, so a flip's
    row never says NEW beside a rollout that still says OLD (:func:`propagate_session_skips` does the
    same before anything is written)."""
    if skipped_units and any(u in skipped_units for u in unit_keys(p)):
        return Skip(p.op.paths()[0], "skipped with the rest of its session (a file of it changed during "
                    "the apply); re-run the command", "session-skipped")
    return None


def split_held(preps: list[Prepared], skipped_units: set) -> tuple[dict[int, Skip], list[Prepared]]:
    """Those of ``preps`` held back (n -> their skip, :func:`held_back`) and the rest, in order."""
    held = {p.n: h for p in preps if (h := held_back(p, skipped_units)) is not None}
    return held, [p for p in preps if p.n not in held]


def batch_held(preps: list[Prepared], failed: set[int]) -> dict[int, Skip]:
    """Those of a batch's ``preps`` that share a session or project folder with one skipped at its
    last check (the ``n`` in ``failed``), n -> their skip: every file of a batch is checked before the
    first is written, so the rest of a session waits instead of being written and put back."""
    units = {u for p in preps if p.n in failed for u in unit_keys(p)}
    return {p.n: h for p in preps if p.n not in failed and (h := held_back(p, units)) is not None}


def unit_keys(p: Prepared) -> list[tuple]:
    s = getattr(p.op, "session", None) or {}
    out = [("session", s.get("tool", ""), s["id"])] if s.get("id") else []
    return out + ([("folder", s["folder"])] if s.get("folder") else [])


def _sess(p: Prepared) -> tuple[str, str] | None:
    s = getattr(p.op, "session", None) or {}
    return (s.get("tool", ""), s["id"]) if s.get("id") else None


def check_sql(preps: list[Prepared], stale: list[str]) -> None:
    """Rows that no longer hold the expected values: the operation's session is skipped (its rows
    and its files, by :func:`propagate_session_skips`); a row that belongs to no session, or a
    database that cannot be read, refuses the plan (``stale``)."""
    from histmig.apply.sqlops import check_expectations
    by_db: dict[str, list[Prepared]] = {}
    for p in preps:
        if p.method == "sql" and p.skip is None:
            by_db.setdefault(p.path, []).append(p)
    for db, group in by_db.items():
        for i, why in check_expectations(db, [p.op for p in group]):
            if i is not None and _sess(group[i]):
                why = why.removeprefix(f"{db}: ")
                mark_skip(group[i], f"{why} (row changed since plan); re-run the command", "row-changed")
            else:
                stale.append(why)


def skips_of(preps: list[Prepared]) -> list[Skip]:
    """The precheck's skips, each said once (a skipped session's database rows would otherwise
    repeat the same line per row)."""
    return list(dict.fromkeys(p.skip for p in preps if p.skip is not None))
