"""mini-cc and manifest-layout checks: the health checks their specs name (docs/specs/mini-cc.md §7-9,
docs/specs/manifest-layout.md §3-5), evaluated read-only."""
from __future__ import annotations

from collections import defaultdict
from datetime import datetime
from pathlib import Path

from histmig.core.diagnostics import HistmigError
from histmig.tools.manifest import adapter as manifest
from histmig.tools.claude_family.listing import subdirs
from histmig.core.homes import Homes
from histmig.jsonio.jsonl import read_lines
from histmig.toolkit.doctor.base import Finding, dir_missing, writable_dir
from histmig.toolkit.doctor.locate import HomeIndex, move_fix
from histmig.tools.claude_family.transcript import Transcript, append_op, encode_like, mini_cc_record, read_transcript

REPAIR = "histmig doctor --repair --apply"


# ---- mini-cc -------------------------------------------------------------------------------------

def check_mini_cc(homes: Homes, index: HomeIndex, now: datetime) -> list[Finding]:
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


# ---- manifest layout -----------------------------------------------------------------------------

def check_manifest(homes: Homes) -> list[Finding]:
    out: list[Finding] = []
    for d in manifest.session_dirs(homes):
        out += _manifest_meta(d) + _manifest_transcript(d)
        if (d / ".lock").exists():
            out.append(Finding("manifest.locked", "a .lock file marks the session busy", path=str(d / ".lock"),
                               fix=f"if no writer is running: rm {d / '.lock'}"))
        if not writable_dir(d):
            out.append(Finding("manifest.read-only", "the session folder is not writable", path=str(d),
                               fix=f"chmod u+w {d}"))
    return out


def _manifest_meta(d: Path) -> list[Finding]:
    _raw, _meta, err = manifest.read_json_file(d / "meta.json")
    if err is None:
        return []
    why = {"missing": "is missing", "not a JSON object": "is not a JSON object"}.get(err, f"does not parse ({err})")
    return [Finding("manifest.meta-unreadable", f"meta.json {why}; `-c` skips this session", path=str(d / "meta.json"),
                    fix="restore meta.json from a backup")]


def _manifest_transcript(d: Path) -> list[Finding]:
    path = d / "transcript.jsonl"
    if not path.exists():
        return []
    messages, last_bad = 0, None
    try:
        for line in read_lines(path):
            if line.blank:
                continue
            last_bad = None if line.error is None else line.number
            messages += last_bad is None
    except (HistmigError, OSError) as e:
        return [Finding("manifest.tail-invalid", f"cannot read: {e}", path=str(path))]
    out = []
    if last_bad is not None:
        out.append(Finding("manifest.tail-invalid", "the last line is not valid JSON", path=str(path), line=last_bad,
                           fix="nothing to do if no writer is active; histmig never truncates"))
    out += _manifest_checkpoint(d, messages)
    return out


def _manifest_checkpoint(d: Path, messages: int) -> list[Finding]:
    """Only the latest checkpoint matters: it is the one the loader resumes from (or discards)."""
    cps = manifest.read_checkpoints(d / "checkpoints")
    if not cps:
        return []
    path = d / "checkpoints" / cps[-1]["name"]
    index = (cps[-1]["data"] or {}).get("atMessageIndex")
    if isinstance(index, int) and index <= messages:
        return []
    what = f"atMessageIndex {index} > {messages} message(s)" if isinstance(index, int) else "has no valid atMessageIndex"
    return [Finding("manifest.checkpoint-beyond-end", f"the latest checkpoint {what}; the loader discards it",
                    path=str(path), fix="delete the checkpoint by hand if you want it gone")]
