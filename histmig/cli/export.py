"""``histmig export``: sessions as Markdown, HTML or ATIF files with an index page (docs/export.md)."""
from __future__ import annotations

from pathlib import Path

import click

from histmig import api
from histmig.cli.common import Progress, diag, emit_json, info, session_filters
from histmig.cli.jsonout import envelope

EXAMPLES = """

\b
Examples:
  histmig export 019e9625 --to markdown --out ./chat          # one session
  histmig export --cwd ~/code/app --since 30d --to html --out ./app-history
  histmig export --all --to html --out ./history --redact     # masks API keys, tokens, passwords
  histmig export --tool claude-code --to atif --out ./trajectories
"""


@click.command("export", help="Write sessions as Markdown, self-contained HTML or ATIF trajectories into a "
               "folder, with an index page. Reads only; writes only below --out." + EXAMPLES)
@click.argument("session", required=False)
@click.option("--to", "to", required=True, type=click.Choice(["markdown", "html", "atif"]), help="Output format.")
@click.option("--out", "out", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Folder to write into (made if missing; files of the same name are replaced).")
@session_filters
@click.option("--all", "all_", is_flag=True, help="Every session of every tool.")
@click.option("--redact", is_flag=True, help="Mask API keys, tokens and passwords (named patterns) and say how many.")
@click.option("--json", "as_json", is_flag=True, help="Print what was written as JSON.")
@click.pass_obj
def command(ctx, session, to, out, tools, cwd, since, until, all_, redact, as_json):
    refs = api.export_sessions(ctx.homes, session, tools=tools or None, cwd=cwd, since=since, until=until,
                               all_=all_)
    progress = Progress("exporting", total=len(refs), enabled=not ctx.quiet and not as_json, unit="sessions")
    report = api.export(ctx.homes, refs, to, out, redact=redact, injected=ctx.verbose > 0,
                        progress=lambda ref: progress.step(ref.size))
    progress.done()
    if as_json:
        emit_json(envelope("export", {
            "to": to, "out": str(report.out), "index": str(report.index), "redacted": report.redacted,
            "sessions": [{"tool": p.tool, "id": p.id, "path": str(p.path), "href": p.href, "title": p.title,
                          "items": p.items, "started": p.meta.created, "updated": p.meta.updated}
                         for p in report.pages],
            "skipped": [{"path": path, "reason": why} for path, why in report.skipped]}))
        return 3 if report.skipped else 0
    for page in report.pages if len(report.pages) == 1 or ctx.verbose else ():
        info(ctx, f"{page.tool:<12} {page.id}  -> {page.path}")
    info(ctx, f"exported {len(report.pages)} session(s) as {to} to {report.out} (index: {report.index})")
    if report.redacted is not None:
        masked = ", ".join(f"{name} {n}" for name, n in report.redacted.items())
        info(ctx, f"redacted {sum(report.redacted.values())} secret(s)" + (f": {masked}" if masked else ""))
    for path, why in report.skipped:
        diag(f"skip: {path}: {why}")
    return 3 if report.skipped else 0
