"""``histmig archive``: a content-addressed, incremental copy of every session of every tool.

Sessions are found through the tool table (each adapter's ``discover``, the scan index); the files of a
session come from its tool's ``archive`` hook (``files(ref)``; default: the session's own file, or every
file below its folder). Each file is cut into chunks (histmig/verbs/archive/chunks.py) stored once each
under ``objects/`` (histmig/verbs/archive/store.py), and the run writes one catalog of every session it
saw (histmig/verbs/archive/catalog.py). Reads only: the homes are never written; the archive folder is
locked for the run, so a cron job and a shell hook never collide (docs/archive.md).
"""
from __future__ import annotations

import os
import time
from dataclasses import field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterable

from histmig.core.diagnostics import LockedError, Warning
from histmig.core.locks import GlobalLock, ensure_private_dir
from histmig.verbs.archive import catalog
from histmig.verbs.archive.chunks import chunk_file, chunk_stream
from histmig.verbs.archive.store import Store
from histmig.core.valueclass import FACTORY, value


@value
class ArchiveReport:
    root: str
    run: str
    catalog: str
    sessions: int = 0
    files: int = 0
    read: int = 0                # files whose bytes were read (new or changed since the last run)
    new_objects: int = 0
    new_bytes: int = 0           # compressed bytes added to objects/
    catalog_bytes: int = 0
    by_tool: dict[str, int] = field(default_factory=dict)
    warnings: list[Warning] = field(default_factory=list)

    def __init__(self, root: str, run: str, catalog: str, sessions: int = 0, files: int = 0, read: int = 0,
                 new_objects: int = 0, new_bytes: int = 0, catalog_bytes: int = 0, by_tool: dict[str, int] = FACTORY,
                 warnings: list[Warning] = FACTORY) -> None:
        self.root = root
        self.run = run
        self.catalog = catalog
        self.sessions = sessions
        self.files = files
        self.read = read
        self.new_objects = new_objects
        self.new_bytes = new_bytes
        self.catalog_bytes = catalog_bytes
        self.by_tool = {} if by_tool is FACTORY else by_tool
        self.warnings = [] if warnings is FACTORY else warnings

    def to_dict(self) -> dict[str, Any]:
        return {"root": self.root, "run": self.run, "catalog": self.catalog, "sessions": self.sessions,
                "files": self.files, "read": self.read, "new_objects": self.new_objects,
                "new_bytes": self.new_bytes, "catalog_bytes": self.catalog_bytes, "tools": self.by_tool,
                "warnings": [w.to_dict() for w in self.warnings]}


def default_root(homes: Any) -> Path:
    """``<state dir>/archive`` (the state dir: histmig/core/homes.py)."""
    return Path(homes.state) / "archive"


def archive_root(homes: Any, to: str | os.PathLike | None) -> Path:
    return Path(os.path.abspath(to)) if to else default_root(homes)


def run_archive(homes: Any, *, to: str | os.PathLike | None = None, tools: Iterable[str] | None = None,
                on_session: Callable[[Any], None] | None = None) -> ArchiveReport:
    """Archive every session of ``tools`` (all by default) into ``to`` (default :func:`default_root`)."""
    from histmig.tools.catalog import discover_all
    root = archive_root(homes, to)
    ensure_private_dir(root)
    try:
        lock = GlobalLock(root).acquire()
    except LockedError as e:
        raise LockedError(f"another histmig archive is using {root}{_who(e)}", path=str(root / "lock")) from None
    try:
        store = Store(root)
        store.sweep_temps()
        prev = catalog.latest_files(root)
        run = _run_id()
        writer = catalog.CatalogWriter(root, run, {"time": datetime.now(timezone.utc).isoformat(),
                                                   "histmig": _version(), "home": str(homes.home)})
        report = ArchiveReport(root=str(root), run=run, catalog=str(writer.final))
        try:
            _archive_all(discover_all(homes, tools), store, prev, writer, report, on_session)
            final = writer.commit({"sessions": report.sessions, "files": report.files, "read": report.read,
                                   "new_objects": store.new_objects, "new_bytes": store.new_bytes})
        except BaseException:
            writer.abort()
            raise
        report.new_objects, report.new_bytes = store.new_objects, store.new_bytes
        report.catalog_bytes = final.stat().st_size
        return report
    finally:
        lock.release()


def _archive_all(refs, store: Store, prev: dict, writer: catalog.CatalogWriter, report: ArchiveReport,
                 on_session) -> None:
    from histmig.tools import hook
    done: dict[str, dict] = {}           # a file two sessions share (a manifest folder) is read once
    unsupported: dict[str, str] = {}
    for ref in refs:
        files_of = hook(ref.format, "archive")
        paths = files_of(ref) if files_of is not None else default_files(ref)
        if paths is None:                 # the hook says: not kept as files (rows in a shared database)
            entry = _rows_entry(ref, store, prev, report)
            if entry is None:
                unsupported.setdefault(ref.format, str(ref.path))
                continue
            _write(writer, report, ref, [entry], on_session)
            continue
        entries = []
        for p in paths:
            key = str(p)
            entry = done.get(key)
            if entry is None:
                got = chunk_file(key, store, prev.get(key))
                if got is None:
                    continue
                report.read += got.read
                entry = done[key] = {"path": key, "size": got.size, "mtime_ns": got.mtime_ns, "mode": got.mode,
                                     "sha256": got.sha256, "chunks": got.chunks}
            entries.append(entry)
        if entries:
            _write(writer, report, ref, entries, on_session)
    for tool, where in unsupported.items():
        report.warnings.append(Warning("archive-not-files", f"{tool} keeps its sessions as rows of one database "
                                       "that could not be read; not archived (docs/archive.md, \"Limits\")", path=where))


def _write(writer: catalog.CatalogWriter, report: ArchiveReport, ref: Any, entries: list[dict], on_session) -> None:
    writer.line({"tool": ref.format, "id": ref.id, "cwd": ref.cwd, "title": ref.title, "files": entries})
    report.sessions += 1
    report.files += len(entries)
    report.by_tool[ref.format] = report.by_tool.get(ref.format, 0) + 1
    if on_session is not None:
        on_session(ref)


def _rows_entry(ref: Any, store: Store, prev: dict, report: ArchiveReport) -> dict | None:
    """A session its tool keeps as database rows (its ``archive_rows`` hook), archived as a stream of
    JSON lines; ``path`` is ``<database>#<session id>`` and ``rows`` names the tool that restores it."""
    from histmig.tools import hook
    dump = hook(ref.format, "archive_rows")
    got = dump(ref) if dump is not None else None
    if got is None:
        return None
    key, version, lines = got
    old = prev.get(key)
    if old and old.get("version") == version:
        return old
    size, sha, chunks = chunk_stream(lines, store, old)
    report.read += 1
    return {"path": key, "rows": ref.format, "version": version, "size": size, "sha256": sha, "chunks": chunks}


def default_files(ref: Any) -> list[Path]:
    """A session's file, or every regular file below its folder (sorted)."""
    p = Path(ref.path)
    if p.is_dir():
        return sorted(f for f in p.rglob("*") if f.is_file() and not f.is_symlink())
    return [p]


def _run_id() -> str:
    ns = time.time_ns()
    stamp = datetime.fromtimestamp(ns / 1e9, timezone.utc).strftime("%Y%m%dT%H%M%S")
    return f"{stamp}.{ns // 1000 % 1_000_000:06d}Z"


def _who(e: LockedError) -> str:
    text = str(e)
    return text[text.index(" (pid"):text.index(")") + 1] if " (pid" in text else ""


def _version() -> str:
    from histmig import __version__
    return __version__
