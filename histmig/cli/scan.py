"""``histmig scan``: one table of every session across all tools (docs/scan-show.md). The choice of
sessions, their order, short ids and groups come from the library (api.listing, api.group_sessions);
this module lays them out for the terminal's width and pages them."""
from __future__ import annotations

import click

from histmig import api
from histmig.cli.common import TOOL, Progress, emit_json_stream, info, style
from histmig.cli.fmt import fmt_size, fmt_time
from histmig.cli.jsonout import envelope, iso_utc, session_ref
from histmig.cli.pager import page, terminal_width
from histmig.tools import FORMATS

EXAMPLES = """

\b
Examples:
  histmig scan
  histmig scan --tool codex --provider openai
  histmig scan --cwd ~/code/app --since 7d --json
  histmig scan --sort size --limit 10
  histmig scan --by month      # sessions per month, and a month x tool chart
  histmig scan --no-index      # read every file, leave the scan index alone
"""

SORTS = ("updated", "created", "size", "msgs", "cwd")
BY = ("cwd", "month", "tool", "provider")


def _columns():
    from histmig.toolkit.listing.layout import Column
    # drop: hidden in this order (lowest first) when the terminal is too narrow (docs/scan-show.md, "Width")
    return {c.name: c for c in (
        Column("tool", "TOOL"), Column("id", "ID"), Column("updated", "UPDATED"),
        Column("created", "CREATED", drop=4), Column("cwd", "CWD", shrink_to=16, middle=True),
        Column("provider", "PROVIDER", drop=1), Column("msgs", "MSGS"), Column("size", "SIZE", drop=2),
        Column("state", "STATE", shrink_to=10, drop=3), Column("title", "TITLE", shrink_to=12),
        Column("path", "PATH", shrink_to=16, middle=True))}


DEFAULT_COLUMNS = ("tool", "id", "updated", "cwd", "provider", "msgs", "size", "state", "title")


def _created(r) -> str:
    from histmig.core.times import parse_ts
    created = parse_ts(r.created)
    return fmt_time(created.timestamp()) if created else "-"


def _title(r) -> str:
    from histmig.toolkit.listing.width import cut_end
    return cut_end(" ".join((r.title or "").split()), 50)


# column -> its cell of a session (only the columns shown are computed)
CELLS = {"tool": lambda r, short: r.format, "id": lambda r, short: short[r.id],
         "updated": lambda r, short: fmt_time(r.updated), "created": lambda r, short: _created(r),
         "cwd": lambda r, short: r.cwd or "-", "provider": lambda r, short: r.provider or "-",
         "msgs": lambda r, short: "-" if r.messages is None else str(r.messages),
         "size": lambda r, short: fmt_size(r.size), "state": lambda r, short: r.state_text(),
         "title": lambda r, short: _title(r), "path": lambda r, short: str(r.path)}


def _parse_columns(text: str | None) -> tuple[str, ...]:
    if not text:
        return DEFAULT_COLUMNS
    names = tuple(n.strip().lower() for n in text.split(",") if n.strip())
    known = _columns()
    bad = [n for n in names if n not in known]
    if bad or not names:
        raise click.UsageError(f"--columns: {', '.join(bad) or 'none given'}; choose from {', '.join(known)}")
    return names


@click.command("scan", help="List every session of every tool." + EXAMPLES)
@click.option("--tool", "tools", multiple=True, type=TOOL, help="Only these tools (repeatable).")
@click.option("--provider", help="Only sessions recorded under this model provider (Codex model_provider, ...).")
@click.option("--cwd", "cwd", type=click.Path(), help="Only sessions whose cwd is PATH or lies below it.")
@click.option("--since", help="Only sessions updated since a date (2026-11-01) or a duration (7d, 12h).")
@click.option("--until", help="Only sessions updated until a date (the whole day) or a duration ago (30d).")
@click.option("--state", "states", multiple=True, metavar="STATE",
              help="Only sessions in this state: ok, live, archived, compressed, broken, hidden, error, ... "
                   "(repeatable, or comma-separated).")
@click.option("--sort", type=click.Choice(SORTS),
              help="Order (default updated): newest/largest first; cwd alphabetical. With --by: the groups'.")
@click.option("--reverse", is_flag=True, help="Reverse the order.")
@click.option("--limit", type=click.IntRange(min=0), metavar="N", help="Show the first N sessions (or groups).")
@click.option("--columns", metavar="A,B,..",
              help="Columns to show: tool,id,updated,created,cwd,provider,msgs,size,state,title,path.")
@click.option("--by", type=click.Choice(BY), help="One row per cwd, month, tool or provider (month adds a chart).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document, one object per session (or group).")
@click.option("--no-pager", "no_pager", is_flag=True, help="Print directly, never through $PAGER.")
@click.option("--no-index", "no_index", is_flag=True,
              help="Read every file; neither use nor update the scan index in the state dir.")
