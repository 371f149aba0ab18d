"""``histmig pack``: chosen history of every tool into one ``.tar.zst`` bundle (docs/pack.md).

The sessions are chosen with scan's filters (``tools.catalog``); each tool's ``pack`` hook
(histmig/toolkit/pack.py) names a session's files and the database rows that belong to it. Every file
is checked for a writer (a file a client has open for writing is refused, named), then streamed into
the bundle (histmig/verbs/pack/bundle.py) and hashed as it goes; each session's entry (its rows and its
files' sha256s) follows its files, the index and the manifest come last.
"""
from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

from histmig.core.diagnostics import RefusedError, UsageError
from histmig.core.livewriters import OpenFiles
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
         on_file: Callable[[int], None] | None = None, threads: int = 0) -> Packed:
    """Write the bundle ``out`` (a new file) with ``refs``, session after session: each session's rows are
    read when its turn comes and written with it, so memory does not grow with the sessions (docs/pack.md).
    Raises ``RefusedError`` (no bundle left behind) for a file open for writing or one that changes while
    it is read, ``UsageError`` when ``out`` exists."""
    out = Path(out)
    if out.exists() or out.is_symlink():
        raise UsageError("the bundle file already exists; name a new file", path=out)
    if not refs:
        raise UsageError("no session matches; nothing to pack")
    opened = OpenFiles()         # one /proc scan before the first byte; each file is looked up in it
    done = Packed(str(out))
    busy: list[str] = []
    shared: set[str] = set()     # a session's other files several sessions may share (Gemini's project marker)
    with Writer(out, threads=threads) as w:
        for ref in refs:
            e = entry_of(homes, ref)
            session = {"tool": ref.format, "id": ref.id, "cwd": ref.cwd, "title": ref.title,
                       "updated": ref.updated, "version": e.version, "files": [], "rows": e.rows}
            files = []
            for k, (src, rel) in enumerate(e.files):
                name = f"files/{ref.format}/{rel}"
                if k:
                    if name in shared:
                        continue
                    shared.add(name)
                try:
                    st = os.lstat(src)
                except OSError as err:
                    raise RefusedError(f"cannot read it ({err.strerror}); nothing written", path=src) from None
                holders = opened.writers((st.st_dev, st.st_ino))
                if holders:
                    busy.append(f"{name} (open for writing by {', '.join(h.describe() for h in holders)})")
                if busy:
                    continue        # refused at the end, naming every such file; nothing more is copied
                reader = _version_reader(ref.format) if not files and not session["version"] else None
                added = w.add_file(name, src, st, head=HEAD if reader else 0)
                if reader:
                    session["version"] = reader(added.head)
                files.append({"name": name, "tool": ref.format, "session": ref.id, "rel": rel, "size": added.size,
                              "sha256": added.sha256, "mode": st.st_mode & 0o7777, "mtime_ns": st.st_mtime_ns})
                done.files += 1
                done.bytes += added.size
                if on_file:
                    on_file(added.size)
            if busy:
                continue
            _count(done.tools, session)
            done.sessions += 1
            w.add_session({"session": session, "files": files})
        if busy:
            raise RefusedError(f"{len(busy)} file(s) open for writing; close the client and pack again "
                               f"(nothing written): {'; '.join(sorted(busy))}")
        for t in done.tools.values():
            t["versions"].sort()
        w.finish(_bundle_index(homes, done, filters or {}))
    return done


HEAD = 64 * 1024      # the first bytes of a session's main file a tool's ``version`` hook reads


def _version_reader(name: str) -> Callable[[bytes], str | None] | None:
    mod = hook(name, "pack")
    return getattr(mod, "version", None) if mod is not None else None


def _count(tools: dict[str, dict[str, Any]], s: dict[str, Any]) -> None:
    t = tools.setdefault(s["tool"], {"sessions": 0, "versions": []})
    t["sessions"] += 1
    if s["version"] and s["version"] not in t["versions"]:
        t["versions"].append(s["version"])


def _bundle_index(homes: Any, done: Packed, filters: dict[str, Any]) -> dict[str, Any]:
    from histmig import __version__
    return {"schema": SCHEMA, "histmig_version": __version__,
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "source": {"os": os.name, "platform": sys.platform, "user_home": str(getattr(homes, "home", "") or ""),
                       "homes": {name: str(tool(name).home(homes)) for name in done.tools}},
            "filters": filters, "tools": done.tools,
            "totals": {"sessions": done.sessions, "files": done.files, "bytes": done.bytes}}
