"""Codex state-database checks: rows against their rollouts, and thread_history_1.sqlite offsets.

Offsets are recomputed from the rollout's own ``ordinal`` fields, which is exact for paginated
threads (measured on Codex 0.171.0): ``rollout_byte_offset`` is the start of the line with
``rollout_ordinal``, ``rollout_end_byte_offset`` the end of the line with ``rollout_end_ordinal``, and
``next_rollout_byte_offset`` the start of the line with ``next_rollout_ordinal`` (the end of the file
when that line does not exist yet).
"""
from __future__ import annotations

import os
import shlex
from pathlib import Path
from typing import Any

from histmig.core.diagnostics import HistmigError
from histmig.toolkit.doctor.base import Finding, session_tag
from histmig.toolkit.doctor.base import dir_exists as _dir_exists, same_path as _same_path
from histmig.tools.codex.doctor_data import CodexHome, Rollout
from histmig.tools.codex.doctor_split import Split
from histmig.toolkit.doctor.locate import move_fix
from histmig.core.paths import is_under
from histmig.core.plan import SqlUpdate
from histmig.tools.codex import doctor_history
from histmig.tools.codex.state import HISTORY_DB, shift, thread_rows

REPAIR = "histmig doctor --repair --apply"
SAMPLE = 5   # ids named in a grouped detail


def check_db(home: CodexHome, db: Path, split: Split | None = None) -> list[Finding]:
    """``split``: the rollout edits doctor plans (``doctor_codex_split``); offsets are planned
    against the edited files."""
    try:
        rows = list(thread_rows(db, strict=True).values())
    except HistmigError as e:
        return [Finding("codex.unreadable", f"state database: {e}", path=str(db))]
    by_id = home.by_id()
    out = (check_row_paths(home, db, rows, by_id) + check_row_providers(home, db, rows, by_id)
           + check_row_cwds(db, rows, by_id) + check_no_row(home, db, rows))
    hist = db.parent / HISTORY_DB
    if hist.is_file():
        out += check_offsets(hist, by_id, split)
    return out


def _update(db: Path, row: dict[str, Any], col: str, value: Any, why: str) -> SqlUpdate:
    return SqlUpdate(db=str(db), table="threads", key={"id": row["id"]}, set={col: value},
                     expect={col: row.get(col)}, session=session_tag("codex", row["id"]), reason=why)


def _ids(ids: list[str]) -> str:
    more = f" and {len(ids) - SAMPLE} more" if len(ids) > SAMPLE else ""
    return ", ".join(ids[:SAMPLE]) + more


# ---- rollout_path ---------------------------------------------------------------------------------

def _inside(path: str, root: Path) -> bool:
    return is_under(os.path.normpath(path), str(root)) or is_under(os.path.realpath(path), os.path.realpath(root))


def _exists(path: str) -> bool:
    plain = path[:-4] if path.endswith(".zst") else path
    return os.path.isfile(plain) or os.path.isfile(plain + ".zst")


def _canonical(r: Rollout) -> str:
    """The plain-file path Codex stores in rollout_path (it looks for the .zst sibling itself)."""
    p = str(r.path)
    return p[:-4] if p.endswith(".zst") else p


def check_row_paths(home: CodexHome, db: Path, rows, by_id) -> list[Finding]:
    groups: dict[str, list] = {"codex.db-rollout-outside-home": [], "codex.db-rollout-missing": []}
    for row in rows:
        path = row.get("rollout_path") or ""
        if not _inside(path, home.homes.codex):
            groups["codex.db-rollout-outside-home"].append(row)
        elif not _exists(path):
            groups["codex.db-rollout-missing"].append(row)
    out = []
    for code, bad in groups.items():
        if not bad:
            continue
        ops = [_update(db, row, "rollout_path", _canonical(by_id[row["id"]]), "rollout found in this home")
               for row in bad if row["id"] in by_id]
        where = "outside this home" if code.endswith("outside-home") else "at missing files"
        out.append(Finding(code, f"{len(bad)} row(s) point {where}; {len(ops)} can be re-pointed at this home's "
                           f"rollout: {_ids([r['id'] for r in bad])}", path=str(db), count=len(bad),
                           fix=REPAIR if ops else "restore the rollout files, or leave them: Codex skips these rows",
                           repair=ops, data={"ids": [r["id"] for r in bad]}))
    return out


# ---- provider and cwd ------------------------------------------------------------------------

def check_row_providers(home: CodexHome, db: Path, rows, by_id) -> list[Finding]:
    fixable, stale_file = [], []
    for row in rows:
        r = by_id.get(row["id"])
        if r is None or "model_provider" not in row:
            continue
        recorded = r.facts.provider or home.configured   # a file without a provider counts as the configured one
        if row["model_provider"] == recorded:
            continue
        if row["model_provider"] == home.configured:
            stale_file.append((row, recorded))     # the file is the stale side: flip it, not the row
        else:
            fixable.append(_update(db, row, "model_provider", recorded, "re-sync from the rollout's session_meta"))
    out = []
    if fixable:
        out.append(Finding("codex.db-provider-mismatch",
                           f"{len(fixable)} row(s) name another provider than their rollout (resume would fail with "
                           f"\"Cannot change this thread's model provider\"): {_ids([o.key['id'] for o in fixable])}",
                           path=str(db), count=len(fixable), fix=REPAIR, repair=fixable))
    for provider in sorted({p for _, p in stale_file}):
        ids = [row["id"] for row, p in stale_file if p == provider]
        out.append(Finding("codex.db-provider-mismatch",
                           f"{len(ids)} row(s) already use {home.configured!r} but their rollout says {provider!r}: "
                           f"{_ids(ids)}", path=str(db), count=len(ids),
                           fix=f"histmig flip {shlex.quote(provider)} {shlex.quote(home.configured)} --apply"))
    return out


