"""``histmig pack``: chosen history of every tool into one ``.tar.zst`` bundle (docs/pack.md).

The sessions are chosen with scan's filters (``tools.catalog``); each tool's ``pack`` hook
(histmig/toolkit/pack.py) names a session's files and the database rows that belong to it. Every file
is checked for a writer first (a file a client has open for writing is refused, named), then streamed
into the bundle (histmig/verbs/pack/bundle.py) and hashed as it goes; the manifest comes last.
"""
from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

from histmig.core.diagnostics import RefusedError, UsageError
from histmig.core.livewriters import open_writers
from histmig.core.model import SessionRef
from histmig.toolkit.pack import Entry, default_entry
from histmig.tools import hook, tool
from histmig.verbs.pack.bundle import SCHEMA, Writer


@dataclass
class Packed:
    """What ``pack`` wrote: the bundle, its sessions and files, and the manifest's totals."""

    path: str
    sessions: int = 0
    files: int = 0
    bytes: int = 0
    tools: dict[str, dict[str, Any]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"bundle": self.path, "sessions": self.sessions, "files": self.files, "bytes": self.bytes,
                "tools": self.tools}


def choose(homes: Any, sessions: Iterable[str] = (), *, tools: Iterable[str] | None = None, cwd: str | None = None,
           since: float | None = None, until: float | None = None, all_: bool = False) -> list[SessionRef]:
    """The sessions to pack: the named ones, else every session that passes scan's filters."""
    from histmig.tools.catalog import discover_all, filter_refs, resolve
    sessions = list(sessions)
    tools = list(tools) if tools else None
    if sessions:
        return _unique(resolve(homes, s, tools) for s in sessions)
    if not (all_ or tools or cwd or since is not None or until is not None):
        raise UsageError("name sessions, a filter (--tool, --cwd, --since, --until) or --all")
    refs = filter_refs(discover_all(homes, tools), cwd=cwd, since=since)
    return _unique(r for r in refs if until is None or (r.updated or 0) <= until)


def _unique(refs: Iterable[SessionRef]) -> list[SessionRef]:
    seen, out = set(), []
    for r in refs:
        if (r.format, r.id, str(r.path)) not in seen:
            seen.add((r.format, r.id, str(r.path)))
            out.append(r)
    return out


def entry_of(homes: Any, ref: SessionRef) -> Entry:
    mod = hook(ref.format, "pack")
    fn = getattr(mod, "entry", None) if mod is not None else None
    return fn(homes, ref) if fn is not None else default_entry(Path(tool(ref.format).home(homes)), ref)


def pack(homes: Any, refs: list[SessionRef], out: str | os.PathLike, *, filters: dict[str, Any] | None = None,
         on_file: Callable[[int], None] | None = None, threads: int = -1) -> Packed:
    """Write the bundle ``out`` (a new file) with ``refs``. Raises ``RefusedError`` (nothing written) for a
    file open for writing or one that changes while it is read, ``UsageError`` when ``out`` exists."""
    out = Path(out)
    if out.exists() or out.is_symlink():
        raise UsageError("the bundle file already exists; name a new file", path=out)
    if not refs:
        raise UsageError("no session matches; nothing to pack")
    sessions, files, stats = _plan(homes, refs)
    _refuse_writers(stats)
    done = Packed(str(out))
    manifest_files: list[dict[str, Any]] = []
    firsts = {s["files"][0]: s for s in sessions if s["files"]}
    with Writer(out, threads=threads) as w:
        for name, (src, tool_name, sid, rel) in files.items():
            st = stats[name]
            session = firsts.get(name)
            reader = _version_reader(tool_name) if session is not None and not session["version"] else None
            added = w.add_file(name, src, st, head=HEAD if reader else 0)
            if reader:
                session["version"] = reader(added.head)
            manifest_files.append({"name": name, "tool": tool_name, "session": sid, "rel": rel, "size": added.size,
                                   "sha256": added.sha256, "mode": st.st_mode & 0o7777, "mtime_ns": st.st_mtime_ns})
            done.files += 1
            done.bytes += added.size
            if on_file:
                on_file(added.size)
        done.sessions = len(sessions)
        done.tools = _tools(sessions)      # after the copy: versions come from the files' first bytes
        w.finish(_bundle_index(homes, sessions, manifest_files, done, filters or {}))
    return done


HEAD = 64 * 1024      # the first bytes of a session's main file a tool's ``version`` hook reads


def _version_reader(name: str) -> Callable[[bytes], str | None] | None:
    mod = hook(name, "pack")
    return getattr(mod, "version", None) if mod is not None else None


def _plan(homes: Any, refs: list[SessionRef]):
    """Each session's manifest entry, every file (member name -> source), its stat: before writing."""
    sessions: list[dict[str, Any]] = []
    files: dict[str, tuple[Path, str, str, str]] = {}
    stats: dict[str, os.stat_result] = {}
    for ref in refs:
        e = entry_of(homes, ref)
        names = []
        for src, rel in e.files:
            name = f"files/{ref.format}/{rel}"
            if name in files:
                continue
            try:
                st = os.lstat(src)
            except OSError as err:
                raise RefusedError(f"cannot read it ({err.strerror}); nothing written", path=src) from None
            files[name] = (Path(src), ref.format, ref.id, rel)
            stats[name] = st
            names.append(name)
        sessions.append({"tool": ref.format, "id": ref.id, "cwd": ref.cwd, "title": ref.title,
                         "updated": ref.updated, "version": e.version, "files": names, "rows": e.rows})
    return sessions, files, stats


def _refuse_writers(stats: dict[str, os.stat_result]) -> None:
    by_inode = {(st.st_dev, st.st_ino): name for name, st in stats.items()}
    busy = open_writers(by_inode)
    if busy:
        named = sorted(f"{by_inode[k]} (open for writing by {', '.join(h.describe() for h in v)})"
                       for k, v in busy.items())
        raise RefusedError(f"{len(named)} file(s) open for writing; close the client and pack again "
                           f"(nothing written): {'; '.join(named)}")


def _tools(sessions: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for s in sessions:
        t = out.setdefault(s["tool"], {"sessions": 0, "versions": []})
        t["sessions"] += 1
        if s["version"] and s["version"] not in t["versions"]:
            t["versions"].append(s["version"])
    for t in out.values():
        t["versions"].sort()
    return out


def _bundle_index(homes: Any, sessions, files, done: Packed, filters: dict[str, Any]) -> dict[str, Any]:
    from histmig import __version__
    return {"schema": SCHEMA, "histmig_version": __version__,
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "source": {"os": os.name, "platform": sys.platform, "user_home": str(getattr(homes, "home", "") or ""),
                       "homes": {name: str(tool(name).home(homes)) for name in done.tools}},
            "filters": filters, "tools": done.tools,
            "totals": {"sessions": done.sessions, "files": done.files, "bytes": done.bytes},
            "sessions": sessions, "files": files}
