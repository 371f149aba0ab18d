"""Gemini CLI checks (docs/specs/gemini.md §3, §4, §6, §7, §10), read-only.

- ``gemini.project-missing``: a registered project folder is gone; its sessions are listed nowhere (§7).
- ``gemini.retention``: sessions whose ``lastUpdated`` is past ``general.sessionRetention.maxAge`` (default
  on, 30 days), or within 7 days of it: the client deletes them at its next start (§4).
- ``gemini.stub-short-id``: a file without a prompt that shares its 8-character short id with a real
  session; the next start deletes the stub *and every file with that short id* (bug G1, §6). Repair:
  the stub is deleted now (backed up, undoable), so the real transcript survives.
- ``gemini.repeated-tool-result``: tool results stored twice (``toolCalls[].result`` and a ``user``
  ``functionResponse`` record); a resume sends both (§10). Repair: the repeated ``user`` records'
  lines are removed (backed up, undoable); each result stays in its call.
- ``gemini.broken-lines``: lines that do not parse; the client skips them.
"""
from __future__ import annotations

import os
import re
from collections import defaultdict
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import orjson

from histmig.core.diagnostics import HistmigInputError
from histmig.core.plan import Delete, Fingerprint, Patch, WriteFile
from histmig.core.times import parse_ts
from histmig.toolkit.doctor.base import Finding, dir_missing
from histmig.toolkit.doctor.locate import HomeIndex, move_fix
from histmig.tools.gemini import files
from histmig.jsonio.jsonl import record_lines
from histmig.jsonio.regular import read_regular
from histmig.tools.gemini.adapter import ref_for, stream
from histmig.tools.gemini.records import line_kind

REPAIR = "histmig doctor --repair --apply"
MARGIN_DAYS = 7
# data["at_risk"]: the sessions Gemini is about to delete (doctor's archive.unarchived reads it)
KEEP_A_COPY = "or keep a copy first: histmig archive (histmig restore --deleted --apply puts them back)"
DEFAULT_MAX_AGE = "30d"
_UNITS = {"h": timedelta(hours=1), "d": timedelta(days=1), "w": timedelta(weeks=1), "m": timedelta(days=30)}


def check(homes: Any, index: HomeIndex, now: datetime, ignored=lambda code: False) -> list[Finding]:
    """The table's doctor hook (histmig/tools/__init__.py)."""
    gdir = files.gemini_dir(homes)
    registry = files.read_registry(gdir)
    out: list[Finding] = []
    for slug_dir in files.slug_dirs(gdir):
        chats = files.chat_files(slug_dir)
        if not chats:
            continue
        root = files.project_root(slug_dir, registry)
        refs = [ref_for(p, root) for p in chats]
        out += _project_missing(slug_dir, root, refs, registry, index)
        out += _stubs(refs)
        out += _retention(gdir, root, refs, now)
        for ref in refs:
            out += _lines(ref)
            if not ignored("gemini.repeated-tool-result"):
                out += _repeated(ref.path)
    return out


def _project_missing(slug_dir: Path, root: str | None, refs: list, registry: dict[str, str],
                     index: HomeIndex) -> list[Finding]:
    if not dir_missing(root):
        return []
    n = sum(1 for r in refs if r.extra.get("resumable"))
    if not n:
        return []
    new = _registered_twin(root, registry) or index.suggest(root)
    where = f"; likely moved to {new}" if new else ""
    return [Finding("gemini.project-missing", f"{n} session(s) in tmp/{slug_dir.name} belong to {root}, which no "
                    f"longer exists{where}: gemini lists none of them", path=str(slug_dir), count=n,
                    fix=move_fix(root, new), data={"cwd": root, "suggested": new})]


def _registered_twin(old: str, registry: dict[str, str]) -> str | None:
    """Another registered project with the same folder name that exists (the client ran there after the mv)."""
    name = os.path.basename(old.rstrip("/"))
    hits = [p for p in registry if p != old and os.path.basename(p.rstrip("/")) == name and os.path.isdir(p)]
    return hits[0] if len(hits) == 1 else None


def _stubs(refs: list) -> list[Finding]:
    by_short: dict[str, list] = defaultdict(list)
    for r in refs:
        m = files.SESSION_RE.match(r.path.name)
        if m:
            by_short[m.group("short")].append(r)
    out = []
    for short, group in sorted(by_short.items()):
        real = [r for r in group if r.extra.get("resumable")]
        stubs = [r for r in group if not r.extra.get("resumable") and not r.error]
        if not real or not stubs:
            continue
        ops = [Delete(path=str(s.path), expect=Fingerprint.of(s.path), session={"tool": "gemini", "id": s.id},
                      reason="prompt-less stub that would take its namesake with it") for s in stubs]
        out.append(Finding("gemini.stub-short-id", f"{len(stubs)} prompt-less file(s) share the short id {short} with "
                           f"{real[0].path.name}: Gemini's next start deletes them and, with them, that session",
                           path=str(stubs[0].path), count=len(stubs), fix=f"{REPAIR}; {KEEP_A_COPY}", repair=ops,
                           data={"short_id": short, "stubs": [str(s.path) for s in stubs],
                                 "sessions": [str(r.path) for r in real],
                                 "at_risk": [str(r.path) for r in real]}))
    return out


