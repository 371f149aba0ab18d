"""``histmig search PATTERN``: full text over every tool's conversations (docs/search.md).

Sessions come from the catalog (the scan index answers for unchanged files), filtered as ``scan``
filters them, newest first. A tool with a ``search`` hook (histmig/toolkit/search.py) is read as raw
bytes and only the lines holding the query's needle are parsed (histmig/verbs/search/lines.py); any
other tool is read through its adapter, record by record. Each parsed record's text is matched on
its decoded text, so JSON escapes never hide a phrase. Reads only; never prints.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator

import orjson

from histmig.core.diagnostics import HistmigError, Warning
from histmig.core.ids import unique_prefixes
from histmig.core.model import Record, SessionRef, Text, ToolCall, ToolResult, given_path
from histmig.tools import adapter, hook
from histmig.tools.catalog import filter_refs, locate_all
from histmig.verbs.search.finder import Finder
from histmig.verbs.search.lines import candidate_lines, line_number
from histmig.verbs.search.query import Query

__all__ = ["Hit", "Query", "Search"]

SNIPPET = 160            # characters of a matching line shown around the first match
NAMED_MAX = 20           # broken lines / unreadable files named one by one; the rest counted
MIN_FORK = 32 << 20      # bytes to read under which no worker is forked (a fork costs more than it saves)


@dataclass
class Hit:
    """One line of a conversation's text that matches (several matches in it: several ``spans``)."""

    ref: SessionRef
    short: str                    # the session's short id, unique across all sessions of all tools
    role: str | None              # user, assistant, tool
    kind: str                     # text, tool_call, tool_result
    timestamp: str | None
    path: str                     # the file it is in (a sub-agent's file for a sub-agent's line)
    line: int | None              # the file's line number, when known (a JSONL file read through its adapter)
    offset: int | None            # the byte offset of its line, when known (a JSONL file read as bytes)
    snippet: str
    spans: list[tuple[int, int]] = field(default_factory=list)


class Search:
    """Iterate it for the hits, session by session; afterwards ``sessions`` (searched), ``matched``
    (sessions with a hit), ``hits``, ``broken`` (lines that did not parse) and ``warnings``."""

    def __init__(self, homes, query: Query, *, tools: Iterable[str] | None = None, cwd: str | None = None,
                 since: float | None = None, until: float | None = None, include_tools: bool = False,
                 files_only: bool = False, use_index: bool = True):
        self.homes, self.query = homes, query
        self.tools = tuple(tools) if tools else None
        self.filters = {"cwd": cwd, "since": since, "until": until}
        self.include_tools, self.files_only, self.use_index = include_tools, files_only, use_index
        self.sessions = self.matched = self.hits = self.broken = self.unreadable = 0
        self.warnings: list[Warning] = []
        self.sources: dict[str, Any] = {}         # tool -> its search hook (None: read through its adapter)
        self.pending: dict[int, Any] = {}         # id(ref) -> what fills its cwd and title (refs())
        self.finder = Finder(query.needle, query.ignore_case) if query.needle else None

    def refs(self) -> tuple[list[SessionRef], dict[str, str]]:
        """The sessions to search, newest first, and every session's short id (over all tools). A
        session's ``cwd`` and ``title`` may wait in ``self.pending`` until it matches (``locate_all``):
        ids, sizes and times are all the short ids, ``--since`` and ``--until`` need."""
        every, self.pending = [], {}
        for ref, complete in locate_all(self.homes, None, use_index=self.use_index):
            every.append(ref)
            if complete is not None:
                self.pending[id(ref)] = complete
        short = unique_prefixes([r.id for r in every])
        chosen = [r for r in every if self.tools is None or r.format in self.tools]
        if self.filters["cwd"] is not None:
            for ref in chosen:
                try:
                    self._complete(ref)
                except (HistmigError, OSError):
                    pass                       # no cwd: not kept, as the listing keeps no unreadable file

        chosen = list(filter_refs(chosen, **self.filters))
        chosen.sort(key=lambda r: r.updated or 0, reverse=True)
        return chosen, short

    def _complete(self, ref: SessionRef, first: list | None = None) -> None:
        complete = self.pending.pop(id(ref), None)
        if complete is not None:
            complete(ref, first[0] if first else None)

    def __iter__(self) -> Iterator[Hit]:
        refs, short = self.refs()
        todo = [r for r in refs if not r.error]
        # the files are read and searched on every CPU, each session's events replayed here in order
        # (histmig/core/forkmap.py fork_stream): output, counts and warnings as one process makes them
        from histmig.core.forkmap import fork_stream
        stream = iter(fork_stream(self._events, todo, [r.size or 0 for r in todo],
                                  min_weight=MIN_FORK))
        for ref in refs:
            if ref.error:                      # the listing could not read it either
                self._unreadable(ref, HistmigError(ref.error).describe(), None)
                continue
            self.sessions += 1
            found = False
            for ev in next(stream):
                kind = ev[0]
                if kind == "hit":
                    found = True
                    self.hits += 1
                    yield Hit(ref, short[ref.id], *ev[1:])
                    if self.files_only:
                        break
                elif kind == "broken":
                    self._broken(*ev[1:])
                elif kind == "fields":
                    self.pending.pop(id(ref), None)
                    for name, value in ev[1].items():
                        setattr(ref, name, value)
                else:
                    self._unreadable(ref, *ev[1:])
            self.matched += found
        # the stream's end: its worker is waited for (one dropped before it is killed: core/forkmap.py)
        next(stream, None)

    # ---- one session: its events, made here or in a worker ---------------------------------------

    def _events(self, ref: SessionRef) -> Iterator[tuple]:
        """``("hit", role, kind, timestamp, path, line, offset, snippet, spans)``, ``("broken", path,
        line, reason)``, ``("fields", {name: value})`` (the ``cwd`` and ``title`` completing the ref
        filled: before its first hit) and ``("unreadable", detail, line)`` (the last), in the order they happen."""
        found = False
        first: list = []                   # the session file's first block, once read
        try:
            for ev in self._session(ref, first):
                if ev[0] == "hit" and not found:
                    complete = self.pending.get(id(ref))
                    if complete is not None:
                        # what a hook's ``complete`` fills (histmig/toolkit/search.py), sent as is: a
                        # diff of every field cost more than the two
                        complete(ref, first[0] if first else None)
                        yield "fields", {"cwd": ref.cwd, "title": ref.title}
                    found = True
                yield ev
                if found and self.files_only:
                    return
        except (HistmigError, OSError) as e:
            yield ("unreadable", e.describe() if isinstance(e, HistmigError) else str(e), getattr(e, "line", None))

    def _session(self, ref: SessionRef, first: list | None = None) -> Iterator[tuple]:
        if ref.format not in self.sources:
            self.sources[ref.format] = hook(ref.format, "search")
        source = self.sources[ref.format]
        if source is not None:
            own = given_path(ref)
            for path in source.files(ref):
                is_own = path is own or os.fspath(path) == os.fspath(own)     # (the file ``first`` is of)
                for line in candidate_lines(path, self.finder, first if is_own else None):
                    for rec in source.records([line]):
                        yield from self._record(rec, path, line.offset if not line.number else None)
            return
        tool = adapter(ref.format)
        session = getattr(tool, "stream", tool.read)(ref)
        for part in (session, *session.subagents):
            for rec in part.records:
                yield from self._record(rec, part.path or ref.path)

    def _record(self, rec: Record, path: Any, offset: int | None = None) -> Iterator[tuple]:
        line = None if offset is not None else rec.line       # lines read as bytes are not counted
        if rec.opaque:
            if rec.opaque_reason != "blank line":
                yield ("broken", str(path), line or (line_number(path, offset) if offset is not None else None),
                       rec.opaque_reason)
            return
        for role, kind, text in texts(rec, self.include_tools):
            for snippet, spans in matches(self.query.matcher, text):
                yield "hit", role, kind, rec.timestamp, str(path), line, offset, snippet, spans

    def _broken(self, path: str, line: int | None, reason: str | None) -> None:
        self.broken += 1
        if self.broken <= NAMED_MAX:
            self.warnings.append(Warning("search-broken-line", f"a line that does not parse was skipped: {reason}",
                                         path, line))

    def _unreadable(self, ref: SessionRef, detail: str, line: int | None) -> None:
        self.unreadable += 1
        if self.unreadable <= NAMED_MAX:
            self.warnings.append(Warning("search-unreadable", f"the rest of this session was not searched: {detail}",
                                         str(ref.path), line))


