"""``histmig search PATTERN``: full text over every tool's conversations (docs/search.md)."""
from __future__ import annotations

import functools

import click

from histmig import api
from histmig.cli.common import emit_json_stream, print_warnings, session_filters, use_color
from histmig.cli.fmt import fmt_time
from histmig.cli.jsonout import envelope, iso_text, iso_utc
from histmig.core.diagnostics import EXIT_OK, EXIT_REFUSED
from histmig.core.times import parse_ts

EXAMPLES = """

\b
Examples:
  histmig search "connection refused"
  histmig search --tools "npm ERR"            # also tool calls and their output
  histmig search --regex 'timeout after \\d+s' --tool codex --since 30d
  histmig search -l flaky --cwd ~/code/app     # the matching sessions only
\b
Exit code: 0 when something matched, 1 when nothing did, 2 on a usage error.
"""

ROLE_LABEL = {"text": None, "tool_call": "tool call", "tool_result": "tool output"}


@click.command("search", help="Search the text of every tool's conversations." + EXAMPLES)
@click.argument("pattern")
@click.option("--regex", "-E", "regex", is_flag=True, help="PATTERN is a Python regular expression (default: literal text).")
@click.option("-i", "--ignore-case", "case", flag_value="ignore", help="Case-insensitive, whatever PATTERN holds.")
@click.option("-s", "--case-sensitive", "case", flag_value="sensitive", help="Case-sensitive, whatever PATTERN holds.")
@click.option("--tools", "include_tools", is_flag=True, help="Also search tool calls and their output.")
@click.option("-l", "--files-with-matches", "files_only", is_flag=True, help="List the matching sessions only.")
@session_filters
@click.option("--color", "color", type=click.Choice(["auto", "always", "never"]), default="auto", show_default=True,
              help="Highlight matches with ANSI colours (auto: only on a terminal, never with NO_COLOR).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document, streamed: one object per match "
              "(with -l: per session).")
@click.option("--no-index", "no_index", is_flag=True, help="Neither use nor update the scan index.")
@click.pass_obj
def command(ctx, pattern, regex, case, include_tools, files_only, tools, cwd, since, until, color, as_json, no_index):
    result = api.search(ctx.homes, pattern, regex=regex, case=case or "smart", tools=tools or None, cwd=cwd,
                        since=api.parse_since(since) if since else None,
                        until=api.parse_since(until, flag="--until") if until else None,
                        include_tools=include_tools, files_only=files_only, use_index=not no_index)
    if as_json:
        emit_json_stream(json_document(result, pattern, files_only))
    else:
        paint = color == "always" or (color == "auto" and use_color())
        render(ctx, result, files_only=files_only, paint=paint)
    print_warnings(result.warnings)
    if result.broken > len([w for w in result.warnings if w.code == "search-broken-line"]):
        click.echo(f"warning: {result.broken} lines that do not parse were skipped in all", err=True)
    return EXIT_OK if result.hits else EXIT_REFUSED


# ---- text ------------------------------------------------------------------------------------

def render(ctx, result, *, files_only: bool, paint: bool) -> None:
    out = Output(paint)
    current = None
    for hit in result:
        if hit.ref is not current:
            if current is not None:
                out.flush_if_terminal()           # a person sees each session as it is found
            current = hit.ref
            if not files_only and result.matched:
                out.line("")
            out.line(header(hit, paint))
            if files_only:
                continue
        out.line(match_line(hit, paint))
    if not files_only and not ctx.quiet:
        s = "" if result.hits == 1 else "es"
        out.line(("\n" if result.hits else "") + f"{result.hits} match{s} in {result.matched} of "
                 f"{result.sessions} sessions")
    out.flush()


class Output:
    """stdout written in pieces of about 64 KiB (one ``echo`` per match line is most of the run's time
    on a big result), at once after each session on a terminal."""

    def __init__(self, paint: bool):
        self.paint, self.buf, self.held = paint, [], 0
        self.tty = _isatty()

    def line(self, text: str) -> None:
        self.buf.append(text + "\n")
        self.held += len(text) + 1
        if self.held >= 1 << 16:
            self.flush()

    def flush_if_terminal(self) -> None:
        if self.tty:
            self.flush()

    def flush(self) -> None:
        if self.buf:
            click.echo("".join(self.buf), nl=False, color=self.paint)
            self.buf.clear()
            self.held = 0


def _isatty() -> bool:
    import sys
    return sys.stdout.isatty()


def header(hit, paint: bool) -> str:
    r = hit.ref
    title = " ".join((r.title or "").split())
    title = title if len(title) <= 60 else title[:59] + "…"
    head = f"{r.format}  {hit.short}"
    text = f"{_style(head, paint, fg='magenta', bold=True)}  {fmt_time(r.updated)}  {r.cwd or '-'}"
    return text + (f"  {title}" if title else "")


def match_line(hit, paint: bool) -> str:
    when = local_minute(hit.timestamp)
    role = ROLE_LABEL.get(hit.kind) or hit.role or "-"
    return f"  {when}  {role:<11}  {highlight(hit.snippet, hit.spans, paint)}"


# a match's time as printed, by its text: the matching lines of one message share its timestamp, as do
# the lines of a generated or imported history (the bench's), and the conversion (a parse, the local
# zone, strftime) costs more than the rest of the line. Bounded: a big result holds 4,096 of them
@functools.lru_cache(maxsize=4096)
def local_minute(timestamp: str | None) -> str:
    ts = parse_ts(timestamp)
    return ts.astimezone().strftime("%Y-%m-%d %H:%M") if ts else "-"


def highlight(snippet: str, spans, paint: bool) -> str:
    out, at = [], 0
    for a, b in spans:
        out.append(_flat(snippet[at:a]))
        out.append(_style(_flat(snippet[a:b]), paint, fg="red", bold=True))
        at = b
    out.append(_flat(snippet[at:]))
    return "".join(out)


def _flat(text: str) -> str:
    # one hit, one line of output: a control character (a newline inside a regex match, a tab, an
    # escape sequence someone pasted) is shown as a space, never sent to the terminal
    if text.isprintable():               # (one pass in C: a snippet almost always is)
        return text
    return "".join(c if c.isprintable() else " " for c in text)


def _style(text: str, paint: bool, **kw) -> str:
    return click.style(text, **kw) if paint else text


# ---- JSON ------------------------------------------------------------------------------------

def json_document(result, pattern: str, files_only: bool) -> dict:
    from histmig.jsonio.jsonstream import Later, Lazy, Plain
    q = result.query
    key, items = ("sessions", (Plain(session_json(h)) for h in result)) if files_only else \
        ("matches", (Plain(match_json(h)) for h in result))
    return envelope("search", {
        "pattern": pattern, "regex": q.regex, "ignore_case": q.ignore_case, key: Lazy(items),
        "summary": Later(lambda: {"hits": result.hits, "sessions_matched": result.matched,
                                  "sessions_searched": result.sessions, "broken_lines": result.broken,
                                  "warnings": [w.to_dict() for w in result.warnings]})})


def session_json(hit) -> dict:
    r = hit.ref
    return {"tool": r.format, "id": r.id, "short_id": hit.short, "path": str(r.path), "cwd": r.cwd,
            "updated": iso_utc(r.updated), "title": r.title}


def match_json(hit) -> dict:
    return {**session_json(hit), "role": hit.role, "kind": hit.kind, "time": iso_text(hit.timestamp),
            "file": hit.path, "line": hit.line, "offset": hit.offset, "snippet": hit.snippet,
            "spans": [list(s) for s in hit.spans]}
