"""The command line. The only package that prints or picks an exit code.

Each command lives in its own module (``histmig/cli/<command>.py``) exposing a click command
named ``command``; ``COMMANDS`` below is the one explicit table of them.
"""
from __future__ import annotations

import importlib
import sys

import click

from histmig import __version__
from histmig.cli.common import Context, run_guarded

# module name -> command name, in the order ``histmig --help`` lists them
COMMANDS = {
    "scan": "scan",
    "show": "show",
    "flip": "flip",
    "move": "move",
    "convert": "convert",
    "doctor": "doctor",
    "tx": None,        # apply, undo, log, recover (several commands in one module)
    "demo": "demo",
}


class LazyGroup(click.Group):
    """Imports command modules on demand so ``histmig scan`` does not import the converter."""

    def _modules(self):
        for mod_name in COMMANDS:
            try:
                yield importlib.import_module(f"histmig.cli.{mod_name}")
            except ModuleNotFoundError as e:  # a command not built yet
                if e.name != f"histmig.cli.{mod_name}":
                    raise

    def _all(self) -> dict[str, click.Command]:
        found: dict[str, click.Command] = {}
        for mod in self._modules():
            for cmd in getattr(mod, "COMMANDS", [getattr(mod, "command", None)]):
                if cmd is not None:
                    found[cmd.name] = cmd
        return found

    def list_commands(self, ctx):
        return list(self._all())

    def get_command(self, ctx, name):
        return self._all().get(name)


HELP = """Move AI coding-agent chat history between tools and through change, without losing a byte.

\b
Examples:
  histmig scan
  histmig flip openai my-provider           # dry run: what would change
  histmig flip openai my-provider --apply
  histmig move ~/code/app ~/work/app --apply
  histmig undo
"""


@click.group(cls=LazyGroup, help=HELP, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="histmig")
@click.option("--home", type=click.Path(file_okay=False), help="Treat DIR as $HOME for every tool.")
@click.option("--codex-home", type=click.Path(file_okay=False), help="Codex home (default $CODEX_HOME or ~/.codex).")
@click.option("--claude-home", type=click.Path(file_okay=False),
              help="Claude Code config home (default $CLAUDE_CONFIG_DIR or ~/.claude).")
@click.option("--mini-cc-home", type=click.Path(file_okay=False), help="mini-cc home (default $MINI_CC_HOME or ~/.mini_cc).")
@click.option("--state-dir", type=click.Path(file_okay=False),
              help="histmig's journal and backups (default $HISTMIG_STATE_DIR, $XDG_STATE_HOME/histmig or ~/.local/state/histmig).")
@click.option("-q", "--quiet", is_flag=True, help="Print only errors and the final result.")
@click.option("-v", "--verbose", count=True, help="Print more detail (repeat for more).")
@click.pass_context
def cli(ctx, home, codex_home, claude_home, mini_cc_home, state_dir, quiet, verbose):
    ctx.obj = Context.create(home=home, codex_home=codex_home, claude_home=claude_home,
                             mini_cc_home=mini_cc_home, state_dir=state_dir,
                             quiet=quiet, verbose=verbose)


def main(argv: list[str] | None = None) -> None:
    sys.exit(run_guarded(cli, argv))
