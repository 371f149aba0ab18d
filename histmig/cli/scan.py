"""``histmig scan``: one table of every session across all tools."""
from __future__ import annotations

import click

from histmig import api
from histmig.cli.common import TOOL, Progress, emit_json_stream, info, style
from histmig.cli.fmt import fmt_size, fmt_time
from histmig.cli.jsonout import envelope, session_ref
from histmig.core.ids import unique_prefixes
from histmig.tools import FORMATS

EXAMPLES = """

\b
Examples:
  histmig scan
  histmig scan --tool codex --provider openai
  histmig scan --cwd ~/code/app --since 7d --json
  histmig scan --no-index      # read every file, leave the scan index alone
"""


@click.command("scan", help="List every session of every tool." + EXAMPLES)
@click.option("--tool", "tools", multiple=True, type=TOOL, help="Only these tools (repeatable).")
@click.option("--provider", help="Only Codex sessions recorded under this model_provider.")
@click.option("--cwd", "cwd", type=click.Path(), help="Only sessions whose cwd is PATH or lies below it.")
@click.option("--since", help="Only sessions updated since a date (2026-11-01) or a duration (7d, 12h).")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array, one object per session.")
@click.option("--no-index", "no_index", is_flag=True,
              help="Read every file; neither use nor update the scan index in the state dir.")
@click.pass_obj
def command(ctx, tools, provider, cwd, since, as_json, no_index):
    since_ts = api.parse_since(since) if since else None
    progress = Progress("scanning", enabled=not as_json and not ctx.quiet)
    refs = []
    for ref in api.scan(ctx.homes, tools=tools or None, provider=provider, cwd=cwd, since=since_ts,
                        use_index=not no_index):
        refs.append(ref)
        progress.step(ref.size)
    progress.done()
    refs.sort(key=lambda r: (r.updated or 0), reverse=True)
    if as_json:
        from histmig.jsonio.jsonstream import Lazy, Plain   # one session's text at a time, not the whole document
        emit_json_stream(envelope("scan", {"sessions": Lazy(Plain(session_ref(r)) for r in refs)}))
        return 0
    render_table(ctx, refs, tools=tools, filtered=bool(provider or cwd or since))
    return 0


def render_table(ctx, refs, *, tools=(), filtered: bool = False) -> None:
    if not refs:
        info(ctx, "no sessions match the filters in:" if filtered else "no sessions found in:")
        for line in where_looked(ctx.homes, tools):
            info(ctx, "  " + line)
        return
    rows = [("TOOL", "ID", "UPDATED", "CWD", "PROVIDER", "MSGS", "SIZE", "STATE", "TITLE")]
    short = unique_prefixes([r.id for r in refs])
    for r in refs:
        rows.append((r.format, short[r.id], fmt_time(r.updated), r.cwd or "-", r.provider or "-",
                     "-" if r.messages is None else str(r.messages), fmt_size(r.size), r.state_text(),
                     _short(r.title or "", 50)))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    for n, row in enumerate(rows):
        line = "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row[:-1])) + "  " + row[-1]
        info(ctx, style(line, bold=True) if n == 0 else line.rstrip())
    by_tool = {tool: n for tool in FORMATS if (n := sum(1 for r in refs if r.format == tool))}
    info(ctx, f"\n{len(refs)} sessions (" + ", ".join(f"{k} {v}" for k, v in by_tool.items()) + ")")


def where_looked(homes, tools=()) -> list[str]:
    """One line per tool home searched, marking a folder that does not exist (a wrong --home or
    CODEX_HOME is the usual reason for an empty scan)."""
    from histmig.tools import TABLE
    lines = []
    for name, row in TABLE.items():
        if tools and name not in tools:
            continue
        home = row.home(homes)
        lines.append(f"{name:<12} {home}" + ("" if home.is_dir() else "  (does not exist)"))
    return lines


def _short(text: str, n: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"