def once_per_path(fn):
    """``fn`` asked once per distinct string argument(s) during one check: thousands of rows and
    rollouts name a few dozen folders, each a stat or two (other values are passed through)."""
    seen: dict[tuple, Any] = {}

    def call(*args):
        if not all(type(a) is str for a in args):
            return fn(*args)
        if args not in seen:
            seen[args] = fn(*args)
        return seen[args]
    return call


def check_row_cwds(db: Path, rows, by_id) -> list[Finding]:
    fixable, moved = [], []
    same_path, dir_exists = once_per_path(_same_path), once_per_path(_dir_exists)
    for row in rows:
        r = by_id.get(row["id"])
        stored = r.facts.meta_cwd if r is not None else None
        if not stored or "cwd" not in row or same_path(row["cwd"], stored):
            continue
        if dir_exists(row["cwd"]) and not dir_exists(stored):
            moved.append((row, stored))        # a half-done move: bring the files along instead
        else:
            new = os.path.realpath(stored) if dir_exists(stored) else stored
            fixable.append(_update(db, row, "cwd", new, "re-sync from the rollout"))
    out = []
    if fixable:
        out.append(Finding("codex.db-cwd-mismatch",
                           f"{len(fixable)} row(s) name another cwd than their rollout: {_ids([o.key['id'] for o in fixable])}",
                           path=str(db), count=len(fixable), fix=REPAIR, repair=fixable))
    for row, old in moved:
        out.append(Finding("codex.db-cwd-mismatch", f"row {row['id']} says {row['cwd']} but its rollout still says {old}",
                           path=str(db), fix=move_fix(old, row["cwd"])))
    return out


def check_no_row(home: CodexHome, db: Path, rows) -> list[Finding]:
    known = {row["id"] for row in rows}
    missing = sorted(i for i in home.by_id() if i not in known)
    if not missing:
        return []
    return [Finding("codex.rollout-no-row", f"{len(missing)} rollout(s) have no row in {db.name}: {_ids(missing)}",
                    path=str(db), count=len(missing), fix="run `codex resume --all` once; Codex adds the rows itself",
                    data={"ids": missing})]


# ---- thread_history_1.sqlite offsets ------------------------------------------------------------

def check_offsets(hist: Path, by_id, split: Split | None = None) -> list[Finding]:
    """Rows stale now go into ``codex.offsets-stale``; rows that only a planned rollout edit moves
    go into that edit's finding (``split``), so each repair stays whole. The rows were resolved
    while each rollout was read (``doctor_scan``); here they are judged in the table's order."""
    try:
        doctor_history.validate(hist)
    except HistmigError as e:
        return [Finding("codex.unreadable", f"thread history database: {e}", path=str(hist))]
    key = str(hist)
    if not any(r.offsets.get(key) for r in by_id.values()):
        return []
    ops, bad_threads, unfixable = [], set(), set()
    for table, _, keys in doctor_history.TABLES:
        for thread_id, row_key in doctor_history.keys_in_order(hist, table):
            r = by_id.get(thread_id)
            res = r.offsets.get(key, {}).get((table, row_key)) if r is not None else None
            if res is None:
                continue           # no rollout, or a row that is right and no edit moves
            edits, owner = _planned(split, r)
            fixes, old, bad, stale_now = res.judge(lambda want: shift(want, edits))
            if bad:
                unfixable.add(thread_id)
            if fixes:
                op = SqlUpdate(db=str(hist), table=table, key={k: res.row[k] for k in keys}, set=fixes,
                               expect=old, session=session_tag("codex", thread_id),
                               reason="recompute byte offsets from the rollout's ordinals")
                (ops if stale_now or owner is None else owner.repair).append(op)
            if stale_now or bad:
                bad_threads.add(thread_id)
    if not bad_threads:
        return []
    ids = sorted(bad_threads)
    fix = REPAIR if not unfixable else f"{REPAIR} (fixes {len(ids) - len(unfixable)}); for the rest re-open the thread in Codex"
    return [Finding("codex.offsets-stale", f"{len(ids)} thread(s) have stale byte offsets ({len(ops)} row(s) fixable): "
                    f"{_ids(ids)}", path=str(hist), count=len(ids), fix=fix, repair=ops, data={"ids": ids})]


def _planned(split: Split | None, r: Rollout) -> tuple[list[tuple[int, int]], Finding | None]:
    """The planned length-changing edits of this very rollout file, and the finding that owns them."""
    owner = split.by_thread.get(r.facts.id) if split else None
    if owner is None or owner.path != str(r.path):
        return [], None
    return split.edits.get(r.facts.id, []), owner