# ---- text of a record, and its matching lines ----------------------------------------------

def texts(rec: Record, include_tools: bool) -> Iterator[tuple[str | None, str, str]]:
    """``(role, kind, text)`` of a record: what people wrote and read (user and assistant text, not
    the context a client injects), and with ``include_tools`` its tool calls and their output."""
    for p in rec.parts:
        if isinstance(p, Text):
            if not p.injected and rec.role in ("user", "assistant") and p.text:
                yield rec.role, "text", p.text
        elif include_tools and isinstance(p, ToolCall):
            args = p.arguments if isinstance(p.arguments, str) else orjson.dumps(p.arguments).decode()
            yield "assistant", "tool_call", f"{p.name} {args}"
        elif include_tools and isinstance(p, ToolResult):
            yield "tool", "tool_result", output_text(p.output)


def output_text(output: Any) -> str:
    if isinstance(output, str):
        return output
    if isinstance(output, list):
        return "\n".join(b["text"] for b in output if isinstance(b, dict) and isinstance(b.get("text"), str))
    return "" if output is None else orjson.dumps(output, default=str).decode()


def matches(matcher, text: str) -> Iterator[tuple[str, list[tuple[int, int]]]]:
    """One ``(snippet, spans)`` per line of ``text`` that matches: the line (cut to about
    :data:`SNIPPET` characters around its first match) and where the matches are in the snippet."""
    line_end = -1
    snippet_start = 0
    snippet, spans = "", []
    for m in matcher.finditer(text):
        if m.end() == m.start():
            continue                     # an empty match (a regex like ``x*``) marks nothing
        if m.start() >= line_end:
            if spans:
                yield snippet, spans
            line_start = text.rfind("\n", 0, m.start()) + 1
            line_end = text.find("\n", m.end())
            line_end = len(text) if line_end < 0 else line_end
            snippet_start = max(line_start, m.start() - SNIPPET // 3)
            stop = min(line_end, max(snippet_start + SNIPPET, m.end()))
            snippet, spans = text[snippet_start:stop], []
        a, b = m.start() - snippet_start, min(m.end(), snippet_start + len(snippet)) - snippet_start
        if a < len(snippet):
            spans.append((a, b))
    if spans:
        yield snippet, spans