def retention(gdir: Path, project: str | None) -> tuple[bool, timedelta | None, str]:
    """(enabled, maxAge, where it was set): the project's ``.gemini/settings.json`` over the user's."""
    enabled, age, where = True, DEFAULT_MAX_AGE, "default"
    for path in (gdir / "settings.json", Path(project) / ".gemini" / "settings.json" if project else None):
        conf = _settings(path) if path else None
        ret = (conf.get("general") or {}).get("sessionRetention") if isinstance(conf, dict) else None
        if isinstance(ret, dict):
            enabled = ret.get("enabled", True) is not False
            age = ret.get("maxAge", age) if isinstance(ret.get("maxAge", age), str) else age
            where = str(path)
    m = re.fullmatch(r"(\d+)([hdwm])", age)
    return enabled, (int(m.group(1)) * _UNITS[m.group(2)] if m and int(m.group(1)) else None), where


def _settings(path: Path) -> Any:
    try:
        raw = read_regular(path, 1 << 24)          # a FIFO named settings.json would block
    except (OSError, HistmigInputError):
        return None
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:     # settings may carry // comments (the client strips them)
        try:
            return orjson.loads(re.sub(rb"^\s*//.*$", b"", raw, flags=re.M))
        except orjson.JSONDecodeError:
            return None


def _retention(gdir: Path, project: str | None, refs: list, now: datetime) -> list[Finding]:
    enabled, max_age, _where = retention(gdir, project)
    if not enabled or max_age is None:
        return []
    now = now if now.tzinfo else now.replace(tzinfo=timezone.utc)
    due, soon = [], []
    for r in refs:
        updated = parse_ts(r.extra.get("lastUpdated")) if r.extra.get("resumable") else None
        if updated is None:
            continue
        updated = updated if updated.tzinfo else updated.replace(tzinfo=timezone.utc)
        if updated < now - max_age:
            due.append(r)
        elif updated < now - max_age + timedelta(days=MARGIN_DAYS):
            soon.append(r)
    fix = (f'set "general": {{"sessionRetention": {{"enabled": false}}}} in {gdir / "settings.json"} '
           "(or a longer maxAge) before starting gemini again; " + KEEP_A_COPY)
    out = []
    for group, what in ((due, "are past"), (soon, f"reach within {MARGIN_DAYS} days")):
        if group:
            out.append(Finding("gemini.retention", f"{len(group)} session(s) of {project or 'an unknown project'} "
                               f"{what} the {max_age.days or max_age}-day session retention: Gemini deletes them at its "
                               "next start", path=str(group[0].path), count=len(group), fix=fix,
                               data={"paths": [str(r.path) for r in group], "due": group is due,
                                     "at_risk": [str(r.path) for r in group]}))
    return out


def _lines(ref: Any) -> list[Finding]:
    broken = next((s for s in ref.state if "broken line" in s), None)
    if not broken:
        return []
    return [Finding("gemini.broken-lines", f"{broken} (kept as they are)", path=str(ref.path),
                    fix="nothing to do: Gemini skips them")]


def _repeated(path: Path) -> list[Finding]:
    """Read only files where a ``user`` record carries a functionResponse (a byte test first)."""
    try:
        with open(path, "rb") as fh:
            if not any(b'"functionResponse"' in ln and b'"type":"user"' in ln for ln in fh):
                return []
    except OSError:
        return []
    ids = {r.id for r in stream(path).records if r.source_type == "repeated-function-response" and r.id}
    if not ids:
        return []
    ops = _drop_repeated(path, ids)
    fix = (f"{REPAIR} (removes the repeated records, backed up: histmig undo puts them back; each result stays "
           "in its call's toolCalls[].result)") if ops else \
        "none histmig makes safely (a $rewindTo names one of them, or a line does not parse): continue in a new session"
    return [Finding("gemini.repeated-tool-result", f"{len(ids)} tool result(s) are stored twice; a resume sends each "
                    "twice, which the Gemini API is reported to refuse (400)", path=str(path), count=len(ids),
                    fix=fix, repair=ops, data={"message_ids": sorted(ids)})]


def _drop_repeated(path: Path, ids: set[str]) -> list[WriteFile]:
    """The repair: every line that defines one of ``ids`` (the ``user`` records that repeat a result
    their call already holds) removed, and each ``$set`` list that holds one (a resume writes the
    whole list again) rewritten without it, so the resolved list is the same without them
    (records.py ``resolve``: no other message's place depends on them). None when a ``$rewindTo``
    names one of them (removing it would change what the rewind does), a ``$set`` list is not in
    orjson's compact form, or a line of the file does not parse (what it names is unknown)."""
    expect = Fingerprint.of(path)
    patches = []
    for line in record_lines(path):
        if line.blank:
            continue
        obj = line.obj
        if not isinstance(obj, dict):
            return []
        kind = line_kind(obj)
        if kind == "message" and str(obj["id"]) in ids:
            patches.append(Patch(line.offset, line.raw, b""))
        elif kind == "$rewindTo" and str(obj["$rewindTo"]) in ids:
            return []
        elif kind == "$set" and isinstance(obj["$set"], dict) and isinstance(obj["$set"].get("messages"), list) \
                and any(_named(m, ids) for m in obj["$set"]["messages"]):
            # the list a resume writes again: rewritten without them, when its bytes are exactly what
            # orjson writes for it (the client's compact JSON), so the new line is what the client would write
            if orjson.dumps(obj) != line.body:
                return []
            sets = {**obj["$set"], "messages": [m for m in obj["$set"]["messages"] if not _named(m, ids)]}
            patches.append(Patch(line.offset + line.body_start, line.body, orjson.dumps({**obj, "$set": sets})))
    if not patches:
        return []
    return [WriteFile(path=str(path), expect=expect, patches=tuple(patches), session={"tool": "gemini"},
                      reason="tool results stored twice: the repeated user records removed")]


def _named(message: Any, ids: set[str]) -> bool:
    return isinstance(message, dict) and "id" in message and str(message["id"]) in ids
