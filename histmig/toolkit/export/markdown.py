"""A session as Markdown: ``show --format markdown`` and ``export --to markdown`` (docs/export.md).

Title, times, cwd and tool on top; one ``## role`` header each time the speaker changes; tool calls and
results in fenced blocks whose fence is longer than any run of backticks inside (so a result that holds
a fence of its own cannot close the block); reasoning summaries as quotes."""
from __future__ import annotations

import re
from typing import Any, Callable

from histmig.core.model import Attachment, Reasoning, Session, Text, ToolCall, ToolResult
from histmig.toolkit.export.blocks import Meta, args_text, injected_count, iso, output_text, rendered_turns

Write = Callable[[str], Any]


def fence(text: str, info: str = "", before: str = "") -> str:
    """``text`` in a fenced code block that nothing inside can close (after ``before``: one copy of a
    long text, not one more to put a heading in front)."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    bar = "`" * max(3, longest + 1)
    return f"{before}{bar}{info}\n{text}\n{bar}"


def code(text: str) -> str:
    """An inline code span around ``text`` whatever backticks it holds."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    bar = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{bar}{pad}{text}{pad}{bar}"


def quote(text: str) -> str:
    return "\n".join("> " + ln if ln else ">" for ln in text.splitlines() or [""])


def header_lines(meta: Meta) -> list[str]:
    rows = [("tool", meta.tool), ("session", code(meta.id)), ("cwd", code(meta.cwd) if meta.cwd else None),
            ("started", meta.created), ("updated", meta.updated), ("provider", meta.provider),
            ("model", meta.model)]
    return [f"- **{k}:** {v}" for k, v in rows if v]


def part_md(p: Any) -> str | None:
    if isinstance(p, Text):
        return p.text if p.text.strip() else None
    if isinstance(p, Reasoning):
        what = (p.summary or p.text).strip()
        tags = ", ".join(t for t, on in (("encrypted", p.encrypted), ("signed", p.signature),
                                         ("redacted", p.redacted)) if on)
        label = "*reasoning" + (f" ({tags})" if tags else "") + "*"
        return quote(label + (":\n" + what if what else ""))
    if isinstance(p, ToolCall):
        body = args_text(p.arguments)
        return fence(body, "" if isinstance(p.arguments, str) else "json", f"**→ {p.name}** {code(p.call_id)}\n\n")
    if isinstance(p, ToolResult):
        flag = " (error)" if p.is_error else ""
        return fence(output_text(p.output).rstrip("\n"), "", f"**← result** {code(p.call_id)}{flag}\n\n")
    if isinstance(p, Attachment):
        return f"*[attachment {p.media_type or ''}]*".replace(" ]", "]")
    return None


def write_markdown(session: Session, write: Write, meta: Meta, *, injected: bool = False, level: int = 1) -> int:
    """Write the page; returns how many records it showed."""
    h = "#" * level
    write(f"{h} {meta.title}\n\n" + "\n".join(header_lines(meta)) + "\n")
    hidden = 0 if injected else injected_count(session)
    if hidden:
        write(f"\n*({hidden} injected context message(s) not shown: environment, instructions)*\n")
    shown = 0
    for rec, pieces, who in rendered_turns(session, injected, part_md):
        shown += 1
        if who is not None:
            stamp = iso(rec.timestamp)
            write(f"\n{h}# {who}" + (f" · {stamp}" if stamp else "") + "\n")
        for piece in pieces:        # (three writes: a long piece is not copied to add its newlines)
            write("\n")
            write(piece)
            write("\n")
    for sub in session.subagents:
        sub_meta = Meta(tool=sub.format, id=sub.id, title=f"sub-agent {sub.id}", cwd=sub.cwd,
                        created=iso(sub.created))
        write("\n")
        shown += write_markdown(sub, write, sub_meta, injected=injected, level=level + 1)
    return shown
