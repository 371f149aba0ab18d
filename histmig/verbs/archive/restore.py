"""``histmig restore SESSION|--deleted``: put archived sessions back where their clients look for them.

A plan of :class:`~histmig.core.plan.CreateFile` operations, applied by the one write path (journaled,
undoable, dry run by default). A file that exists with the archived bytes is left alone; one that exists
with other bytes is never replaced: a named session is refused, and ``--deleted`` skips that session
(``restore-conflict``). ``--deleted`` takes every archived session the tool table no longer lists and
whose first file is gone (a session ``move`` carried elsewhere is still listed, so it is not restored).
By default a restored file gets the current time as mtime: with its old one, the cleanup that deleted it
(Claude Code's ``cleanupPeriodDays`` sweeps by mtime, docs/specs/claude-code.md §13) deletes it again at the
client's next start.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Iterable, Iterator

from histmig.core.diagnostics import AmbiguousError, NotFoundError, RefusedError, Skip, Warning
from histmig.core.paths import is_under
from histmig.core.plan import CreateFile, Plan
from histmig.verbs.archive import archive_root, catalog
from histmig.verbs.archive.store import Store


@dataclass
class Restore:
    plan: Plan
    spool: Any = None          # the spool folder of an apply's plan (removed by close)

    def close(self) -> None:
        if self.spool is not None:
            self.spool.close()
            self.spool = None


def plan_restore(homes: Any, spec: str | None = None, *, deleted: bool = False, to: str | None = None,
                 tools: Iterable[str] | None = None, data: str = "count", keep_mtime: bool = False) -> Restore:
    """``data``: ``count`` (a dry run: sizes and hashes from the catalog, no bytes), ``spool`` (an apply:
    each file's bytes in a spool file under the state dir) or ``memory`` (``--plan-out``: in the plan)."""
    root = archive_root(homes, to)
    known = catalog.sessions(root)
    if not known:
        raise NotFoundError(f"no archive in {root} (run `histmig archive` first)")
    wanted = set(_canonical(tools)) if tools else None
    if wanted is not None:
        known = {k: v for k, v in known.items() if k[0] in wanted}
    chosen = _deleted(homes, known, wanted) if deleted else [_one(known, spec or "")]
    out = Restore(Plan(op="restore", args={"session": spec, "deleted": deleted, "archive": str(root)},
                       roots=[str(r) for r in homes.roots()]))
    store = Store(root)
    if data == "spool":
        from histmig.toolkit.convert.sink import SpoolDir
        out.spool = SpoolDir(homes.state)
    try:
        for entry in chosen:
            _plan_session(out, entry, store, data, keep_mtime, strict=not deleted)
    except BaseException:
        out.close()
        raise
    creates = [o for o in out.plan.operations if isinstance(o, CreateFile)]
    out.plan.summary = {"sessions": len({(o.session or {}).get("id") for o in out.plan.operations}),
                        "files": len(creates), "rows": len(out.plan.operations) - len(creates),
                        "archive": str(root), "bytes": sum(o.nbytes for o in creates)}
    return out


def _canonical(tools: Iterable[str]) -> list[str]:
    from histmig.tools import canonical
    return [canonical(t) for t in tools]


def _one(known: dict, spec: str) -> dict:
    """A session named by full id, unique id prefix, or the path of one of its files."""
    path = os.path.abspath(spec) if os.sep in spec else None
    exact = [s for (_t, i), s in known.items() if i == spec or (path and any(f["path"] == path for f in s["files"]))]
    hits = exact or [s for (_t, i), s in known.items() if spec and i.startswith(spec)]
    if len(hits) == 1:
        return hits[0]
    if not hits:
        raise NotFoundError(f"no archived session matches {spec!r}")
    raise AmbiguousError(f"{spec!r} matches {len(hits)} archived sessions; give more of the id:",
                         [f"{s['tool']:<11} {s['id']}  {s['files'][0]['path']}" for s in hits])


def _deleted(homes: Any, known: dict, wanted: set[str] | None) -> list[dict]:
    from histmig.tools.catalog import discover_all
    listed = {(r.format, r.id) for r in discover_all(homes, sorted(wanted) if wanted else None)}
    return [s for k, s in sorted(known.items()) if k not in listed and not os.path.lexists(s["files"][0]["path"])]


def _plan_session(out: Restore, entry: dict, store: Store, data: str, keep_mtime: bool, strict: bool) -> None:
    session = {"tool": entry["tool"], "id": entry["id"]}
    roots = out.plan.roots
    ops = []
    for f in entry["files"]:
        path = f["path"]
        if f.get("rows"):
            got = _rows(out, entry, f, store, session, strict)
            if got is None:
                return
            ops += got
            continue
        if not any(is_under(path, r) for r in roots):
            out.plan.skips.append(Skip(path, f"outside this run's homes ({entry['tool']} {entry['id']}); "
                                       "restore with the --home it was archived from", code="restore-outside-home"))
            return
        if os.path.lexists(path):
            if _same(path, f):
                continue
            msg = f"a different file exists here now; not replaced by archived {entry['tool']} session {entry['id']}"
            if strict:
                raise RefusedError(msg, path=path)
            out.plan.skips.append(Skip(path, msg, code="restore-conflict"))
            return
        ops.append(_create(out, f, session, store, data, keep_mtime, entry.get("run")))
    if not ops:
        out.plan.warnings.append(Warning("restore-present", f"{entry['tool']} session {entry['id']} is already there "
                                         "with the archived bytes", path=entry["files"][0]["path"]))
    out.plan.operations.extend(ops)


def _rows(out: Restore, entry: dict, f: dict, store: Store, session: dict, strict: bool) -> list | None:
    """A session its tool keeps as database rows: the inserts of its ``restore_rows`` hook (None: left out)."""
    from histmig.tools import hook
    db = f["path"].rsplit("#", 1)[0]
    if not any(is_under(db, r) for r in out.plan.roots):
        out.plan.skips.append(Skip(db, f"outside this run's homes ({entry['tool']} {entry['id']}); restore with "
                                   "the --home it was archived from", code="restore-outside-home"))
        return None
    current = hook(f["rows"], "current_rows")(f["path"])
    if current == f["sha256"]:
        return []
    if current is not None:
        msg = f"the database holds other rows for archived {entry['tool']} session {entry['id']}; not replaced"
        if strict:
            raise RefusedError(msg, path=db)
        out.plan.skips.append(Skip(db, msg, code="restore-conflict"))
        return None
    return hook(f["rows"], "restore_rows")(f["path"], _lines(store.stream(f["chunks"])), session,
                                           f"from archive run {entry.get('run')}")


def _lines(chunks) -> Iterator[bytes]:
    rest = b""
    for chunk in chunks:
        *whole, rest = (rest + chunk).split(b"\n")
        for ln in whole:
            yield ln + b"\n"
    if rest:
        yield rest


def _create(out: Restore, f: dict, session: dict, store: Store, data: str, keep_mtime: bool, run: str | None):
    common = dict(path=f["path"], mode=f.get("mode", 0o600) & 0o7777, session=session,
                  mtime_ns=f["mtime_ns"] if keep_mtime else None, reason=f"from archive run {run}")
    if data == "memory":
        return CreateFile(data=b"".join(store.stream(f["chunks"])), **common)
    if data == "count":
        return CreateFile(data=b"", sha256=f["sha256"], size=f["size"], **common)
    from histmig.toolkit.convert.sink import Sink
    sink = Sink("spool", out.spool.path)
    for chunk in store.stream(f["chunks"]):
        sink.write(chunk)
    spooled = sink.result()
    if spooled.sha256 != f["sha256"]:
        raise RefusedError("archived copy does not match its catalog (damaged archive); nothing written",
                           path=f["path"])
    return CreateFile(data=b"", data_path=spooled.path, sha256=spooled.sha256, size=spooled.size, **common)


def _same(path: str, f: dict) -> bool:
    import hashlib
    from histmig.core.fsread import open_read
    try:
        if os.path.getsize(path) != f["size"]:
            return False
        h = hashlib.sha256()
        with os.fdopen(open_read(path), "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
        return h.hexdigest() == f["sha256"]
    except OSError:
        return False


