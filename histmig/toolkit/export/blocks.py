"""What every export format walks: the visible records of a session, its title and its header facts.

One walk for Markdown, HTML and ATIF, so the three show the same messages (docs/export.md)."""
from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Callable, Iterator

import orjson

from histmig.core.model import Record, Session, Text, ToolResult
from histmig.core.times import iso_z, parse_ts


@dataclass
class Meta:
    """The header of an exported session: what the listing knew, completed from the records."""

    tool: str
    id: str
    title: str
    cwd: str | None = None
    created: str | None = None      # ISO time the session started
    updated: str | None = None      # ISO time of its file's last change
    provider: str | None = None
    model: str | None = None


def iso(ts: Any) -> str | None:
    """A record or listing time in histmig's one form, ISO 8601 UTC with milliseconds (docs/json.md):
    numbers are Unix seconds (milliseconds when too large to be seconds); text that is no time is None."""
    if ts is None or ts == "" or isinstance(ts, bool):
        return None
    if isinstance(ts, (int, float)):
        return iso_z(datetime.fromtimestamp(ts / 1000 if ts > 1e11 else ts, timezone.utc))
    t = parse_ts(str(ts))
    return iso_z(t) if t is not None else None


def only_injected(rec: Record) -> bool:
    return bool(rec.parts) and all(isinstance(p, Text) and p.injected for p in rec.parts)


def visible(rec: Record, injected: bool = False) -> bool:
    """A conversation record worth showing: not an event, not an unreadable line, not only context the
    client injected (environment, instructions) unless ``injected``."""
    return (not rec.opaque and rec.kind in ("message", "tool_call", "tool_result", "reasoning", "summary")
            and (injected or not only_injected(rec)))


def role_of(rec: Record) -> str:
    """The header a record goes under: tool results (a Claude ``user`` line of ``tool_result`` blocks
    included) go under ``tool``."""
    if rec.parts and all(isinstance(p, ToolResult) for p in rec.parts):
        return "tool"
    return rec.role or rec.kind


def first_prompt(session: Session) -> str | None:
    """The first typed user text, read only as far as it is found."""
    for rec in session.records:
        if rec.role == "user" and not rec.opaque:
            for p in rec.parts:
                if isinstance(p, Text) and not p.injected and p.text.strip():
                    return p.text.strip()
    return None


def title_of(session: Session, fallback: str | None = None) -> str:
    """The session's own title, else the listing's, else the first user prompt; one line, 120 chars."""
    raw = session.title or fallback or first_prompt(session) or f"{session.format} session {session.id}"
    line = " ".join(raw.split())
    return line if len(line) <= 120 else line[:119] + "…"


def meta_of(session: Session, ref: Any = None) -> Meta:
    return Meta(tool=session.format, id=session.id, title=title_of(session, getattr(ref, "title", None)),
                cwd=session.cwd or getattr(ref, "cwd", None),
                created=iso(session.created) or iso(getattr(ref, "created", None)),
                updated=iso(session.updated) or iso(getattr(ref, "updated", None)),
                provider=session.provider or getattr(ref, "provider", None), model=session.model)


def args_text(value: Any) -> str:
    """Tool call arguments as text: free-form input as is, JSON pretty-printed."""
    if isinstance(value, str):
        return value
    return orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS).decode()


def output_text(output: Any) -> str:
    """A tool result as text: content blocks joined (non-text blocks named), other values as JSON."""
    if isinstance(output, str):
        return output
    if isinstance(output, list):
        return "\n".join(b.get("text", "[" + str(b.get("type")) + "]") if isinstance(b, dict) else str(b)
                         for b in output)
    return "" if output is None else args_text(output)


def safe_name(session_id: str) -> str:
    """A file name for a session id (ids are UUIDs for most tools; anything else is made safe)."""
    name = re.sub(r"[^A-Za-z0-9._-]", "_", session_id).lstrip(".")
    return name[:120] or "session"


def turns(session: Session, injected: bool = False) -> Iterator[Record]:
    """The visible records, in order, streamed."""
    for rec in session.records:
        if visible(rec, injected):
            yield rec


def rendered_turns(session: Session, injected: bool, render: Callable[[Any], str | None]
                   ) -> Iterator[tuple[Record, list[str], str | None]]:
    """Each shown record with its parts rendered (``render`` None: a part not shown; a record with no
    shown part is skipped) and its speaker when the speaker changes there (else None): the walk the
    Markdown and HTML pages share."""
    role = None
    for rec in turns(session, injected):
        pieces = [s for s in map(render, rec.parts) if s is not None]
        if not pieces:
            continue
        who = role_of(rec)
        yield rec, pieces, (who if who != role else None)
        role = who


def injected_count(session: Session) -> int:
    return sum(1 for r in session.records if not r.opaque and only_injected(r))
