"""The command line. The only package that prints or picks an exit code.

Each command lives in its own module (``histmig/cli/<command>.py``) exposing a click command
named ``command``; ``COMMANDS`` (histmig/cli/commands.py) is the one explicit table of them.
"""
from __future__ import annotations

import importlib
import sys

import click

from histmig import __version__
from histmig.cli.commands import COMMANDS
from histmig.cli.common import Context, PipeClosed, run_guarded
from histmig.tools import home_flags


class LazyGroup(click.Group):
    """Imports a command's module only when that command is listed or run."""

    def list_commands(self, ctx):
        return list(COMMANDS)

    def get_command(self, ctx, name):
        module = COMMANDS.get(name)
        if module is None:
            return None
        mod = importlib.import_module(f"histmig.cli.{module}")
        for cmd in getattr(mod, "COMMANDS", [getattr(mod, "command", None)]):
            if cmd is not None and cmd.name == name:
                return cmd
        return None

    def parse_args(self, ctx, args):
        return super().parse_args(ctx, hoist_global_options(self, ctx, list(args)))

    def invoke(self, ctx):
        # click turns a closed pipe into exit 1 on its own; `histmig scan | head -1` is a success
        try:
            return super().invoke(ctx)
        except BrokenPipeError as e:
            raise PipeClosed from e


def hoist_global_options(group: click.Group, ctx, args: list[str]) -> list[str]:
    """Move the group's options written after the command to before it, so `histmig scan --home X`
    means `histmig --home X scan` (docs/README.head.md, "Where histmig looks"). An option the command defines
    itself stays with the command; nothing after `--` moves."""
    takes_value = _takes_value(group)
    at = _command_at(args, takes_value)
    if at >= len(args):
        return args
    cmd = group.get_command(ctx, args[at])
    own = {n for p in cmd.params for n in getattr(p, "opts", []) + getattr(p, "secondary_opts", [])}
    head, rest, tail = args[:at], [args[at]], args[at + 1:]
    i = 0
    while i < len(tail):
        arg = tail[i]
        if arg == "--":
            rest += tail[i:]
            break
        name = arg.split("=", 1)[0] if arg.startswith("--") else arg
        if name.startswith("-") and not name.startswith("--") and len(set(name[1:])) == 1:
            name = name[:2]                                   # -vv counts like -v -v
        if name in takes_value and name not in own:
            take = 2 if takes_value[name] and "=" not in arg else 1
            head += tail[i:i + take]
            i += take
            continue
        rest.append(arg)
        i += 1
    return head + rest


def _takes_value(group: click.Group) -> dict[str, bool]:
    takes_value = {}
    for p in group.params:
        if isinstance(p, click.Option) and not p.is_eager:
            for name in p.opts + p.secondary_opts:
                takes_value[name] = not (p.is_flag or p.count)
    return takes_value


def _command_at(args: list[str], takes_value: dict[str, bool]) -> int:
    """Where the command's name is in ``args`` (``len(args)`` if none): past the options before it."""
    at = 0
    while at < len(args) and args[at] not in COMMANDS:
        at += 2 if takes_value.get(args[at]) else 1
    return at


# one type for every directory option: click.Path asks gettext for its name ("directory") each time one is
# made, a translation look-up (a stat or more) and gettext's import of ``locale`` (docs/bench.md, "Start-up, fifth round")
DIRECTORY = click.Path(file_okay=False)


def _home_options(command):
    """``--codex-home`` ...: one option per home a row of the tool table declares, in table order."""
    for spec in reversed(home_flags()):
        command = click.option(f"--{spec.flag}", spec.keyword, type=DIRECTORY,
                               help=spec.help)(command)
    return command


HELP = """Move AI coding-agent chat history between tools and through change, without losing a byte.

\b
Examples:
  histmig scan
  histmig flip openai my-provider           # dry run: what would change
  histmig flip openai my-provider --apply
  histmig move ~/code/app ~/work/app --apply
  histmig convert --to claude-code 019e9625        # dry run: one Codex session as a Claude Code one
  histmig undo
"""


@click.group(cls=LazyGroup, help=HELP, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="histmig")
@click.option("--home", type=DIRECTORY, help="Treat DIR as $HOME for every tool.")
@_home_options
@click.option("--state-dir", type=DIRECTORY,
              help="histmig's journal and backups "
                   "(default $HISTMIG_STATE_DIR, $XDG_STATE_HOME/histmig or ~/.local/state/histmig).")
@click.option("-q", "--quiet", is_flag=True, help="Print only errors and the final result.")
@click.option("-v", "--verbose", count=True, help="Print more detail (repeat for more).")
@click.pass_context
def cli(ctx, home, state_dir, quiet, verbose, **tool_homes):
    ctx.obj = Context.create(home=home, state_dir=state_dir, quiet=quiet, verbose=verbose, **tool_homes)


def main(argv: list[str] | None = None) -> None:
    if argv is None:
        # A process that runs one command: what its start-up imported (click, the command table, the
        # tool table) lives until it exits, so the cyclic collector stops walking it (a warm scan of
        # 8,000 sessions spent 15 ms in one full collection of it; docs/bench.md, the run 23
        # paragraph). Not for a caller running commands in its own process (the tests): what it froze
        # would never be collected.
        import gc
        gc.freeze()
    sys.exit(run_guarded(cli, argv))
