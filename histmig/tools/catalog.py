"""Finding sessions across every tool: discovery, filters, and resolving what the user typed. Beside the
tool table because it only walks the table (each tool's adapter discovers its own sessions); no verb."""
from __future__ import annotations

import os
import re
import time
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from histmig.core.diagnostics import AmbiguousError, NotFoundError, UsageError
from histmig.core.model import SessionRef
from histmig.core.paths import is_under
from histmig.tools import adapter


def discover_all(homes, tools: Iterable[str] | None = None, *, use_index: bool = True,
                 loaded: dict | None = None) -> Iterator[SessionRef]:
    """Every session of the chosen tools (all by default), lazily, tool by tool. Adapters marked
    ``indexed`` list through the scan index in the state dir (histmig.core.scanindex; ``use_index=False``
    is ``scan --no-index``); it is saved when the listing ends, pruned of vanished files only after a
    complete listing of every tool."""
    chosen = _chosen(homes, tools)
    index = _open_index(homes) if use_index else None
    if loaded is not None:
        loaded["index"] = index          # (``listing`` reads the other tools' ids from it: one load, not two)
    complete = False
    try:
        for name, a in chosen:
            found = () if a is None else a.discover(homes, index=index) \
                if index is not None and getattr(a, "indexed", False) else a.discover(homes)
            ids = []
            for ref in found:
                ids.append(ref.id)
                yield ref
            if index is not None:
                index.store_ids(name, sorted(ids))
        complete = not tools
    finally:
        if index is not None:
            index.save(keep=index.touched if complete else None)


def _chosen(homes, tools: Iterable[str] | None) -> list[tuple[str, Any]]:
    """(name, adapter) of each chosen tool (every tool with an adapter by default), in table order; the
    adapter is None, and stays unimported, for a tool none of whose declared paths is on disk: a tool
    keeps its sessions under the paths its row declares (histmig/tools/__init__.py), so it has none
    (``scan --tool pi`` lists the other nine tools for their ids: on a home with Pi only, nine imports)."""
    from histmig.tools import TABLE, canonical
    out = []
    for name in [canonical(t) for t in tools] if tools else list(TABLE):
        row = TABLE[name]
        if _nowhere(homes, row) and _has_adapter(row):
            out.append((name, None))
            continue
        a = adapter(name) if tools else row.hook("adapter")
        if a is not None:
            out.append((name, a))
    return out


def _nowhere(homes, row) -> bool:
    """True when every path the row declares is unset or missing (a path that cannot be looked at, or a
    row that declares none, counts as there)."""
    if not row.homes:
        return False
    for spec in row.homes:
        try:
            path = getattr(homes, spec.name)
            if path is not None:
                os.lstat(path)
                return False
        except FileNotFoundError:
            continue
        except (AttributeError, OSError):
            return False
    return True


def _has_adapter(row) -> bool:
    from importlib.util import find_spec
    try:
        return find_spec(f"{row.package}.adapter") is not None
    except ModuleNotFoundError:
        return False


def locate_all(homes, tools: Iterable[str] | None = None, *,
               use_index: bool = True) -> Iterator[tuple[SessionRef, Callable[[SessionRef], None] | None]]:
    """Every session like ``discover_all`` (same order, ids, sizes and ``updated``), as ``(ref,
    complete)``: a tool whose ``search`` hook can ``locate`` (histmig/toolkit/search.py) lists its
    sessions without reading what a search may not need, and ``complete(ref)`` fills the ref's
    ``cwd`` and ``title`` later; ``complete`` is None for a ref that is already the listing's. Message
    counts are not made, so the scan index is read (a hit's ref may hold only the fields search uses:
    id, size, times, ``cwd``, ``title``, ``error``) but only the other tools' listings add to it; it is
    never pruned here. A tool none of whose paths is on disk has no sessions: its adapter and search
    hook stay unimported (``_chosen``; a search of a Codex-only home imports one adapter, not ten) and
    its ids are stored empty, as a scan stores them."""
    from histmig.tools import hook
    chosen = _chosen(homes, tools)
    index = _open_index(homes) if use_index else None
    try:
        for name, a in chosen:
            if a is None:
                if index is not None:
                    index.store_ids(name, [])
                continue
            source = hook(a.name, "search")
            if getattr(source, "locate", None) is not None:
                yield from source.locate(homes, index)
                continue
            found = a.discover(homes, index=index) if index is not None and getattr(a, "indexed", False) \
                else a.discover(homes)
            ids = []
            for ref in found:
                ids.append(ref.id)
                yield ref, None
            if index is not None:
                index.store_ids(a.name, sorted(ids))
    finally:
        if index is not None:
            index.save()


def known_ids(homes, listed: Iterable[SessionRef], tools: Iterable[str] | None = None, *,
              use_index: bool = True, index=None) -> list[str]:
    """Every session id of every tool, so a listing of some of them prints short ids that ``show``
    (which looks among all tools) resolves to one session. ``listed`` is what the listing of ``tools``
    found; the other tools' ids come from the scan index (their last complete listing), or are
    listed now when it has none (a first scan, ``--no-index``)."""
    from histmig.tools import TABLE, canonical
    ids = [r.id for r in listed]
    if not tools:
        return ids
    chosen = {canonical(t) for t in tools}
    others = [t for t in TABLE if t not in chosen]
    stored = (index if index is not None else _open_index(homes)).ids if use_index else {}
    missing = [t for t in others if not isinstance(stored.get(t), list)]
    for t in others:
        if t not in missing:
            ids += [i for i in stored[t] if isinstance(i, str)]
    if missing:
        ids += [r.id for r in discover_all(homes, missing, use_index=use_index)]
    return ids


