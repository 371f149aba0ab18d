"""Claude Code transcript lines ↔ Records (docs/specs/claude-code.md §3-§4).

Adjacent assistant lines that share ``message.id`` (Claude writes one line per content block)
become one Record whose ``raw`` is the concatenation of those lines, so the split is kept byte for
byte while the conversation sees one assistant turn.
"""
from __future__ import annotations

from typing import Any, Iterable, Iterator

import orjson

from histmig.tools.claude_family.blocks import (build_message, content_parts, first_prompt, kind_of,
                                       message_skeleton, record_bytes, str_or_none, unparsed_record)
from histmig.jsonio.jsonl import Line
from histmig.core.model import Part, Record, Session, Text, ToolResult

CHAIN_TYPES = frozenset({"user", "assistant", "attachment", "system", "progress"})
# The record types the client writes besides the chain, by name (docs/specs/claude-code.md §3.1). All are
# kept byte for byte; naming them lets ``type_counts`` (and a test over real recordings) tell a new
# client's additions from damage.
METADATA_TYPES = frozenset({
    "summary", "custom-title", "ai-title", "last-prompt", "tag", "agent-name", "agent-color", "agent-setting",
    "pr-link", "file-history-snapshot", "attribution-snapshot", "speculation-accept", "mode", "permission-mode",
    "worktree-state", "queue-operation", "marble-origami-commit", "marble-origami-snapshot",
    "content-replacement", "relocated", "checkpoint"})
# The client's own bookkeeping, no part of the conversation: 2.1.265 adds ``atis-latch``; 2.1.332 adds
# copies of each API request (``api-request-shape`` once per request shape, ``api-request-blob`` once per
# message, ``api-request`` per call), the running cost (``cost-state``) and ``tools-used``.
CLIENT_STATE_TYPES = frozenset({"atis-latch", "api-request-shape", "api-request-blob", "api-request",
                                "cost-state", "tools-used"})
# ``attachment`` records' ``attachment.type``: 2.1.197 writes the first two; 2.1.332 adds seven (the
# ``environment`` one holds the cwd: tools/claude_code/move.py moves it) and ``auto_mode`` (interactive).
ATTACHMENT_TYPES = frozenset({"skill_listing", "agent_listing_delta",
                              "environment", "model", "deferred_tools_delta", "session_context", "date",
                              "remote_session_change", "prompt_snapshot", "auto_mode",
                              "total_tokens_reminder"})  # 2.1.265
NAMED_KEYS = ("parentUuid", "type", "message", "uuid", "timestamp")


# ---- lines → records --------------------------------------------------------------------------

def message_id(obj: dict) -> str | None:
    msg = obj.get("message")
    if obj.get("type") == "assistant" and isinstance(msg, dict) and isinstance(msg.get("id"), str):
        return msg["id"]
    return None


def record_from_group(group: list[tuple[Line, dict]]) -> Record:
    """One Record from one line, or from adjacent assistant lines sharing ``message.id``."""
    first = group[0][1]
    t = first.get("type")
    msg = first.get("message") if isinstance(first.get("message"), dict) else None
    injected = bool(first.get("isMeta"))
    parts: list[Part] = []
    for _, obj in group:
        m = obj.get("message") if isinstance(obj.get("message"), dict) else None
        if m is not None:
            parts += content_parts(m.get("content"), injected=injected, structured=obj.get("toolUseResult"))
    extra = {k: v for k, v in first.items() if k not in NAMED_KEYS}
    if msg is not None:
        extra["message"] = message_skeleton(msg)
    role, kind = _role_kind(t, parts)
    if t == "system" and isinstance(first.get("content"), str):
        parts = [Text(first["content"], injected=True)]
    elif t == "summary" and isinstance(first.get("summary"), str):
        parts = [Text(first["summary"], injected=True)]
    last_msg = group[-1][1].get("message")
    usage = last_msg.get("usage") if isinstance(last_msg, dict) else None
    return Record(id=str_or_none(first.get("uuid")), parent_id=str_or_none(first.get("parentUuid")),
                  kind=kind, role=role, timestamp=str_or_none(first.get("timestamp")), parts=parts,
                  usage=usage if isinstance(usage, dict) else None, extra=extra,
                  raw=b"".join(ln.raw for ln, _ in group), line=group[0][0].number,
                  lines=len(group), source_type=t if isinstance(t, str) else None)


def _role_kind(t: Any, parts: list[Part]) -> tuple[str | None, str]:
    if t in ("user", "assistant"):
        return t, kind_of(t, parts)
    return role_of(t), "summary" if t == "summary" else "event"


def role_of(t: Any) -> str | None:
    """The Record's role for a line of type ``t`` (what ``_role_kind`` gives)."""
    return t if t in ("user", "assistant", "system") else None


