"""A session as one self-contained HTML page, and the index linking every page (docs/export.md).

Nothing is fetched: the CSS is inline, there are no scripts, fonts or images, and a Content-Security-Policy
forbids anything else, so a page reads the same offline. Every string from a session is escaped; text is
shown as written (``white-space: pre-wrap``), never interpreted as markup. Tool calls and long outputs are
``<details>`` blocks, collapsible without a script."""
from __future__ import annotations

from html import escape
from typing import Any, Callable, Iterable

from histmig.core.model import Attachment, Reasoning, Session, Text, ToolCall, ToolResult
from histmig.toolkit.export.blocks import Meta, args_text, injected_count, iso, output_text, rendered_turns

Write = Callable[[str], Any]
LONG_LINES, LONG_CHARS = 12, 1200     # a result longer than this starts collapsed

CSS = """
:root{color-scheme:light dark;--fg:#1d1d1f;--bg:#fff;--mute:#6e6e73;--line:#d2d2d7;--user:#eef4ff;
--assistant:#f5f5f7;--tool:#fbf8ee;--err:#b3261e}
@media (prefers-color-scheme:dark){:root{--fg:#e8e8ed;--bg:#161617;--mute:#a1a1a6;--line:#3a3a3c;
--user:#1c2a40;--assistant:#232325;--tool:#2a2716;--err:#ff8a80}}
body{font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:var(--bg);
max-width:960px;margin:0 auto;padding:1rem 1.25rem 4rem}
h1{font-size:1.4rem;margin:.5rem 0}
dl.meta{display:grid;grid-template-columns:max-content 1fr;gap:.1rem 1rem;color:var(--mute);font-size:.9rem}
dl.meta dt{font-weight:600}dl.meta dd{margin:0;overflow-wrap:anywhere}
section.turn{border:1px solid var(--line);border-radius:8px;padding:.5rem .9rem;margin:.9rem 0}
section.user{background:var(--user)}section.assistant{background:var(--assistant)}
section.tool{background:var(--tool)}
h2.role{font-size:.85rem;text-transform:uppercase;letter-spacing:.04em;color:var(--mute);margin:.2rem 0 .4rem}
h2.role time{text-transform:none;font-weight:400;margin-left:.5rem}
.text{white-space:pre-wrap;overflow-wrap:anywhere;margin:.4rem 0}
blockquote.reasoning{margin:.4rem 0;padding:.1rem .8rem;border-left:3px solid var(--line);color:var(--mute);
white-space:pre-wrap}
pre{background:rgba(127,127,127,.12);padding:.6rem;border-radius:6px;overflow:auto;white-space:pre-wrap;
overflow-wrap:anywhere;font:13px/1.45 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;margin:.3rem 0}
details{margin:.4rem 0}summary{cursor:pointer;color:var(--mute)}summary code{font-size:.85em}
.error summary,.error .label{color:var(--err)}
.note{color:var(--mute);font-style:italic}
table.index{border-collapse:collapse;width:100%;font-size:.9rem}
table.index th,table.index td{text-align:left;padding:.35rem .5rem;border-bottom:1px solid var(--line);
vertical-align:top}table.index time{white-space:nowrap}table.index td.cwd{overflow-wrap:anywhere;color:var(--mute)}
a{color:inherit}
"""
CSP = "default-src 'none'; style-src 'unsafe-inline'"


def page_head(title: str) -> str:
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f"<meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            f"<title>{escape(title)}</title>\n<style>{CSS}</style>\n</head>\n<body>\n")


def meta_dl(meta: Meta) -> str:
    rows = [("tool", meta.tool), ("session", meta.id), ("cwd", meta.cwd), ("started", meta.created),
            ("updated", meta.updated), ("provider", meta.provider), ("model", meta.model)]
    return "<dl class=\"meta\">" + "".join(f"<dt>{k}</dt><dd>{escape(v)}</dd>" for k, v in rows if v) + "</dl>\n"


def _long(text: str) -> bool:
    return text.count("\n") >= LONG_LINES or len(text) > LONG_CHARS


