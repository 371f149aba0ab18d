"""``histmig pack -o FILE.tar.zst``: chosen history of every tool into one bundle (docs/pack.md)."""
from __future__ import annotations

import click

from histmig import api
from histmig.cli.common import Progress, emit_json, info, session_filters
from histmig.cli.fmt import fmt_size

EXAMPLES = """

\b
Examples:
  histmig pack --all -o history.tar.zst
  histmig pack --cwd ~/code/app -o app.tar.zst             # one project, every tool
  histmig pack --tool codex --since 30d -o codex-month.tar.zst
  histmig pack 019e9625 3a7770b4 -o two.tar.zst            # sessions by id (prefix)
"""


@click.command("pack", help="Write chosen sessions of every tool (native files byte for byte, their database "
               "rows, a manifest with every file's sha256) into one new .tar.zst bundle. Reads only." + EXAMPLES)
@click.argument("sessions", nargs=-1)
@click.option("-o", "--output", "output", required=True, type=click.Path(dir_okay=False),
              help="The bundle to write (a new file; .tar.zst).")
@session_filters
@click.option("--all", "all_", is_flag=True, help="Every session of every tool (or of --tool).")
@click.option("--json", "as_json", is_flag=True, help="Print what was packed as JSON.")
@click.pass_obj
def command(ctx, sessions, output, tools, cwd, since, until, all_, as_json):
    since_ts = api.parse_since(since) if since else None
    until_ts = api.parse_since(until, flag="--until") if until else None
    refs = api.pack_sessions(ctx.homes, sessions, tools=tools or None, cwd=cwd, since=since_ts, until=until_ts,
                             all_=all_)
    progress = Progress("packing", total=None, enabled=not as_json and not ctx.quiet)
    filters = {"sessions": list(sessions), "tools": list(tools), "cwd": cwd, "since": since, "until": until,
               "all": all_}
    done = api.pack(ctx.homes, refs, output, filters=filters, on_file=progress.step)
    progress.done()
    if as_json:
        from histmig.cli.jsonout import envelope
        emit_json(envelope("pack", done.to_dict()))
        return 0
    for name, t in done.tools.items():
        versions = f" (recorded by {', '.join(t['versions'])})" if t["versions"] else ""
        info(ctx, f"{name:<12} {t['sessions']:>6} session(s){versions}")
    info(ctx, f"packed {done.sessions} session(s), {done.files} file(s), {fmt_size(done.bytes)} into {done.path}")
    return 0