def _open_index(homes):
    from histmig.core.scanindex import ScanIndex
    return ScanIndex.load(getattr(homes, "state", None))


def parse_since(text: str, *, now: float | None = None, flag: str = "--since") -> float:
    """``7d``, ``12h``, ``30m`` or an ISO date/time → a Unix time. For ``--until`` a date alone means
    the end of that day (``--until 2026-11-30`` keeps the sessions of the 30th)."""
    now = time.time() if now is None else now
    m = re.fullmatch(r"(\d+)\s*([dhm])", text.strip())
    if m:
        return now - int(m.group(1)) * {"d": 86400, "h": 3600, "m": 60}[m.group(2)]
    try:
        dt = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(f"{flag}: not a date or a duration like 7d: {text!r}") from None
    if dt.tzinfo is None:
        dt = dt.astimezone()
    if flag == "--until" and re.fullmatch(r"\d{4}-\d{2}-\d{2}", text.strip()):
        return dt.timestamp() + 86400 - 1e-6
    return dt.timestamp()


def cwd_matches(ref_cwd: str | None, wanted: str) -> bool:
    """A session matches ``--cwd PATH`` when its cwd is PATH or lies below it (given spelling or
    realpath on either side)."""
    if not ref_cwd:
        return False
    wanted_forms = {os.path.normpath(wanted), os.path.realpath(wanted)}
    cwd_forms = {ref_cwd, os.path.realpath(ref_cwd)} if ref_cwd.startswith("/") else {ref_cwd}
    return any(is_under(c, w) for c in cwd_forms for w in wanted_forms)


def filter_refs(refs: Iterable[SessionRef], *, provider: str | None = None, cwd: str | None = None,
                since: float | None = None, until: float | None = None) -> Iterator[SessionRef]:
    for r in refs:
        if provider is not None and r.provider != provider:
            continue
        if cwd is not None and not cwd_matches(r.cwd, cwd):
            continue
        if since is not None and (r.updated or 0) < since:
            continue
        if until is not None and (r.updated or 0) > until:
            continue
        yield r


class Listing:
    """What ``scan`` shows: the chosen sessions in order, the short id of each (unique among every
    session of every tool), and how many matched before ``--limit``. (A plain class: a dataclass costs
    every command that lists ~0.5 ms of start-up to build.)"""
    __slots__ = ("rows", "short", "matched")

    def __init__(self, rows: list[SessionRef], short: dict[str, str], matched: int):
        self.rows, self.short, self.matched = rows, short, matched


def listing(homes, *, tools: Iterable[str] | None = None, provider: str | None = None, cwd: str | None = None,
            since: float | None = None, until: float | None = None, states: Iterable[str] = (),
            sort: str = "updated", reverse: bool = False, limit: int | None = None, use_index: bool = True,
            on_ref: Callable[[SessionRef], None] | None = None) -> Listing:
    """The sessions of a ``scan`` (docs/scan-show.md): every session of ``tools`` is listed once (the
    scan index answers for unchanged files), its id kept for the short ids, then filtered, sorted and
    cut to ``limit``."""
    from histmig.core.ids import unique_prefixes
    from histmig.toolkit.listing.select import check_sort, select
    check_sort(sort)
    everything = []
    loaded: dict = {}
    for ref in discover_all(homes, tools, use_index=use_index, loaded=loaded):
        everything.append(ref)
        if on_ref is not None:
            on_ref(ref)
    short = unique_prefixes(known_ids(homes, everything, tools, use_index=use_index, index=loaded.get("index")))
    chosen = select(filter_refs(everything, provider=provider, cwd=cwd, since=since), until=until, states=states,
                    sort=sort, reverse=reverse)
    if limit is not None and limit < 0:
        raise UsageError(f"--limit: a count of 0 or more, not {limit}")
    rows = chosen if limit is None else chosen[:limit]
    return Listing(rows, {r.id: short[r.id] for r in rows}, len(chosen))


def resolve(homes, spec: str, tools: Iterable[str] | None = None) -> SessionRef:
    """A session named by full id, unique id prefix, or path to its file."""
    p = Path(spec)
    if os.sep in spec or p.suffix in (".jsonl", ".zst", ".json"):
        target = p.resolve() if p.exists() else None
        if target is None:
            raise NotFoundError(f"no such file: {spec}")
        for r in discover_all(homes, tools):
            if Path(r.path).resolve() == target or Path(r.path).resolve().parent == target:
                return r
        raise NotFoundError(f"{spec} is not a session histmig knows (check --codex-home / --claude-home)")
    exact, prefix = [], []
    for r in discover_all(homes, tools):
        if r.id == spec:
            exact.append(r)
        elif r.id.startswith(spec):
            prefix.append(r)
    hits = exact or prefix
    if len(hits) == 1:
        return hits[0]
    if not hits:
        raise NotFoundError(f"no session matches {spec!r}")
    raise AmbiguousError(f"{spec!r} matches {len(hits)} sessions; give more of the id:",
                         [f"{r.format:<11} {r.id}  {r.path}" for r in hits])