def part_html(p: Any) -> str | None:
    if isinstance(p, Text):
        return f"<div class=\"text\">{escape(p.text)}</div>" if p.text.strip() else None
    if isinstance(p, Reasoning):
        what = (p.summary or p.text).strip()
        tags = ", ".join(t for t, on in (("encrypted", p.encrypted), ("signed", p.signature),
                                         ("redacted", p.redacted)) if on)
        label = "reasoning" + (f" ({tags})" if tags else "")
        return f"<blockquote class=\"reasoning\"><em>{label}</em>{(chr(10) + escape(what)) if what else ''}</blockquote>"
    if isinstance(p, ToolCall):
        return (f"<details class=\"call\"><summary>→ <strong>{escape(p.name)}</strong> <code>{escape(p.call_id)}</code>"
                f"</summary><pre>{escape(args_text(p.arguments))}</pre></details>")
    if isinstance(p, ToolResult):
        out = output_text(p.output)
        cls = "result error" if p.is_error else "result"
        head = f"← result <code>{escape(p.call_id)}</code>" + (" (error)" if p.is_error else "")
        if _long(out):      # no sizes in the summary: a masked secret would change them (--redact)
            return (f"<details class=\"{cls}\"><summary>{head} (long: open to read)</summary>"
                    f"<pre>{escape(out)}</pre></details>")
        return f"<div class=\"{cls}\"><div class=\"label\">{head}</div><pre>{escape(out)}</pre></div>"
    if isinstance(p, Attachment):
        return f"<p class=\"note\">[attachment {escape(p.media_type or '')}]</p>"
    return None


def write_html(session: Session, write: Write, meta: Meta, *, index_href: str | None = "../index.html",
               injected: bool = False) -> int:
    """Write the page; returns how many records it showed."""
    write(page_head(meta.title))
    if index_href:
        write(f"<nav><a href=\"{escape(index_href)}\">← all sessions</a></nav>\n")
    write(f"<header>\n<h1>{escape(meta.title)}</h1>\n{meta_dl(meta)}</header>\n<main>\n")
    shown = _body(session, write, injected)
    write("</main>\n</body>\n</html>\n")
    return shown


def _body(session: Session, write: Write, injected: bool) -> int:
    hidden = 0 if injected else injected_count(session)
    if hidden:
        write(f"<p class=\"note\">{hidden} injected context message(s) not shown: environment, instructions.</p>\n")
    shown, open_ = 0, False
    for rec, pieces, who in rendered_turns(session, injected, part_html):
        shown += 1
        if who is not None:
            if open_:
                write("</section>\n")
            stamp = iso(rec.timestamp)
            time = f"<time datetime=\"{escape(stamp)}\">{escape(stamp)}</time>" if stamp else ""
            write(f"<section class=\"turn {escape(who)}\">\n<h2 class=\"role\">{escape(who)}{time}</h2>\n")
            open_ = True
        write("\n".join(pieces))
        write("\n")
    if open_:
        write("</section>\n")
    for sub in session.subagents:
        write(f"<details class=\"subagent\"><summary>sub-agent <code>{escape(sub.id)}</code></summary>\n")
        shown += _body(sub, write, injected)
        write("</details>\n")
    return shown


def _when(stamp: str | None) -> str:
    """A time in a table cell: minutes shown, the whole time in ``datetime``."""
    if not stamp:
        return ""
    return f"<time datetime=\"{escape(stamp)}\">{escape(stamp[:10])} {escape(stamp[11:16])}</time>"


def write_index(entries: Iterable[tuple[str, Meta, int]], write: Write, *, title: str, note: str = "") -> None:
    """The index page: one row per exported session, (href, meta, messages shown)."""
    write(page_head(title) + f"<header><h1>{escape(title)}</h1>"
          + (f"<p class=\"note\">{escape(note)}</p>" if note else "") + "</header>\n<main>\n")
    write("<table class=\"index\">\n<thead><tr><th>session</th><th>tool</th><th>started</th><th>updated</th>"
          "<th>messages</th><th>cwd</th></tr></thead>\n<tbody>\n")
    for href, meta, shown in entries:
        write(f"<tr><td><a href=\"{escape(href)}\">{escape(meta.title)}</a></td><td>{escape(meta.tool)}</td>"
              f"<td>{_when(meta.created)}</td><td>{_when(meta.updated)}</td><td>{shown}</td>"
              f"<td class=\"cwd\">{escape(meta.cwd or '')}</td></tr>\n")
    write("</tbody>\n</table>\n</main>\n</body>\n</html>\n")
