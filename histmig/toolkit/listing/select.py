"""Which sessions a listing shows and in which order: ``--until``, ``--state``, ``--sort``,
``--reverse``, ``--limit`` (docs/scan-show.md). The tool, provider, cwd and since filters stay in
histmig/tools/catalog.py, where ``show``'s look-up shares them."""
from __future__ import annotations

from typing import Callable, Iterable

from histmig.core.diagnostics import UsageError
from histmig.core.model import SessionRef
from histmig.core.times import parse_ts

# sort key -> (key of a ref, biggest/newest first by default). Missing values sort last either way.
SORTS: dict[str, tuple[Callable[[SessionRef], object], bool]] = {
    "updated": (lambda r: r.updated, True),
    "created": (lambda r: _created(r), True),
    "size": (lambda r: r.size, True),
    "msgs": (lambda r: r.messages, True),
    "cwd": (lambda r: r.cwd, False),
}


def _created(r: SessionRef) -> float | None:
    t = parse_ts(r.created)
    return t.timestamp() if t is not None else None


def state_matches(r: SessionRef, wanted: str) -> bool:
    """``--state WORD``: ``ok`` (nothing to say), ``live`` (not archived), ``error``, ``hidden`` (not in the
    tool's picker), or a word of one of its states (``archived``, ``compressed``, ``broken``, ...)."""
    w = wanted.strip().lower()
    if w == "ok":
        return r.state_text() == "ok"
    if w == "live":
        return not r.archived
    if w == "error":
        return bool(r.error)
    if w == "hidden":
        w = "not in picker"
    return any(w in s.lower() for s in r.state)


def check_sort(key: str) -> str:
    if key not in SORTS:
        raise UsageError(f"--sort: one of {', '.join(SORTS)}, not {key!r}")
    return key


def select(refs: Iterable[SessionRef], *, until: float | None = None, states: Iterable[str] = (),
           sort: str = "updated", reverse: bool = False, limit: int | None = None) -> list[SessionRef]:
    """The sessions to show, in order. The default (newest update first, ties in listing order) is the
    order scan always had."""
    states = [s for s in states if s]
    rows = [r for r in refs if (until is None or (r.updated or 0) <= until)
            and (not states or any(state_matches(r, s) for s in states))]
    key, descending = SORTS[check_sort(sort)]
    present = [r for r in rows if key(r) is not None]
    missing = [r for r in rows if key(r) is None]
    present.sort(key=key, reverse=descending)
    ordered = present + missing
    if reverse:
        ordered.reverse()
    if limit is not None:
        if limit < 0:
            raise UsageError(f"--limit: a count of 0 or more, not {limit}")
        ordered = ordered[:limit]
    return ordered
