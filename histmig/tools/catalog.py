"""Finding sessions across every tool: discovery, filters, and resolving what the user typed. Beside the
tool table because it only walks the table (each tool's adapter discovers its own sessions); no verb."""
from __future__ import annotations

import os
import re
import time
from datetime import datetime
from pathlib import Path
from typing import Iterable, Iterator

from histmig.core.diagnostics import AmbiguousError, NotFoundError, UsageError
from histmig.core.model import SessionRef
from histmig.core.paths import is_under
from histmig.tools import adapter, adapters


def discover_all(homes, tools: Iterable[str] | None = None, *, use_index: bool = True) -> Iterator[SessionRef]:
    """Every session of the chosen tools (all by default), lazily, tool by tool. Adapters marked
    ``indexed`` list through the scan index in the state dir (histmig.core.scanindex; ``use_index=False``
    is ``scan --no-index``); it is saved when the listing ends, pruned of vanished files only after a
    complete listing of every tool."""
    chosen = [adapter(t) for t in tools] if tools else list(adapters())
    index = _open_index(homes) if use_index else None
    complete = False
    try:
        for a in chosen:
            if index is not None and getattr(a, "indexed", False):
                yield from a.discover(homes, index=index)
            else:
                yield from a.discover(homes)
        complete = not tools
    finally:
        if index is not None:
            index.save(keep=index.touched if complete else None)


def _open_index(homes):
    from histmig.core.scanindex import ScanIndex
    return ScanIndex.load(getattr(homes, "state", None))


def parse_since(text: str, *, now: float | None = None) -> float:
    """``7d``, ``12h``, ``30m`` or an ISO date/time → a Unix time."""
    now = time.time() if now is None else now
    m = re.fullmatch(r"(\d+)\s*([dhm])", text.strip())
    if m:
        return now - int(m.group(1)) * {"d": 86400, "h": 3600, "m": 60}[m.group(2)]
    try:
        dt = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(f"--since: not a date or a duration like 7d: {text!r}") from None
    if dt.tzinfo is None:
        dt = dt.astimezone()
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
