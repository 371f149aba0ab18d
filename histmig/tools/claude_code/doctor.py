"""Claude Code checks: project folders against their sessions' cwd, duplicated sessions, damaged
transcripts, stale .claude.json keys and the cleanupPeriodDays sweep."""
from __future__ import annotations

import json
import os
import shlex
from collections import defaultdict
from datetime import datetime
from pathlib import Path

from histmig.tools.claude_family.listing import session_files, subdirs
from histmig.core.homes import Homes
from histmig.toolkit.doctor.base import Finding, dir_missing
from histmig.toolkit.doctor.locate import HomeIndex, move_fix
from histmig.tools.claude_family.transcript import Transcript, append_op, claude_record, encode_like, read_transcript
from histmig.tools.claude_family.live import claude_live_sessions
from histmig.tools.claude_code.doctor_filing import check_filing, slug_matches
from histmig.core.paths import claude_slug
from histmig.core.plan import Fingerprint, Rename
from histmig.tools.claude_code.files import read_claude_json

DAY = 86400
CLEANUP_DEFAULT = 30
CLEANUP_MARGIN_DAYS = 7
# sessions a client is about to delete: a finding's data["at_risk"] names them, and doctor adds
# archive.unarchived when the archive holds no current copy (histmig/verbs/doctor/archived.py)
KEEP_A_COPY = "or keep a copy first: histmig archive (histmig restore --deleted --apply puts them back)"
REPAIR = "histmig doctor --repair --apply"


def project_folders(claude: Path) -> dict[Path, list[Transcript]]:
    """Each projects/<slug>/ folder with its UUID-named transcripts (what Claude lists), symlinked
    files left out."""
    out: dict[Path, list[Transcript]] = {}
    for folder in subdirs(claude / "projects"):
        files = [f for f in session_files(folder) if f.is_file() and not f.is_symlink()]
        if files:
            out[folder] = [read_transcript(f) for f in files]
    return out


def check(homes: Homes, index: HomeIndex, now: datetime, ignored=lambda code: False) -> list[Finding]:
    """The table's doctor hook (histmig/tools/__init__.py)."""
    folders = project_folders(homes.claude)
    filing = check_filing(folders, claude_live_sessions(homes.claude))
    out: list[Finding] = list(filing.findings)
    for folder, ts in folders.items():
        out += check_cwd_missing(folder, ts, index) + ([] if folder in filing.covered else check_slug(folder, ts))
        for t in ts:
            out += check_lines(t) + check_dangling(t, now)
    return (out + check_duplicates(folders) + check_project_keys(homes, index)
            + check_cleanup(homes, folders, now))


def _cwds(ts: list[Transcript]) -> list[str]:
    return sorted({t.first_cwd for t in ts if t.first_cwd})


def check_cwd_missing(folder: Path, ts: list[Transcript], index: HomeIndex) -> list[Finding]:
    out = []
    for cwd in _cwds(ts):
        if not dir_missing(cwd):
            continue
        n = sum(1 for t in ts if t.first_cwd == cwd)
        new = index.suggest(cwd)
        where = f"; likely moved to {new}" if new else ""
        out.append(Finding("claude.cwd-missing", f"{n} session(s) in {folder.name} were recorded in {cwd}, which no "
                           f"longer exists{where}", path=str(folder), count=n, fix=move_fix(cwd, new),
                           data={"cwd": cwd, "suggested": new}))
    return out


def check_slug(folder: Path, ts: list[Transcript]) -> list[Finding]:
    cwds = _cwds(ts)
    if not cwds or any(slug_matches(folder.name, c) for c in cwds):
        return []
    want = folder.parent / claude_slug(cwds[0])
    fix = (f"mv {shlex.quote(str(folder))} {shlex.quote(str(want))}" if not want.exists()
           else f"move the sessions of {folder.name} into {want.name} (the folder exists already)")
    return [Finding("claude.slug-mismatch", f"folder {folder.name} holds sessions of {cwds[0]}, whose folder name is "
                    f"{want.name}", path=str(folder), count=len(ts), fix=fix, data={"expected": want.name})]


def check_lines(t: Transcript) -> list[Finding]:
    out = []
    if t.error:
        out.append(Finding("claude.broken-lines", f"cannot read: {t.error}", path=str(t.path)))
    if t.broken:
        out.append(Finding("claude.broken-lines", f"{len(t.broken)} line(s) do not parse (first: line {t.broken[0]}, {t.why})",
                           path=str(t.path), line=t.broken[0], count=len(t.broken),
                           fix="nothing to do: Claude skips them and histmig keeps the bytes"))
    if t.torn_tail:
        out.append(Finding("claude.truncated-tail", "the last line is incomplete", path=str(t.path),
                           fix="nothing to do if no Claude process is writing this session"))
    return out


