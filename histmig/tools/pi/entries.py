"""Pi's session entries as Records, and back (docs/pi.md; the client ships its own session-format document).

Line 1 is the header ``{"type":"session","version":3,"id":<uuidv7>,"timestamp","cwd"[,"parentSession"]}``.
Every other line is an entry ``{type,id (8 hex),parentId,timestamp,...}``: the entries form a tree and the
last one is the leaf. ``message`` entries wrap ``message.role`` ``user`` / ``assistant`` / ``toolResult``
(also ``bashExecution``, ``custom``, ``branchSummary``, ``compactionSummary``); ``compaction`` and
``branch_summary`` entries carry a summary. Every line keeps its bytes (``raw``); an unknown line is read
as an event.
"""
from __future__ import annotations

from typing import Any, Iterable, Iterator

import orjson

from histmig.core.diagnostics import Warning
from histmig.core.model import Attachment, Opaque, Part, Reasoning, Record, Text, ToolCall, ToolResult
from histmig.jsonio.jsonl import Line

PROVENANCE = "histmig-provenance"
ENVELOPE = frozenset({"type", "id", "parentId", "timestamp", "message"})
MESSAGE_NAMED = frozenset({"role", "content", "usage"})


def _str(v: Any) -> str | None:
    return v if isinstance(v, str) else None


def block_part(block: Any) -> Part:
    """One Pi content block as a Part; an unknown block is Opaque (the line's bytes keep it)."""
    if not isinstance(block, dict):
        return Opaque(block, "not a content block")
    t = block.get("type")
    if t == "text" and isinstance(block.get("text"), str):
        return Text(block["text"])
    if t == "thinking":
        return Reasoning(text=block.get("thinking") or "", signature=_str(block.get("thinkingSignature")),
                         redacted=bool(block.get("redacted")))
    if t == "toolCall":
        return ToolCall(str(block.get("id")), str(block.get("name")), block.get("arguments"))
    if t == "image":
        return Attachment(media_type=_str(block.get("mimeType")), data=block)
    return Opaque(block, f"{t} block")


def content_parts(content: Any) -> list[Part]:
    if isinstance(content, str):
        return [Text(content)]
    if isinstance(content, list):
        return [block_part(b) for b in content]
    return []


def message_record(line: Line, obj: dict, msg: dict) -> Record:
    role = msg.get("role")
    extra = {k: v for k, v in obj.items() if k not in ENVELOPE}
    extra["message"] = {k: v for k, v in msg.items() if k not in MESSAGE_NAMED}
    base = dict(id=_str(obj.get("id")), parent_id=_str(obj.get("parentId")), timestamp=_str(obj.get("timestamp")),
                extra=extra, raw=line.raw, line=line.number, source_type=f"message/{role}")
    if role == "user":
        return Record(kind="message", role="user", parts=content_parts(msg.get("content")), **base)
    if role == "assistant":
        parts = content_parts(msg.get("content"))
        kind = "tool_call" if any(isinstance(p, ToolCall) for p in parts) else (
            "reasoning" if parts and all(isinstance(p, Reasoning) for p in parts) else "message")
        usage = msg.get("usage")
        return Record(kind=kind, role="assistant", parts=parts, usage=usage if isinstance(usage, dict) else None,
                      **base)
    if role == "toolResult":
        result = ToolResult(str(msg.get("toolCallId")), msg.get("content"), is_error=bool(msg.get("isError")),
                            structured=msg.get("details"))
        return Record(kind="tool_result", role="tool", parts=[result], **base)
    if role in ("branchSummary", "compactionSummary") and isinstance(msg.get("summary"), str):
        return Record(kind="summary", role="user", parts=[Text(msg["summary"], injected=True)], **base)
    # bashExecution, custom: kept, shown as events (their content is not a model turn of its own)
    return Record(kind="event", parts=content_parts(msg.get("content")), **base)


def record_from_obj(line: Line, obj: dict) -> Record:
    t = obj.get("type")
    msg = obj.get("message")
    if t == "message" and isinstance(msg, dict):
        return message_record(line, obj, msg)
    extra = {k: v for k, v in obj.items() if k not in ENVELOPE}
    parts: list[Part] = []
    kind = "event"
    if t in ("compaction", "branch_summary") and isinstance(obj.get("summary"), str):
        kind, parts = "summary", [Text(obj["summary"], injected=True)]
    if t == "custom" and obj.get("customType") == PROVENANCE:
        t = PROVENANCE           # histmig's own marker entry (histmig/tools/pi/provenance.py)
    return Record(id=_str(obj.get("id")), parent_id=_str(obj.get("parentId")), kind=kind,
                  timestamp=_str(obj.get("timestamp")), parts=parts, extra=extra, raw=line.raw,
                  line=line.number, source_type=t if isinstance(t, str) else None)


def records_from_lines(lines: Iterable[Line]) -> Iterator[Record]:
    """One Record per line; blank and broken lines are kept as bytes (counted, never dropped)."""
    for line in lines:
        if line.blank:
            yield Record(raw=line.raw, line=line.number, source_type="blank")
        elif line.error is not None or not isinstance(line.obj, dict):
            extra = {} if line.raw is not None else {"offset": line.offset, "length": line.length}
            yield Record(raw=line.raw, line=line.number, extra=extra,
                         opaque_reason=line.error or "not a JSON object")
        else:
            yield record_from_obj(line, line.obj)


def broken_warnings(records: Iterable[Record], path: Any) -> list[Warning]:
    return [Warning("broken-line", f"kept as is: {r.opaque_reason}", str(path) if path else None, r.line)
            for r in records if r.opaque]


# ---- records → bytes ------------------------------------------------------------------------

def part_block(p: Part) -> Any:
    if isinstance(p, Text):
        return {"type": "text", "text": p.text}
    if isinstance(p, Reasoning):
        block = {"type": "thinking", "thinking": p.text or p.summary}
        if p.signature:
            block["thinkingSignature"] = p.signature
        return block
    if isinstance(p, ToolCall):
        return {"type": "toolCall", "id": p.call_id, "name": p.name, "arguments": p.arguments}
    if isinstance(p, Attachment) and isinstance(p.data, dict):
        return p.data
    return p.data if isinstance(p, Opaque) else None


def encode_record(rec: Record) -> bytes:
    """A changed or new record in Pi's key order (``JSON.stringify``: compact)."""
    extra = dict(rec.extra)
    if rec.source_type == "session":
        obj: dict[str, Any] = {"type": "session", **{k: extra.pop(k) for k in ("version",) if k in extra},
                               "id": rec.id, "timestamp": rec.timestamp}
        obj.update(extra)
        return orjson.dumps(obj) + b"\n"
    skeleton = extra.pop("message", None)
    kind = "custom" if rec.source_type == PROVENANCE else (rec.source_type or "custom")
    obj = {"type": "message" if skeleton is not None else kind, "id": rec.id,
           "parentId": rec.parent_id, "timestamp": rec.timestamp}
    obj.update(extra)
    if skeleton is not None:
        msg = {"role": skeleton.get("role")}
        if rec.role == "tool" and rec.parts and isinstance(rec.parts[0], ToolResult):
            res = rec.parts[0]
            msg.update(skeleton)
            msg["content"] = res.output
        else:
            msg["content"] = [b for b in (part_block(p) for p in rec.parts) if b is not None]
            msg.update({k: v for k, v in skeleton.items() if k != "role"})
        if rec.usage is not None:
            msg["usage"] = rec.usage
        obj["message"] = msg
    return orjson.dumps(obj) + b"\n"
