"""Turn a Session into readable text or markdown (``histmig show``)."""
from __future__ import annotations

from typing import Any

import orjson

from histmig.model import Attachment, Opaque, Reasoning, Record, Session, Text, ToolCall, ToolResult

RESULT_LINES = 12
RESULT_CHARS = 1200


def _shorten(text: str) -> str:
    text = text.rstrip("\n")
    lines = text.splitlines()
    cut = "\n".join(lines[:RESULT_LINES])
    if len(cut) > RESULT_CHARS:
        cut = cut[:RESULT_CHARS]
    if cut != text:
        cut += f"\n… ({len(lines)} lines, {len(text)} chars)"
    return cut


def _args(value: Any) -> str:
    if isinstance(value, str):
        return value
    return orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()


def _output_text(output: Any) -> str:
    if isinstance(output, str):
        return output
    if isinstance(output, list):
        return "\n".join(b.get("text", "[" + str(b.get("type")) + "]") if isinstance(b, dict) else str(b)
                         for b in output)
    return "" if output is None else _args(output)


def part_lines(part, *, verbose: bool = False) -> list[str]:
    if isinstance(part, Text):
        if part.injected and not verbose:
            return [f"[injected context, {len(part.text)} chars]"]
        return [part.text]
    if isinstance(part, Reasoning):
        what = part.summary or part.text
        tags = [t for t, on in (("encrypted", part.encrypted), ("signed", part.signature),
                                ("redacted", part.redacted)) if on]
        head = "(reasoning" + (", " + ", ".join(tags) if tags else "") + ")"
        return [head + (" " + what if what else "")]
    if isinstance(part, ToolCall):
        return [f"→ {part.name} [{part.call_id}]", _indent(_shorten(_args(part.arguments)))]
    if isinstance(part, ToolResult):
        flag = " (error)" if part.is_error else ""
        return [f"← result [{part.call_id}]{flag}", _indent(_shorten(_output_text(part.output)))]
    if isinstance(part, Attachment):
        return [f"[attachment {part.media_type or ''}]".rstrip()]
    if isinstance(part, Opaque):
        return [f"[{part.note or 'unrecognised content'}]"] if verbose else []
    return []


def _indent(text: str) -> str:
    return "\n".join("    " + ln for ln in text.splitlines())


def _only_injected(rec: Record) -> bool:
    return bool(rec.parts) and all(isinstance(p, Text) and p.injected for p in rec.parts)


def _visible(rec: Record, verbose: bool) -> bool:
    if verbose:
        return True
    return not rec.opaque and rec.kind != "event" and not _only_injected(rec)


def render_text(session: Session, *, verbose: bool = False, markdown: bool = False) -> str:
    out = [f"{'# ' if markdown else ''}{session.format} session {session.id}",
           f"cwd: {session.cwd or '-'}" + (f"   provider: {session.provider}" if session.provider else "")
           + (f"   model: {session.model}" if session.model else "")]
    hidden = sum(1 for r in session.records if not verbose and not r.opaque and _only_injected(r))
    if hidden:
        out.append(f"({hidden} injected context message(s) hidden: environment, instructions; -v shows them)")
    out.append("")
    for rec in session.records:
        if not _visible(rec, verbose):
            continue
        if rec.opaque:
            out.append(f"[line {rec.line}: unreadable, kept as is ({rec.opaque_reason})]")
            continue
        body = [ln for p in rec.parts for ln in part_lines(p, verbose=verbose)]
        if not body:
            continue
        role = rec.role or rec.kind
        stamp = f"  {rec.timestamp}" if rec.timestamp and verbose else ""
        out.append(f"### {role}{stamp}" if markdown else f"[{role}]{stamp}")
        if markdown:
            out.extend(f"```\n{b}\n```" if b.startswith(("→", "←", "    ")) else b for b in body)
        else:
            out.extend(body)
        out.append("")
    if session.opaque_count:
        out.append(f"({session.opaque_count} unreadable line(s) kept byte-for-byte)")
    for sub in session.subagents:
        out.append(f"(subagent {sub.id}: {len(sub.records)} records)")
    return "\n".join(out).rstrip() + "\n"


def render_json(session: Session) -> dict[str, Any]:
    """A readable JSON view (not lossless: use --format native for that)."""
    msgs = []
    for rec in session.messages():
        parts = []
        for p in rec.parts:
            d = {k: v for k, v in p.__dict__.items() if v not in (None, "", False)}
            parts.append(d)
        msgs.append({"role": rec.role, "kind": rec.kind, "timestamp": rec.timestamp, "parts": parts})
    return {"tool": session.format, "id": session.id, "cwd": session.cwd, "provider": session.provider,
            "model": session.model, "title": session.title, "path": str(session.path) if session.path else None,
            "messages": msgs, "unreadable_lines": session.opaque_count}
