"""Which sessions a ``convert`` run takes: named ones (id, id prefix or path), ``--from TOOL
[--cwd PATH]``, or ``--all``. Discovery is the adapters' own (lazy, head-only); without ``--cwd``
nothing needs to be listed, so the files are taken as they are found (:func:`files`)."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Iterator

from histmig import tools as registry
from histmig.core.diagnostics import AmbiguousError, NotFoundError, UsageError
from histmig.core.model import SessionRef
from histmig.core.paths import is_under


def tools_for(from_tool: str | None, target: str) -> list[str]:
    if from_tool:
        registry.adapter(from_tool)          # raises UsageError for an unknown name
        return [from_tool]
    return [a.name for a in registry.adapters() if a.name != target]


def discover(homes: Any, tools: list[str]) -> Iterator[SessionRef]:
    for name in tools:
        yield from registry.adapter(name).discover(homes)


def files(homes: Any, tools: list[str]) -> Iterator[SessionRef]:
    """:func:`discover`'s sessions, each tool's as its files alone where its adapter can (``paths``:
    ``PathRef``s, nothing read; the conversion reads each session once and asks the adapter's
    ``listed`` only where the read leaves something to the listing); a tool without ``paths`` is
    listed by ``discover``."""
    for name in tools:
        adapter = registry.adapter(name)
        yield from getattr(adapter, "paths", adapter.discover)(homes)


def by_cwd(refs: Iterator[SessionRef], cwd: str) -> Iterator[SessionRef]:
    want = {os.path.normpath(cwd), os.path.realpath(cwd)}
    for ref in refs:
        if ref.cwd and any(is_under(os.path.normpath(ref.cwd), w) or is_under(os.path.realpath(ref.cwd), w)
                           for w in want):
            yield ref


def resolve(homes: Any, names: list[str], tools: list[str]) -> list[SessionRef]:
    """Named sessions: a path to a session file/folder, a full id, or a unique id prefix."""
    out: list[SessionRef] = []
    pending = []
    for name in names:
        ref = _by_path(name, tools)
        if ref is not None:
            out.append(ref)
        else:
            pending.append(name)
    if pending:
        refs = list(discover(homes, tools))
        for name in pending:
            out.append(_by_id(name, refs))
    return out


def _by_path(name: str, tools: list[str]) -> SessionRef | None:
    p = Path(name)
    if not (os.sep in name or name.endswith((".jsonl", ".zst"))) or not p.exists():
        return None
    for tool in tools:
        adapter = registry.adapter(tool)
        target = p / "transcript.jsonl" if p.is_dir() else p
        if adapter.detect(target if target.exists() else p):
            session = getattr(adapter, "stream", adapter.read)(p)     # bounded memory: a big file too
            return SessionRef(tool, session.id, Path(p), cwd=session.cwd)
    raise UsageError(f"{name}: not a session file of {', '.join(tools)}")


def _by_id(name: str, refs: list[SessionRef]) -> SessionRef:
    exact = [r for r in refs if r.id == name]
    if len(exact) == 1:
        return exact[0]
    hits = exact or [r for r in refs if r.id.startswith(name)]
    if not hits:
        raise NotFoundError(f"no session matches {name!r}")
    if len(hits) > 1:
        raise AmbiguousError(f"{name!r} matches {len(hits)} sessions", [f"{r.format} {r.id} {r.path}" for r in hits])
    return hits[0]
