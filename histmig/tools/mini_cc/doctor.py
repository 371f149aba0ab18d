"""mini-cc checks: the health checks its spec names (docs/specs/mini-cc.md §7-9), evaluated read-only."""
from __future__ import annotations

from collections import defaultdict
from datetime import datetime
from pathlib import Path

from histmig.tools.claude_family.listing import subdirs
from histmig.core.homes import Homes
from histmig.toolkit.doctor.base import Finding, dir_missing, writable_dir
from histmig.toolkit.doctor.locate import HomeIndex, move_fix
from histmig.tools.claude_family.transcript import Transcript, append_op, encode_like, mini_cc_record, read_transcript

REPAIR = "histmig doctor --repair --apply"


def check(homes: Homes, index: HomeIndex, now: datetime, ignored=lambda code: False) -> list[Finding]:
    """The table's doctor hook (histmig/tools/__init__.py)."""
    out: list[Finding] = []
    for folder in subdirs(homes.mini_cc / "projects"):
        ts = [read_transcript(f) for f in sorted(folder.glob("*.jsonl")) if f.is_file() and not f.is_symlink()]
        if not ts:
            continue
        if not writable_dir(folder):
            out.append(Finding("mini-cc.read-only", f"{len(ts)} session(s) cannot be resumed for writing",
                               path=str(folder), count=len(ts), fix=f"chmod u+w {folder}"))
        out += _mini_cc_cwds(folder, ts, index)
        for t in ts:
            out += _mini_cc_file(t, now)
    return out


def _mini_cc_cwds(folder: Path, ts: list[Transcript], index: HomeIndex) -> list[Finding]:
    groups: dict[str, int] = defaultdict(int)
    for t in ts:
        if dir_missing(t.first_cwd):
            groups[t.first_cwd] += 1
    out = []
    for cwd, n in sorted(groups.items()):
        new = index.suggest(cwd)
        out.append(Finding("mini-cc.cwd-missing", f"{n} session(s) in {folder.name} were recorded in {cwd}, which no "
                           "longer exists" + (f"; likely moved to {new}" if new else ""), path=str(folder), count=n,
                           fix=move_fix(cwd, new), data={"cwd": cwd, "suggested": new}))
    return out


def _mini_cc_file(t: Transcript, now: datetime) -> list[Finding]:
    out, p = [], str(t.path)
    if t.error:
        out.append(Finding("mini-cc.broken-lines", f"cannot read: {t.error}", path=p))
    if t.broken:
        out.append(Finding("mini-cc.broken-lines", f"{len(t.broken)} line(s) do not parse (first: line {t.broken[0]}, {t.why})",
                           path=p, line=t.broken[0], count=len(t.broken), fix="nothing to do: mini-cc skips them"))
    if t.torn_tail:
        out.append(Finding("mini-cc.truncated-tail", "the last line is incomplete", path=p,
                           fix="nothing to do if mini-cc is not running"))
    if t.session_ids and t.id not in t.session_ids:
        sid = sorted(t.session_ids)[0]
        out.append(Finding("mini-cc.id-mismatch", f"file name {t.id} but sessionId {sid}", path=p,
                           fix=f"mv {p} {t.path.with_name(sid + '.jsonl')}"))
    if t.dangling:
        ops = [append_op(t, "mini-cc", encode_like(mini_cc_record(t, now), t.last_raw))] if t.complete else []
        out.append(Finding("mini-cc.dangling-tool-use", f"the session ends with {len(t.dangling)} unanswered tool call(s)",
                           path=p, count=len(t.dangling), fix=REPAIR if ops else "wait for the writer to finish",
                           repair=ops, data={"tool_use_ids": t.dangling}))
    return out
