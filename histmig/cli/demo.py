"""``histmig demo``: copy samples/ into a temporary home and show what histmig sees and would do."""
from __future__ import annotations

import shlex
import tempfile
from pathlib import Path

import click

from histmig.cli import samples
from histmig.cli.common import diag, info, style

EXAMPLES = """

\b
Examples:
  histmig demo
  histmig demo --keep          # leave the temporary home in place to explore it
"""


def _steps(home: Path, first_cwd: str | None) -> list[list[str]]:
    # the demo goes on after the table: scan pages nothing (a pager would wait for a key mid-demo)
    steps = [["scan", "--no-pager"], ["flip", "--list"], ["flip", "openai", "my-provider"]]
    if first_cwd:
        steps.append(["move", first_cwd, first_cwd.rstrip("/") + "-moved"])
    steps += [["convert", "--to", "claude-code", "--from", "codex"], ["doctor"]]
    return steps


@click.command("demo", help="Install the bundled samples into a temporary home and run scan and the "
                            "flip / move / convert / doctor dry runs against it (nothing real is touched)." + EXAMPLES)
@click.option("--keep", is_flag=True, help="Keep the temporary home and print its path.")
@click.pass_obj
def command(ctx, keep):
    from histmig import api
    from histmig.cli import cli

    tmp = Path(tempfile.mkdtemp(prefix="histmig-demo-"))
    homes = samples.install(tmp)
    info(ctx, style(f"samples installed into a temporary home: {tmp}", bold=True))
    codex_cwds = [r.cwd for r in api.scan(homes, tools=["codex"]) if r.cwd]
    for args in _steps(tmp, codex_cwds[0] if codex_cwds else None):
        full = ["--home", str(tmp), "--state-dir", str(tmp / ".histmig-state"), *args]
        info(ctx, "\n" + style("$ histmig " + " ".join(shlex.quote(a) for a in args), fg="cyan"))
        if cli.get_command(click.get_current_context(), args[0]) is None:
            info(ctx, f"(the {args[0]} command is not available in this build)")
            continue
        try:
            cli.main(args=full, prog_name="histmig", standalone_mode=False)
        except Exception as e:  # a demo step failing must not hide the others
            diag(f"error: {e.describe() if hasattr(e, 'describe') else e}")
    if keep:
        info(ctx, f"\nkept: {tmp}  (try: histmig --home {tmp} scan)")
    else:
        import shutil
        shutil.rmtree(tmp, ignore_errors=True)
    return 0
