"""``histmig show SESSION``: the conversation as readable text."""
from __future__ import annotations

import click

from histmig.catalog import resolve
from histmig.cli.common import TOOL, emit_json
from histmig.native import session_to_native
from histmig.registry import adapter
from histmig.render import render_json, render_text

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
    ref = resolve(ctx.homes, session, tools or None)
    sess = adapter(ref.format).read(ref)
    if fmt == "native":
        emit_json(session_to_native(sess))
    elif fmt == "json":
        emit_json(render_json(sess))
    else:
        click.echo(render_text(sess, verbose=ctx.verbose > 0, markdown=fmt == "markdown"), nl=False)
    return 0
