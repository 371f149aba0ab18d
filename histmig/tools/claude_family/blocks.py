"""What Claude Code, mini-cc and manifest sessions share: Anthropic Messages content blocks as Parts
(and back), and the handling of one JSONL record per line (blank, broken, verbatim bytes).

The three formats wrap the same ``message`` objects in different envelopes; only the envelope
readers live in their own modules. Kept in one place so a block kind added here is read, written
and titled the same way in every one of them.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from histmig.core.diagnostics import HistmigError, Warning
from histmig.jsonio.jsonl import Line
from histmig.toolkit.message_model import message_model
from histmig.core.model import Attachment, Opaque, Part, Reasoning, Record, Text, ToolCall, ToolResult

# context the client injects into user turns (reminders, slash-command echoes, hook output)
INJECTED_RE = re.compile(
    r"^\s*<(?:system-reminder|command-name|command-message|command-args|local-command-[\w-]+"
    r"|user-prompt-submit-hook|bash-input|bash-stdout|bash-stderr|task-notification)[\s>]"
    r"|^\[Request interrupted by user[^\]]*\]")
# the picker's "not a real prompt" test, verbatim from the client (docs/specs/claude-code.md §5.1)
NOT_PROMPT_RE = re.compile(r"^(?:\s*<[a-z][\w-]*[\s>]|\[Request interrupted by user[^\]]*\])")


def str_or_none(v: Any) -> str | None:
    return v if isinstance(v, str) else None


# ---- content blocks → parts -------------------------------------------------------------------

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


# ---- one record per line ----------------------------------------------------------------------

def opaque_record(line: Line, reason: str) -> Record:
    """A line kept as bytes only; an over-limit line (no ``raw``) keeps where to copy it from."""
    extra = {} if line.raw is not None else {"offset": line.offset, "length": line.length}
    return Record(raw=line.raw, line=line.number, opaque_reason=reason, extra=extra)


def unparsed_record(line: Line) -> Record | None:
    """The Record of a blank or broken line, or None when the line is a JSON object to read."""
    if line.blank:
        return Record(raw=line.raw, line=line.number, source_type="blank")
    if line.error is not None:
        return opaque_record(line, line.error)
    if not isinstance(line.obj, dict):
        return opaque_record(line, "not a JSON object")
    return None


def records_per_line(lines: Iterable[Line], from_obj: Callable[[Line, dict], Record]) -> Iterator[Record]:
    """One Record per line: ``from_obj`` reads each JSON object, the rest are kept as bytes."""
    for line in lines:
        rec = unparsed_record(line)
        yield rec if rec is not None else from_obj(line, line.obj)


def record_bytes(rec: Record, source: Path | None, encode: Callable[[Record], bytes]) -> bytes:
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


def broken_warnings(records: Iterable[Record], path: Path | None) -> list[Warning]:
    out = []
    for r in records:
        if r.opaque:
            out.append(Warning("broken-line", f"kept as is: {r.opaque_reason}",
                               str(path) if path else None, r.line))
    return out


# ---- what titles and listings read from records ---------------------------------------------

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


def first_value(records: Iterable[Record], key: str) -> Any:
    """The first string value of a top-level envelope key (``cwd``, ``sessionId``, ...)."""
    for r in records:
        if isinstance(r.extra.get(key), str):
            return r.extra[key]
    return None


def first_timestamp(records: Iterable[Record]) -> str | None:
    return next((r.timestamp for r in records if r.timestamp), None)


def last_model(records: list[Record]) -> str | None:
    """The model of the last assistant message (what a resumed session continues with)."""
    for r in reversed(records):
        model = message_model(r) if r.role == "assistant" else None
        if model is not None:
            return model
    return None
