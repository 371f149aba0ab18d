"""``histmig show SESSION``: the conversation as readable text."""
from __future__ import annotations

import click

from histmig import api
from histmig.cli.common import TOOL, echo_chunks, emit_json_stream
from histmig.cli.jsonout import envelope
from histmig.cli.native import native_view
from histmig.cli.render import json_view, write_text

EXAMPLES = """

\b
Examples:
  histmig show 019e9625                 # an id prefix
  histmig show ~/.claude/projects/-home-me-app/5f1c....jsonl
  histmig show 019e9625 --format markdown > chat.md
  histmig show 019e9625 --format native  # lossless dump, every byte kept
"""


@click.command("show", help="Print one session (id, id prefix or path) as readable text." + EXAMPLES)
@click.argument("session")
@click.option("--format", "fmt", type=click.Choice(["text", "markdown", "json", "native"]), default="text",
              show_default=True, help="Output format.")
@click.option("--tool", "tools", multiple=True, type=TOOL, help="Only look among these tools' sessions.")
@click.pass_obj
def command(ctx, session, fmt, tools):
    # streamed: records are read from the file as they are printed (bounded memory, any size)
    sess = api.show(ctx.homes, session, tools=tools or None)
    if fmt == "native":
        emit_json_stream(envelope("show.native", native_view(sess)))
    elif fmt == "json":
        emit_json_stream(envelope("show", json_view(sess)))
    elif fmt == "markdown":     # the renderer `export --to markdown` uses (histmig/toolkit/export/markdown.py)
        with echo_chunks() as write:
            api.write_markdown(sess, write, injected=ctx.verbose > 0)
    else:
        with echo_chunks() as write:
            write_text(sess, write, verbose=ctx.verbose > 0)
    return 0