@click.pass_obj
def command(ctx, tools, provider, cwd, since, until, states, sort, reverse, limit, columns, by, as_json, no_pager,
            no_index):
    since_ts = api.parse_since(since) if since else None
    until_ts = api.parse_since(until, flag="--until") if until else None
    names = _parse_columns(columns)
    states = tuple(s.strip() for item in states for s in item.split(",") if s.strip())
    progress = Progress("scanning", enabled=not as_json and not ctx.quiet)
    grouped = by is not None
    found = api.listing(ctx.homes, tools=tools or None, provider=provider, cwd=cwd, since=since_ts, until=until_ts,
                        states=states, sort=sort or "updated", reverse=reverse and not grouped,
                        limit=None if grouped else limit, use_index=not no_index,
                        on_ref=(lambda r: progress.step(r.size)) if progress.enabled else None)
    progress.done()
    filtered = bool(provider or cwd or since or until or states)
    if grouped:
        groups = api.group_sessions(found.rows, by, sort=sort, reverse=reverse, limit=limit)
        if as_json:
            emit_json_stream(envelope("scan.groups", {"by": by, "groups": [_group_json(g) for g in groups]}))
            return 0
        if not found.rows:
            return _nothing(ctx, tools, filtered)
        lines = render_groups(groups, by, terminal_width())
        if by == "month":
            lines += [""] + render_chart(api.month_chart(found.rows), terminal_width())
        _out(ctx, lines, pager=not no_pager)
        return 0
    if as_json:
        from histmig.jsonio.jsonstream import Lazy, Plain   # one session's text at a time, not the whole document
        emit_json_stream(envelope("scan", {"sessions": Lazy(Plain(session_ref(r, short_id=found.short[r.id]))
                                                              for r in found.rows)}))
        return 0
    if not found.matched:
        return _nothing(ctx, tools, filtered)
    lines = [] if not found.rows else render_table(found.rows, found.short, names, terminal_width(), explicit=columns is not None)
    more = found.matched - len(found.rows)
    if more:
        lines += _wrap([f"{more} more not shown (--limit {limit})"], terminal_width())
    _out(ctx, lines, pager=not no_pager)
    return 0


def _out(ctx, lines: list[str], *, pager: bool) -> None:
    if ctx.quiet:
        return
    page(lines, enabled=pager)


def _nothing(ctx, tools, filtered: bool) -> int:
    info(ctx, "no sessions match the filters in:" if filtered else "no sessions found in:")
    for line in where_looked(ctx.homes, tools):
        info(ctx, "  " + line)
    return 0


def render_table(refs, short: dict[str, str], names=DEFAULT_COLUMNS, width: int | None = None, *,
                 explicit: bool = False) -> list[str]:
    """The table and its summary line; columns fitted to ``width`` cells (None: whole cells)."""
    from histmig.toolkit.listing.layout import fit, render
    known = _columns()
    cols = [known[n] for n in names]
    rows = [[CELLS[n](r, short) for n in names] for r in refs]
    fitted = fit(cols, rows, width, may_drop=not explicit)
    lines = render(fitted, cols, rows)
    lines[0] = style(lines[0], bold=True)
    by_tool = {tool: n for tool in FORMATS if (n := sum(1 for r in refs if r.format == tool))}
    summary = [f"{len(refs)} sessions (" + ", ".join(f"{k} {v}" for k, v in by_tool.items()) + ")"]
    if fitted.hidden:
        summary.append(f"hidden to fit {width} columns: {', '.join(fitted.hidden)} (--columns chooses)")
    return lines + [""] + _wrap(summary, width)


def _wrap(lines: list[str], width: int | None) -> list[str]:
    import textwrap
    if width is None:
        return lines
    return [part for line in lines for part in textwrap.wrap(line, width, break_on_hyphens=False) or [""]]


def render_groups(groups, by: str, width: int | None) -> list[str]:
    from histmig.toolkit.listing.layout import Column, fit, render
    cols = [Column("key", by.upper(), shrink_to=16, middle=by == "cwd"), Column("sessions", "SESSIONS"),
            Column("msgs", "MSGS"), Column("size", "SIZE"), Column("last", "LAST USED")]
    if by != "tool":
        cols.append(Column("tools", "TOOLS", shrink_to=12))
    rows = [[g.key, str(g.sessions), str(g.messages), fmt_size(g.size), fmt_time(g.last_used),
             ", ".join(f"{t} {n}" for t, n in g.tools.items())][:len(cols)] for g in groups]
    lines = render(fit(cols, rows, width), cols, rows)
    lines[0] = style(lines[0], bold=True)
    total = sum(g.sessions for g in groups)
    return lines + ["", f"{len(groups)} {_plural(by)}, {total} sessions"]


def _plural(by: str) -> str:
    return {"cwd": "folders", "month": "months", "tool": "tools", "provider": "providers"}[by]


def render_chart(chart, width: int | None) -> list[str]:
    """Months down, tools across, a bar per cell scaled to the largest cell (eighth blocks); tools that
    do not fit the width go to a second block below."""
    from histmig.toolkit.listing.groups import bar
    from histmig.toolkit.listing.width import pad
    if not chart.tools:
        return []
    digits = len(str(chart.top))
    room = (width or 100) - 9 - len(chart.tools) * (2 + 1 + digits)
    cells = max(3, min(20, room // len(chart.tools)))
    colw = {t: max(len(t), cells + 1 + digits) for t in chart.tools}
    lines = [f"sessions per month and tool (a full bar: {chart.top})"]
    for block in _blocks(chart.tools, colw, width):
        if len(lines) > 1:
            lines.append("")
        lines.append(style((pad("MONTH", 7) + "".join("  " + pad(t, colw[t]) for t in block)).rstrip(), bold=True))
        for m in chart.months:
            row = pad(m, 7)
            for t in block:
                n = chart.counts.get((m, t), 0)
                row += "  " + pad((pad(bar(n, chart.top, cells), cells) + " " + str(n)) if n else "", colw[t])
            lines.append(row.rstrip())
    return lines


def _blocks(tools: list[str], colw: dict[str, int], width: int | None) -> list[list[str]]:
    blocks, used = [[]], 7
    for t in tools:
        if width is not None and blocks[-1] and used + 2 + colw[t] > width:
            blocks.append([])
            used = 7
        blocks[-1].append(t)
        used += 2 + colw[t]
    return blocks


def _group_json(g) -> dict:
    return {"key": g.key, "sessions": g.sessions, "messages": g.messages, "size": g.size,
            "last_used": iso_utc(g.last_used), "tools": dict(g.tools)}


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
