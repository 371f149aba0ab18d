"""``scan --by cwd|month|tool|provider``: sessions, messages, size, last use and tools per group, and the
month x tool counts behind the chart (docs/scan-show.md, "Grouped")."""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Iterable

from histmig.core.diagnostics import UsageError
from histmig.core.model import SessionRef

BY = ("cwd", "month", "tool", "provider")
EIGHTHS = " ▏▎▍▌▋▊▉█"
MAX_SPAN = 120                                  # months the chart fills in between


@dataclass
class Group:
    key: str
    sessions: int = 0
    messages: int = 0
    size: int = 0
    last_used: float | None = None
    tools: dict[str, int] = field(default_factory=dict)     # tool -> sessions, in listing order

    def add(self, r: SessionRef) -> None:
        self.sessions += 1
        self.messages += r.messages or 0
        self.size += r.size
        if r.updated and (self.last_used is None or r.updated > self.last_used):
            self.last_used = r.updated
        self.tools[r.format] = self.tools.get(r.format, 0) + 1


def month_of(ts: float | None) -> str:
    """The local month a session was last updated in (``2026-12``), ``-`` when unknown."""
    return datetime.fromtimestamp(ts).strftime("%Y-%m") if ts else "-"


def key_of(r: SessionRef, by: str) -> str:
    if by == "cwd":
        return r.cwd or "-"
    if by == "month":
        return month_of(r.updated)
    if by == "tool":
        return r.format
    return r.provider or "-"


# group order per --sort (the default: months newest first, other groups most sessions first)
_ORDER = {"updated": (lambda g: g.last_used or 0, True), "created": (lambda g: g.last_used or 0, True),
          "size": (lambda g: g.size, True), "msgs": (lambda g: g.messages, True), "cwd": (lambda g: g.key, False),
          "sessions": (lambda g: g.sessions, True), "month": (lambda g: g.key, True)}


def group(refs: Iterable[SessionRef], by: str, *, sort: str | None = None, reverse: bool = False,
          limit: int | None = None) -> list[Group]:
    """One :class:`Group` per distinct key; ``sort`` takes scan's sort names (``cwd``: by key)."""
    if by not in BY:
        raise UsageError(f"--by: one of {', '.join(BY)}, not {by!r}")
    groups: dict[str, Group] = {}
    for r in refs:
        k = key_of(r, by)
        groups.setdefault(k, Group(k)).add(r)
    key, descending = _ORDER[sort or ("month" if by == "month" else "sessions")]
    for g in groups.values():                                    # most sessions first, then by name
        g.tools = dict(sorted(g.tools.items(), key=lambda kv: (-kv[1], kv[0])))
    out = sorted(groups.values(), key=lambda g: g.key)            # ties: alphabetical
    out.sort(key=key, reverse=descending)
    if reverse:
        out.reverse()
    return out if limit is None else out[:limit]


def bar(value: int, top: int, cells: int) -> str:
    """``value`` of ``top`` as a bar of up to ``cells`` cells in eighth blocks; a non-zero value shows
    at least a sliver, so an empty month (a cleanup hole) is told from a small one."""
    if value <= 0 or top <= 0 or cells <= 0:
        return ""
    eighths = max(1, round(value * cells * 8 / top))
    return "█" * (eighths // 8) + (EIGHTHS[eighths % 8] if eighths % 8 else "")


@dataclass
class Chart:
    months: list[str]                       # newest first, every month between the first and the last
    tools: list[str]                        # tools with any session, in table order
    counts: dict[tuple[str, str], int]      # (month, tool) -> sessions
    top: int                                # the largest cell


def month_chart(refs: Iterable[SessionRef], tool_order: Iterable[str] = ()) -> Chart:
    """Sessions per month and tool. Months with no session between the first and the last are kept
    (empty rows are the point: a cleanup hole shows)."""
    counts: dict[tuple[str, str], int] = {}
    seen_tools: set[str] = set()
    for r in refs:
        k = (month_of(r.updated), r.format)
        counts[k] = counts.get(k, 0) + 1
        seen_tools.add(r.format)
    known = [m for m, _ in counts if m != "-"]
    months = _months_between(min(known), max(known)) if known else []
    if len(months) > MAX_SPAN:                  # a stray 1970 mtime: only the months with sessions
        months = sorted(set(known), reverse=True)
    if any(m == "-" for m, _ in counts):
        months.append("-")
    order = list(tool_order)
    tools = [t for t in order if t in seen_tools] + sorted(seen_tools - set(order))
    return Chart(months, tools, counts, max(counts.values(), default=0))


def _months_between(first: str, last: str) -> list[str]:
    y, m = map(int, last.split("-"))
    out = []
    while f"{y:04d}-{m:02d}" >= first:
        out.append(f"{y:04d}-{m:02d}")
        y, m = (y, m - 1) if m > 1 else (y - 1, 12)
    return out
