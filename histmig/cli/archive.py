"""``histmig archive``: keep a copy of every session, storing only new bytes (docs/archive.md)."""
from __future__ import annotations

import click

from histmig import api
from histmig.cli.common import TOOL, emit_json, info, print_warnings
from histmig.cli.jsonout import envelope
from histmig.core.diagnostics import EXIT_OK

ARCHIVE_EXAMPLES = """

\b
Examples:
  histmig archive                          # into <state dir>/archive: only new bytes are stored
  histmig archive --to /backup/agent-history
  histmig archive --tool claude-code --tool gemini
  # cron, every hour:  0 * * * *  histmig archive --quiet
"""

@click.command("archive", help="Copy every session of every tool into a content-addressed archive: only "
               "bytes not stored before are added (an appended session stores its new tail), with a catalog "
               "of what existed at each run. Reads the homes only; safe to run from cron." + ARCHIVE_EXAMPLES)
@click.option("--to", "to", type=click.Path(file_okay=False), default=None,
              help="The archive folder (default: <state dir>/archive).")
@click.option("--tool", "tools", multiple=True, type=TOOL, help="Only this tool's sessions (repeatable; default: all).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_obj
def archive_cmd(ctx, to, tools, as_json) -> int:
    report = api.archive(ctx.homes, to=to, tools=tools or None)
    if as_json:
        emit_json(envelope("archive", report.to_dict()))
    else:
        info(ctx, f"archived {report.sessions} session(s), {report.files} file(s) into {report.root}")
        for tool, n in report.by_tool.items():
            info(ctx, f"  {tool:<12} {n}")
        info(ctx, f"read {report.read} new or changed file(s); stored {report.new_objects} new object(s), "
                  f"{report.new_bytes} bytes; catalog {report.catalog_bytes} bytes ({report.run})")
        print_warnings(report.warnings)
    return EXIT_OK     # a tool not archived as files is named, not a failure: cron mails only real errors



command = archive_cmd
