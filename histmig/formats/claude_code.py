"""Claude Code transcripts: ``<config>/projects/<slug>/<uuid>.jsonl`` (claude-code.md §1-§6).

Reading keeps every line's bytes. Adjacent assistant lines that share ``message.id`` (Claude writes
one line per content block) become one Record whose ``raw`` is the concatenation of those lines.
Sub-agent files (``<sid>/subagents/**/agent-*.jsonl``, 2.0-era ``agent-*.jsonl`` beside sessions)
are attached to their parent Session and are never listed as sessions themselves.

The block → Part mapping here is shared with mini-cc (same Anthropic Messages content blocks).
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Iterable, Iterator

import orjson

from histmig.diagnostics import HistmigError, Warning
from histmig.jsonl import Line, head_lines, read_lines, tail_lines
from histmig.model import (Attachment, Opaque, Part, Reasoning, Record, Session, SessionRef, Text,
                           ToolCall, ToolResult)
from histmig.paths import SLUG_MAX, claude_slug

NAME = "claude-code"
UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", re.I)
HEAD_TAIL = 64 * 1024                      # Claude's lite listing reads 64 KB at each end (Tr=65536)
CHAIN_TYPES = frozenset({"user", "assistant", "attachment", "system", "progress"})
SDK_ENTRYPOINTS = frozenset({"sdk-cli", "sdk-ts", "sdk-py"})
# context the client injects into user turns (reminders, slash-command echoes, hook output)
INJECTED_RE = re.compile(
    r"^\s*<(?:system-reminder|command-name|command-message|command-args|local-command-[\w-]+"
    r"|user-prompt-submit-hook|bash-input|bash-stdout|bash-stderr|task-notification)[\s>]"
    r"|^\[Request interrupted by user[^\]]*\]")
# the picker's "not a real prompt" test, verbatim from the client (claude-code.md §5.1)
NOT_PROMPT_RE = re.compile(r"^(?:\s*<[a-z][\w-]*[\s>]|\[Request interrupted by user[^\]]*\])")
_CWD_RAW_RE = re.compile(rb'(?<!\\)"cwd"\s*:\s*("(?:[^"\\]|\\.)*")')


# ---- content blocks → parts (shared with mini-cc) --------------------------------------------

def is_injected_text(text: str) -> bool:
    return bool(INJECTED_RE.match(text))


def block_to_part(block: Any, *, injected: bool = False, structured: Any = None) -> Part:
    """One Anthropic content block as a Part; unknown blocks become Opaque (raw keeps them)."""
    if not isinstance(block, dict):
        return Opaque(block, "not a content block")
    t = block.get("type")
    if t == "text" and isinstance(block.get("text"), str):
        return Text(block["text"], injected=injected or is_injected_text(block["text"]))
    if t == "thinking":
        return Reasoning(text=block.get("thinking") or "", signature=block.get("signature"))
    if t == "redacted_thinking":
        return Reasoning(redacted=True, encrypted=block.get("data"))
    if t == "tool_use":
        return ToolCall(str(block.get("id")), str(block.get("name")), block.get("input"))
    if t == "tool_result":
        return ToolResult(str(block.get("tool_use_id")), block.get("content"),
                          is_error=bool(block.get("is_error")), structured=structured)
    if t in ("image", "document"):
        source = block.get("source") if isinstance(block.get("source"), dict) else {}
        return Attachment(media_type=source.get("media_type"), data=block)
    return Opaque(block, f"{t} block")


def content_parts(content: Any, *, injected: bool = False, structured: Any = None) -> list[Part]:
    """Parts of a message ``content`` (a string or a list of blocks). ``structured`` (Claude's
    ``toolUseResult``) goes to the record's single tool_result, if there is exactly one."""
    if isinstance(content, str):
        return [Text(content, injected=injected or is_injected_text(content))]
    if not isinstance(content, list):
        return [] if content is None else [Opaque(content, "content is not a list")]
    results = sum(1 for b in content if isinstance(b, dict) and b.get("type") == "tool_result")
    keep = structured if results == 1 else None
    return [block_to_part(b, injected=injected, structured=keep) for b in content]


def kind_of(role: str | None, parts: list[Part]) -> str:
    if any(isinstance(p, ToolResult) for p in parts):
        return "tool_result"
    if any(isinstance(p, ToolCall) for p in parts):
        return "tool_call"
    if parts and all(isinstance(p, Reasoning) for p in parts):
        return "reasoning"
    return "message"


# ---- parts → content blocks (for records without raw) ----------------------------------------

def part_to_block(p: Part) -> dict:
    """The Anthropic block for a Part. A Reasoning without a genuine signature is never written as
    ``thinking`` (the API verifies signatures); converters report that loss themselves."""
    if isinstance(p, Text):
        return {"type": "text", "text": p.text}
    if isinstance(p, Reasoning):
        if p.signature:
            return {"type": "thinking", "thinking": p.text, "signature": p.signature}
        if p.redacted and p.encrypted:
            return {"type": "redacted_thinking", "data": p.encrypted}
        return {"type": "text", "text": p.text or p.summary}
    if isinstance(p, ToolCall):
        args = p.arguments if isinstance(p.arguments, dict) else {"input": p.arguments}
        return {"type": "tool_use", "id": p.call_id, "name": p.name, "input": args}
    if isinstance(p, ToolResult):
        block = {"type": "tool_result", "tool_use_id": p.call_id, "content": p.output}
        return {**block, "is_error": True} if p.is_error else block
    if isinstance(p, Attachment):
        if isinstance(p.data, dict):
            return p.data
        return {"type": "image", "source": {"type": "base64", "media_type": p.media_type, "data": p.data}}
    return p.data if isinstance(p.data, dict) else {"type": "text", "text": str(p.data)}


