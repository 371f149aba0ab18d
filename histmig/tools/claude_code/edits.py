"""Edits of Claude Code's files outside the transcripts for a project move.

- ``~/.claude.json``: re-key ``projects["OLD…"]`` to ``NEW…`` in place (same position, every other
  byte identical); when the new key exists too, merge the two entries (flags kept; a field holding
  different values on both sides refuses without ``force``), re-encoding only the ``projects`` value
  with the file's own indent. ``githubRepoPaths`` path lists are rebased too. Claude writes this file
  under the ``~/.claude.json.lock`` directory lock (proper-lockfile, stale after 10 s): a fresh lock
  makes us wait a little, then refuse (docs/specs/safety.md rows 35-37).
- ``history.jsonl``: the ``project`` field of each prompt, patched in place.
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable

import orjson

from histmig.core.diagnostics import LockedError, RefusedError, Warning
from histmig.jsonio.jsonedit import find_span, object_members
from histmig.jsonio.lineedit import splice_spans
from histmig.core.plan import Fingerprint, WriteFile
from histmig.tools.claude_code.files import history_path, read_claude_json
from histmig.core.merge import merge_entry

LOCK_STALE_S = 10.0
LOCK_WAIT_S = 5.0      # how long a move waits for Claude Code to release the lock


# ---- the lock ---------------------------------------------------------------------------------

def check_lock(config: Path, *, timeout: float | None = None, now: Callable[[], float] = time.time,
               sleep: Callable[[float], None] = time.sleep) -> list[Warning]:
    """Wait while Claude Code holds a fresh ``<config>.lock``; refuse after ``timeout`` seconds."""
    lock = Path(str(config) + ".lock")
    timeout = LOCK_WAIT_S if timeout is None else timeout
    deadline = now() + timeout
    while True:
        try:
            age = now() - lock.lstat().st_mtime
        except FileNotFoundError:
            return []
        if age >= LOCK_STALE_S:
            return [Warning("claude-json-stale-lock", f"stale lock ({age:.0f} s old) ignored", path=str(lock))]
        if now() >= deadline:
            raise LockedError(f"locked by Claude Code ({lock} is {age:.1f} s old); quit Claude Code or retry",
                              path=str(config))
        sleep(0.2)


# ---- ~/.claude.json --------------------------------------------------------------------------

def detect_indent(raw: bytes) -> int | None:
    """Spaces per level (JSON.stringify(x, null, n)), or None for compact JSON."""
    nl = raw.find(b"\n")
    if nl < 0 or nl > len(raw) - 2:
        return None
    line = raw[nl + 1:]
    n = len(line) - len(line.lstrip(b" "))
    return n or None


def _encode_at_depth(value: Any, indent: int | None, depth: int) -> bytes:
    if indent is None:
        return orjson.dumps(value)
    import json
    text = json.dumps(value, indent=indent, ensure_ascii=False)
    return text.replace("\n", "\n" + " " * (indent * depth)).encode("utf-8", "surrogatepass")


def rekey_projects(data: dict, rebase: Callable[[str], str | None], *,
                   force: bool) -> tuple[dict, list[tuple[str, str]], list[str]]:
    """New ``projects`` dict (order kept), the (old, new) key pairs, and the merge conflicts."""
    projects = data.get("projects")
    if not isinstance(projects, dict):
        return projects, [], []
    renames = [(k, n) for k in projects if (n := rebase(k.replace("\\", "/"))) is not None and n != k]
    if not renames:
        return projects, [], []
    moving = dict(renames)
    merged = {n: k for k, n in renames if n in projects and n not in moving}
    conflicts: list[str] = []
    out: dict = {}
    for k, v in projects.items():
        if k in moving and moving[k] in merged:
            continue                      # merged into the existing entry below
        if k in merged:
            v = merge_entry(v, projects[merged[k]], f"projects[{k!r}]", force, conflicts)
        out[moving.get(k, k)] = v
    return out, renames, conflicts



def claude_json_op(homes: Any, rebase: Callable[[str], str | None], *, force: bool = False,
                   lock_timeout: float | None = None) -> tuple[WriteFile | None, list[Warning], dict[str, int]]:
    """The WriteFile re-keying ``~/.claude.json`` (None when nothing changes)."""
    cj = read_claude_json(homes)
    if cj.raw is None and cj.error is None:
        return None, [], {}
    if cj.data is None:
        raise RefusedError(f"{cj.path} is not valid JSON ({cj.error}; maybe being written); nothing changed",
                           path=str(cj.path))
    new_projects, renames, conflicts = rekey_projects(cj.data, rebase, force=force)
    repos, n_repo = _rebase_repo_paths(cj.data.get("githubRepoPaths"), rebase)
    if not renames and not n_repo:
        return None, [], {}
    if conflicts and not force:
        raise RefusedError("~/.claude.json has entries for both the old and the new path with different values "
                           f"({', '.join(conflicts)}); re-run with --force to let the old entry win, nothing changed",
                           path=str(cj.path))
    warnings = check_lock(Path(cj.path), timeout=lock_timeout)
    if conflicts:
        warnings.append(Warning("claude-json-overwritten", "--force: old values won for " + ", ".join(conflicts),
                                path=str(cj.path)))
    new_raw = _rewrite(cj.raw, cj.data, new_projects, renames, repos)
    expected = dict(cj.data)
    if renames:
        expected["projects"] = new_projects
    if n_repo:
        expected["githubRepoPaths"] = repos
    if orjson.loads(new_raw) != expected:
        raise RefusedError("internal error: ~/.claude.json edit did not verify; nothing changed", path=str(cj.path))
    op = WriteFile(path=str(cj.path), expect=Fingerprint.of(cj.path), new_bytes=new_raw,
                   reason=f"{len(renames)} project key(s) re-keyed")
    return op, warnings, {"keys": len(renames), "repo-paths": n_repo}


def _rebase_repo_paths(repos: Any, rebase) -> tuple[Any, int]:
    if not isinstance(repos, dict):
        return repos, 0
    out, n = {}, 0
    for name, paths in repos.items():
        if isinstance(paths, list):
            new = []
            for p in paths:
                q = rebase(p) if isinstance(p, str) else None
                n += q is not None and q != p
                q = p if q is None else q
                if q not in new:
                    new.append(q)
            paths = new
        out[name] = paths
    return out, n


def _rewrite(raw: bytes, data: dict, new_projects: dict, renames, repos) -> bytes:
    """Splice the changes into ``raw``: key bytes only for plain renames, else the re-encoded value."""
    edits: list[tuple[int, int, bytes]] = []
    indent = detect_indent(raw)
    if renames:
        s, e = find_span(raw, ["projects"])
        old_keys = list(data["projects"])
        if list(new_projects) == [dict(renames).get(k, k) for k in old_keys]:
            moving = dict(renames)
            for key, ks, ke, _, _ in object_members(raw, s):
                if key in moving:
                    edits.append((ks, ke, orjson.dumps(moving[key])))
        else:
            edits.append((s, e, _encode_at_depth(new_projects, indent, 1)))
    if repos != data.get("githubRepoPaths"):
        s, e = find_span(raw, ["githubRepoPaths"])
        edits.append((s, e, _encode_at_depth(repos, indent, 1)))
    return splice_spans(raw, edits)      # raises EditError on overlapping edits


# ---- history.jsonl ---------------------------------------------------------------------------

def history_file(homes: Any) -> Path:
    return history_path(homes)


# ---- ~/.claude.json: project entries an unpack brings (docs/pack.md) ----------------------------

def add_projects_op(homes: Any, entries: dict[str, Any], *, lock_timeout: float | None = None) -> Any:
    """The write adding ``projects`` entries for the keys ``~/.claude.json`` has no entry for (one
    already there is kept as it is): each new member is inserted after the last one, every other byte
    as it was. None when nothing is new, and when there is no file yet: Claude Code writes its own at
    its first start (onboarding, then the project's trust question again)."""
    cj = read_claude_json(homes)
    if cj.raw is None and cj.error is None:
        return None
    if cj.data is None:
        raise RefusedError(f"{cj.path} is not valid JSON ({cj.error}; maybe being written); nothing changed",
                           path=str(cj.path))
    projects = cj.data.get("projects")
    if projects is not None and not isinstance(projects, dict):
        return None
    new = {k: v for k, v in entries.items() if k not in (projects or {})}
    if not new:
        return None
    check_lock(Path(cj.path), timeout=lock_timeout)
    new_raw = _inserted(cj.raw, projects is not None, new, detect_indent(cj.raw))
    if orjson.loads(new_raw) != {**cj.data, "projects": {**(projects or {}), **new}}:
        raise RefusedError("internal error: ~/.claude.json edit did not verify; nothing changed", path=str(cj.path))
    return WriteFile(path=str(cj.path), expect=Fingerprint.of(cj.path), new_bytes=new_raw,
                     reason=f"{len(new)} project entr(ies) added")


def _inserted(raw: bytes, has_projects: bool, new: dict[str, Any], indent: int | None) -> bytes:
    """``raw`` with the members of ``new`` added at the end of ``projects`` (or a ``projects`` member
    added first in the top object)."""
    if not has_projects:
        top = raw.index(b"{")
        sep = b"\n" + b" " * (indent or 0) if indent else b""
        rest_empty = raw[top + 1:].strip() == b"}"
        member = sep + b'"projects":' + (b" " if indent else b"") + _encode_at_depth(new, indent, 1)
        return raw[:top + 1] + member + (b"" if rest_empty else b",") + raw[top + 1:]
    s, e = find_span(raw, ["projects"])
    members = list(object_members(raw, s))
    if not members:
        return splice_spans(raw, [(s, e, _encode_at_depth(new, indent, 1))])
    lead = b"\n" + b" " * (indent * 2) if indent else b""
    colon = b": " if indent else b":"
    text = b"".join(b"," + lead + orjson.dumps(k) + colon + _encode_at_depth(v, indent, 2) for k, v in new.items())
    end = members[-1][4]
    return raw[:end] + text + raw[end:]


def remove_projects_op(homes: Any, keys: list[str]) -> WriteFile | None:
    """Undo of an unpack when Claude Code saved ``~/.claude.json`` since: the ``projects`` members the
    unpack added (``keys``) cut out of the file as it is now, every other byte kept. None: none left."""
    cj = read_claude_json(homes)
    if cj.data is None or not isinstance(cj.data.get("projects"), dict):
        return None
    s, _e = find_span(cj.raw, ["projects"])
    members = list(object_members(cj.raw, s))
    gone = [m[0] in keys for m in members]
    if not any(gone):
        return None
    if all(gone):
        new_raw = splice_spans(cj.raw, [(s, _e, b"{}")])
    else:
        first = gone.index(False)       # members removed before the first kept one: up to its key
        cuts = [(members[0][1], members[first][1], b"")] if first else []
        cuts += [(members[i - 1][4], members[i][4], b"") for i in range(first + 1, len(members)) if gone[i]]
        new_raw = splice_spans(cj.raw, _merged_cuts(cuts))
    want = {**cj.data, "projects": {k: v for k, v in cj.data["projects"].items() if k not in keys}}
    if orjson.loads(new_raw) != want:
        raise RefusedError("internal error: ~/.claude.json edit did not verify; nothing changed", path=str(cj.path))
    return WriteFile(path=str(cj.path), expect=Fingerprint.of(cj.path), new_bytes=new_raw,
                     reason=f"{sum(gone)} unpacked project entr(ies) removed")


def _merged_cuts(cuts: list[tuple[int, int, bytes]]) -> list[tuple[int, int, bytes]]:
    """Adjacent cuts (two removed members in a row) joined, so the spans do not overlap."""
    out: list[tuple[int, int, bytes]] = []
    for s, e, b in sorted(cuts):
        if out and s <= out[-1][1]:
            out[-1] = (out[-1][0], max(e, out[-1][1]), b"")
        else:
            out.append((s, e, b))
    return out
