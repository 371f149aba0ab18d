"""Turn a Session into readable text (``histmig show``; its Markdown is histmig/toolkit/export/markdown.py)."""
from __future__ import annotations

from typing import Any, Callable, Iterator


from histmig.cli.jsonout import iso_text
from histmig.jsonio.jsonstream import Lazy, Later, spread
from histmig.toolkit.export.blocks import args_text, output_text
from histmig.core.model import Attachment, Opaque, Reasoning, Record, Session, Text, ToolCall, ToolResult

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
        return [f"→ {part.name} [{part.call_id}]", _indent(_shorten(args_text(part.arguments)))]
    if isinstance(part, ToolResult):
        flag = " (error)" if part.is_error else ""
        return [f"← result [{part.call_id}]{flag}", _indent(_shorten(output_text(part.output)))]
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


class _Joined:
    """Writes ``"\n".join(pieces).rstrip()`` a piece at a time: trailing whitespace is held back
    until something visible follows it, so the streamed text equals the joined one."""

    def __init__(self, write: Callable[[str], Any]):
        self.write, self.pending, self.first = write, "", True

    def add(self, piece: str) -> None:
        text = self.pending + ("" if self.first else "\n") + piece
        self.first = False
        kept = text.rstrip()
        if kept:
            self.write(kept)
        self.pending = text[len(kept):]


def render_text(session: Session, *, verbose: bool = False) -> str:
    out: list[str] = []
    write_text(session, out.append, verbose=verbose)
    return "".join(out)


def write_text(session: Session, write: Callable[[str], Any], *, verbose: bool = False) -> None:
    """:func:`render_text` written as it goes: the records are read once to count the hidden ones
    and once to print, one at a time (``session.records`` may be a ``RecordStream``)."""
    out = _Joined(write)
    out.add(f"{session.format} session {session.id}")
    out.add(f"cwd: {session.cwd or '-'}" + (f"   provider: {session.provider}" if session.provider else "")
            + (f"   model: {session.model}" if session.model else ""))
    hidden, types = _first_pass(session, verbose)
    unknown = {t: n for t, n in types.items() if t.startswith("unknown:")}
    if unknown:
        out.add(f"({sum(unknown.values())} record(s) of types histmig does not name yet, kept byte for byte: "
                + ", ".join(f"{t[8:]} {n}" for t, n in unknown.items()) + ")")
    if verbose and types:
        out.add("records by type: " + ", ".join(f"{t} {n}" for t, n in types.items()))
    if hidden:
        out.add(f"({hidden} injected context message(s) hidden: environment, instructions; -v shows them)")
    out.add("")
    opaque = 0
    for rec in session.records:
        opaque += rec.opaque
        if not _visible(rec, verbose):
            continue
        if rec.opaque:
            out.add(f"[line {rec.line}: unreadable, kept as is ({rec.opaque_reason})]")
            continue
        body = [ln for p in rec.parts for ln in part_lines(p, verbose=verbose)]
        if not body:
            continue
        role = rec.role or rec.kind
        stamp = f"  {rec.timestamp}" if rec.timestamp and verbose else ""
        out.add(f"[{role}]{stamp}")
        for b in body:
            out.add(b)
        out.add("")
    if opaque:
        out.add(f"({opaque} unreadable line(s) kept byte-for-byte)")
    for sub in session.subagents:
        out.add(f"(subagent {sub.id}: {len(sub.records)} records)")
    write("\n")


def _first_pass(session: Session, verbose: bool) -> tuple[int, dict[str, int]]:
    """Injected messages to hide, and records per type where the tool names its types (its adapter's
    ``type_name``), in one read of the records."""
    from histmig.tools import adapter
    name_of = getattr(adapter(session.format), "type_name", None)
    hidden, types = 0, {}
    for r in session.records:
        hidden += not verbose and not r.opaque and _only_injected(r)
        if name_of is not None:
            t = name_of(r)
            types[t] = types.get(t, 0) + 1
    return hidden, types


def render_json(session: Session) -> dict[str, Any]:
    """A readable JSON view (not lossless: use --format native for that)."""
    return {k: (list(v.items) if isinstance(v, Lazy) else v.compute() if isinstance(v, Later) else v)
            for k, v in json_view(session).items()}


def json_view(session: Session) -> dict[str, Any]:
    """:func:`render_json` for :func:`histmig.jsonio.jsonstream.write_json`: the messages are streamed
    and the unreadable lines counted while they are."""
    opaque = [0]

    def messages() -> Iterator[dict[str, Any]]:
        for rec in session.records:
            if rec.opaque:
                opaque[0] += 1
            elif rec.kind in ("message", "tool_call", "tool_result", "reasoning", "summary"):
                parts = [{k: v for k, v in p.__dict__.items() if v not in (None, "", False)} for p in rec.parts]
                # (a long text written alone: jsonstream.spread)
                yield spread({"role": rec.role, "kind": rec.kind, "timestamp": iso_text(rec.timestamp), "parts": parts})

    return {"tool": session.format, "id": session.id, "cwd": session.cwd, "provider": session.provider,
            "model": session.model, "title": session.title, "path": str(session.path) if session.path else None,
            "messages": Lazy(messages()), "unreadable_lines": Later(lambda: opaque[0])}