def parts_to_content(parts: list[Part], *, as_string: bool) -> Any:
    if as_string and len(parts) == 1 and isinstance(parts[0], Text):
        return parts[0].text
    return [part_to_block(p) for p in parts]


def message_skeleton(message: dict) -> dict:
    """The message without its content (kept in ``extra``); "" or [] marks the content's form."""
    return {k: (("" if isinstance(v, str) else []) if k == "content" else v) for k, v in message.items()}


def build_message(skeleton: dict | None, rec: Record) -> dict:
    msg = dict(skeleton) if skeleton else {"role": rec.role}
    msg["content"] = parts_to_content(rec.parts, as_string=isinstance(msg.get("content"), str))
    if rec.usage is not None and "usage" in msg:
        msg["usage"] = rec.usage
    return msg


# ---- lines → records --------------------------------------------------------------------------

NAMED_KEYS = ("parentUuid", "type", "message", "uuid", "timestamp")


def opaque_record(line: Line, reason: str) -> Record:
    extra = {} if line.raw is not None else {"offset": line.offset, "length": line.length}
    return Record(raw=line.raw, line=line.number, opaque_reason=reason, extra=extra)


def _message_id(obj: dict) -> str | None:
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
    role, kind = _role_kind(t, first, parts)
    if t == "system" and isinstance(first.get("content"), str):
        parts = [Text(first["content"], injected=True)]
    elif t == "summary" and isinstance(first.get("summary"), str):
        parts = [Text(first["summary"], injected=True)]
    last_msg = group[-1][1].get("message")
    usage = last_msg.get("usage") if isinstance(last_msg, dict) else None
    return Record(id=_str(first.get("uuid")), parent_id=_str(first.get("parentUuid")), kind=kind,
                  role=role, timestamp=_str(first.get("timestamp")), parts=parts,
                  usage=usage if isinstance(usage, dict) else None, extra=extra,
                  raw=b"".join(ln.raw for ln, _ in group), line=group[0][0].number,
                  lines=len(group), source_type=t if isinstance(t, str) else None)


def _role_kind(t: Any, obj: dict, parts: list[Part]) -> tuple[str | None, str]:
    if t in ("user", "assistant"):
        return t, kind_of(t, parts)
    if t == "system":
        return "system", "event"
    if t == "summary":
        return None, "summary"
    return None, "event"


def _str(v: Any) -> str | None:
    return v if isinstance(v, str) else None


def records_from_lines(lines: Iterable[Line]) -> Iterator[Record]:
    group: list[tuple[Line, dict]] = []
    group_id: str | None = None
    for line in lines:
        obj = None if line.blank else line.obj
        mid = _message_id(obj) if isinstance(obj, dict) else None
        if group and (mid is None or mid != group_id):
            yield record_from_group(group)
            group, group_id = [], None
        if line.blank:
            yield Record(raw=line.raw, line=line.number, source_type="blank")
        elif line.error is not None:
            yield opaque_record(line, line.error)
        elif not isinstance(obj, dict):
            yield opaque_record(line, "not a JSON object")
        elif mid is not None:
            group.append((line, obj))
            group_id = mid
        else:
            yield record_from_group([(line, obj)])
    if group:
        yield record_from_group(group)


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


def record_bytes(rec: Record, source: Path | None, encode=encode_record) -> bytes:
    """``raw`` verbatim; an over-limit opaque line copied from its source; else ``encode``."""
    if rec.raw is not None:
        return rec.raw
    if rec.opaque and "offset" in rec.extra:
        if source is None:
            raise HistmigError("an over-limit line cannot be written without its source file")
        with open(source, "rb") as fh:
            fh.seek(rec.extra["offset"])
            return fh.read(rec.extra["length"])
    return encode(rec)


def serialize(session: Session) -> bytes:
    return b"".join(record_bytes(r, session.path) for r in session.records)


# ---- titles and summaries ---------------------------------------------------------------------

def first_prompt(records: Iterable[Record]) -> str | None:
    """The first real user prompt, skipping what the picker skips (isMeta, tool results,
    ``<command-name>`` echoes, reminders, "[Request interrupted by user]")."""
    for r in records:
        if r.role != "user" or r.opaque or r.extra.get("isMeta") or r.kind == "tool_result":
            continue
        for p in r.parts:
            if isinstance(p, Text) and p.text.strip() and not NOT_PROMPT_RE.match(p.text):
                return p.text.strip()
    return None


def named_title(records: Iterable[Record]) -> str | None:
    """The last ``custom-title``, else the last ``ai-title``."""
    custom = ai = None
    for r in records:
        if r.source_type == "custom-title" and isinstance(r.extra.get("customTitle"), str):
            custom = r.extra["customTitle"]
        elif r.source_type == "ai-title" and isinstance(r.extra.get("aiTitle"), str):
            ai = r.extra["aiTitle"]
    return custom or ai


def first_value(records: Iterable[Record], key: str) -> Any:
    for r in records:
        if isinstance(r.extra.get(key), str):
            return r.extra[key]
    return None


def count_messages(records: Iterable[Record]) -> int:
    """User and assistant messages (an assistant turn split over lines counts once)."""
    return sum(1 for r in records if r.role in ("user", "assistant") and not r.opaque)


def broken_warnings(records: Iterable[Record], path: Path | None) -> list[Warning]:
    out = []
    for r in records:
        if r.opaque:
            out.append(Warning("broken-line", f"kept as is: {r.opaque_reason}",
                               str(path) if path else None, r.line))
    return out