def line_groups(lines: Iterable[Line]) -> Iterator[Record | list[tuple[Line, dict]]]:
    """What each Record of ``records_from_lines`` is made of, before it is built: the Record of a blank
    or broken line, or the ``(line, object)`` pairs of one record (one line, or adjacent assistant
    lines sharing ``message.id``). A listing reads a few keys of the groups without building them
    (claude_code/listing.py ``ListedRecord``)."""
    group: list[tuple[Line, dict]] = []
    group_id: str | None = None
    for line in lines:
        obj = None if line.blank else line.obj
        mid = message_id(obj) if isinstance(obj, dict) else None
        if group and (mid is None or mid != group_id):
            yield group
            group, group_id = [], None
        unparsed = unparsed_record(line)
        if unparsed is not None:
            yield unparsed
        elif mid is not None:
            group.append((line, obj))
            group_id = mid
        else:
            yield [(line, obj)]
    if group:
        yield group


def records_from_lines(lines: Iterable[Line]) -> Iterator[Record]:
    for unit in line_groups(lines):
        yield unit if isinstance(unit, Record) else record_from_group(unit)


# ---- records → bytes --------------------------------------------------------------------------

def encode_record(rec: Record) -> bytes:
    """A changed or new record as one compact line in Claude 2.1 key order: ``parentUuid`` first
    and ``uuid``/``timestamp`` adjacent (its >5 MB fast reader depends on both, §4.4); metadata
    records start with ``type`` (readers match ``{"type":"custom-title"`` at line start)."""
    extra = dict(rec.extra)
    obj: dict[str, Any] = {}
    chain = rec.source_type in CHAIN_TYPES or rec.role in ("user", "assistant")
    if chain:
        obj["parentUuid"] = rec.parent_id
        for key in ("isSidechain", "promptId", "agentId"):
            if key in extra:
                obj[key] = extra.pop(key)
    obj["type"] = rec.source_type or rec.role
    skeleton = extra.pop("message", None)
    if rec.role in ("user", "assistant"):
        obj["message"] = build_message(skeleton, rec)
        results = [p for p in rec.parts if isinstance(p, ToolResult) and p.structured is not None]
        if len(results) == 1 and "toolUseResult" not in extra:
            extra["toolUseResult"] = results[0].structured
    elif skeleton is not None:
        obj["message"] = build_message(skeleton, rec)
    if rec.id is not None:
        obj["uuid"] = rec.id
    if rec.timestamp is not None:
        obj["timestamp"] = rec.timestamp
    obj.update(extra)
    return orjson.dumps(obj) + b"\n"


def serialize(session: Session) -> bytes:
    return b"".join(record_bytes(r, session.path, encode_record) for r in session.records)


# ---- record types ------------------------------------------------------------------------------

def type_name(rec: Record) -> str:
    """The record's type as counted: ``attachment/<type>`` for attachments, ``unreadable`` for a line
    that did not parse, ``unknown:<type>`` for a type no table above names."""
    t = rec.source_type
    if rec.opaque:
        return "unreadable"
    if t == "attachment":
        att = rec.extra.get("attachment")
        sub = att.get("type") if isinstance(att, dict) else None
        return f"attachment/{sub}" if sub in ATTACHMENT_TYPES else f"unknown:attachment/{sub}"
    if t in CHAIN_TYPES or t in METADATA_TYPES or t in CLIENT_STATE_TYPES or t == "blank":
        return t
    return f"unknown:{t}"


def type_counts(records: Iterable[Record]) -> dict[str, int]:
    """How many records of each type (:func:`type_name`), in first-seen order; one pass, so a
    ``RecordStream`` is read once."""
    counts: dict[str, int] = {}
    for r in records:
        name = type_name(r)
        counts[name] = counts.get(name, 0) + 1
    return counts


# ---- titles and counts ------------------------------------------------------------------------

def named_title(records: Iterable[Record]) -> str | None:
    """The last ``custom-title``, else the last ``ai-title``."""
    custom = ai = None
    for r in records:
        if r.source_type == "custom-title" and isinstance(r.extra.get("customTitle"), str):
            custom = r.extra["customTitle"]
        elif r.source_type == "ai-title" and isinstance(r.extra.get("aiTitle"), str):
            ai = r.extra["aiTitle"]
    return custom or ai


def last_prompt(records: Iterable[Record]) -> str | None:
    """The last ``last-prompt`` record's text: the title of last resort."""
    prompts = [r.extra["lastPrompt"] for r in records
               if r.source_type == "last-prompt" and isinstance(r.extra.get("lastPrompt"), str)]
    return prompts[-1] if prompts else None


def title_of(records: list[Record], head: list[Record] | None = None) -> str | None:
    """What the picker shows: a custom or AI title, else the first real prompt (looked for in
    ``head`` when ``records`` are only a file's two ends), else the ``last-prompt`` record."""
    return named_title(records) or first_prompt(records if head is None else head) or last_prompt(records)


def count_messages(records: Iterable[Record]) -> int:
    """User and assistant messages (an assistant turn split over lines counts once)."""
    return sum(1 for r in records if r.role in ("user", "assistant") and not r.opaque)