def check_dangling(t: Transcript, now: datetime) -> list[Finding]:
    if not t.dangling:
        return []
    ops = [append_op(t, "claude-code", encode_like(claude_record(t, now), t.last_raw))] if t.complete else []
    return [Finding("claude.dangling-tool-use", f"the conversation ends with {len(t.dangling)} unanswered tool call(s)",
                    path=str(t.path), count=len(t.dangling), fix=REPAIR if ops else "wait for the writer to finish",
                    repair=ops, data={"tool_use_ids": t.dangling})]


# ---- duplicates --------------------------------------------------------------------------------

def _is_prefix(short: Path, long: Path) -> bool:
    """Whether every byte of ``short`` is the start of ``long`` (so ``short`` holds nothing new)."""
    n = short.stat().st_size
    if n > long.stat().st_size:
        return False
    with open(short, "rb") as a, open(long, "rb") as b:
        while True:
            x = a.read(1 << 20)
            if not x:
                return True
            if x != b.read(len(x)):
                return False


def check_duplicates(folders: dict[Path, list[Transcript]]) -> list[Finding]:
    by_id: dict[str, list[Transcript]] = defaultdict(list)
    for ts in folders.values():
        for t in ts:
            by_id[t.id.lower()].append(t)
    return [f for sid, copies in sorted(by_id.items()) if len(copies) > 1 for f in [_duplicate(sid, copies)]]


def _duplicate(sid: str, copies: list[Transcript]) -> Finding:
    right = [t for t in copies if t.first_cwd and slug_matches(t.path.parent.name, t.first_cwd)]
    folders = ", ".join(t.path.parent.name for t in copies)
    detail = f"session {sid} exists in {len(copies)} folders: {folders}"
    if len(right) != 1:
        return Finding("claude.duplicate-session", detail, path=str(copies[0].path), count=len(copies),
                       fix="compare the copies and keep the one in the folder of the session's cwd")
    keep = right[0]
    wrong = [t for t in copies if t is not keep]
    movable = [t for t in wrong if _is_prefix(t.path, keep.path)]
    ops = [Rename(src=str(t.path), dst=str(t.path) + ".histmig-duplicate", expect=Fingerprint.of(t.path),
                  session={"tool": "claude-code", "id": t.id}, reason=f"duplicate of {keep.path}") for t in movable]
    fix = REPAIR if len(movable) == len(wrong) else (
        f"the copy outside {keep.path.parent.name} has records the right one lacks: compare them by hand")
    return Finding("claude.duplicate-session", detail + f"; the right one is in {keep.path.parent.name}",
                   path=str(keep.path), count=len(copies), fix=fix, repair=ops)


# ---- .claude.json and cleanup ----------------------------------------------------------------

def check_project_keys(homes: Homes, index: HomeIndex) -> list[Finding]:
    out = []
    for key in sorted(read_claude_json(homes).project_keys):
        if os.path.isabs(key) and not os.path.exists(key):
            new = index.suggest(key)
            out.append(Finding("claude.project-key-missing", f"projects[{key!r}] names a folder that no longer exists"
                               + (f"; likely moved to {new}" if new else ""), path=str(homes.claude_json),
                               fix=move_fix(key, new) if new else "harmless; remove the key if the project is gone",
                               data={"key": key, "suggested": new}))
    return out


def cleanup_days(claude: Path) -> int:
    try:
        value = json.loads((claude / "settings.json").read_text(encoding="utf-8")).get("cleanupPeriodDays")
    except (OSError, ValueError, AttributeError):
        return CLEANUP_DEFAULT
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 1 else CLEANUP_DEFAULT


def check_cleanup(homes: Homes, folders: dict[Path, list[Transcript]], now: datetime) -> list[Finding]:
    days = cleanup_days(homes.claude)
    cutoff = now.timestamp() - days * DAY
    files = [t for ts in folders.values() for t in ts]
    expired = [t for t in files if t.mtime < cutoff]
    soon = [t for t in files if cutoff <= t.mtime < cutoff + CLEANUP_MARGIN_DAYS * DAY]
    fix = (f"raise cleanupPeriodDays (now {days}) in {homes.claude / 'settings.json'} before starting Claude; "
           f"{KEEP_A_COPY}")
    out = []
    if expired:
        out.append(Finding("claude.cleanup-soon", f"{len(expired)} transcript(s) are older than {days} days: Claude "
                           "deletes them at its next start", path=str(homes.claude / "projects"), count=len(expired),
                           fix=fix, data={"days": days, "paths": [str(t.path) for t in expired],
                                                "at_risk": [str(t.path) for t in expired]}))
    if soon:
        out.append(Finding("claude.cleanup-soon", f"{len(soon)} transcript(s) reach the {days}-day cleanup within "
                           f"{CLEANUP_MARGIN_DAYS} days", path=str(homes.claude / "projects"), count=len(soon),
                           fix=fix, data={"days": days, "paths": [str(t.path) for t in soon],
                                                "at_risk": [str(t.path) for t in soon]}))
    return out
