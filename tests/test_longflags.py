"""start5 (issues 15, 16): the short flags spelt long before click parses (histmig/cli/longflags.py) mean what
click makes of the arguments as typed: the same values, the same errors, for any arguments."""
from __future__ import annotations

import click
from hypothesis import given, settings
from hypothesis import strategies as st

from histmig.cli import cli, long_flags
from histmig.cli.longflags import spell_long
from histmig.cli.pack import command as pack
from histmig.cli.scan import command as scan
from histmig.cli.search import command as search

# tokens a command line may hold: every option of these commands (short, long, with "="), clusters, values,
# "--", "-", words that look like options and the commands' names
WORDS = ["-q", "-v", "-vv", "-qv", "--quiet", "--verbose", "--home", "--home=/h", "/h", "--state-dir", "-s", "-i",
         "-E", "-l", "-il", "-sE", "--regex", "--case-sensitive", "--ignore-case", "--files-with-matches",
         "--tool", "pi", "--json", "--no-index", "-o", "-oX", "--output", "b.tar.zst", "--all", "--", "-", "-x",
         "--bogus", "-q=1", "--quiet=1", "hello", "scan", "search", "pack", "--limit", "3", "-h", "--help"]
args_st = st.lists(st.sampled_from(WORDS), max_size=8)


def parsed(cmd: click.Command, args: list[str], parse=None):
    """What click makes of ``args`` for ``cmd``: its values and left-over arguments, or its error."""
    ctx = click.Context(cmd, info_name=cmd.name, resilient_parsing=False)
    try:
        with ctx:
            rest = (parse or cmd.parse_args)(ctx, list(args))
            return "ok", dict(ctx.params), rest, list(ctx.args), list(getattr(ctx, "_protected_args", []))
    except click.exceptions.Exit as e:        # --help
        return "exit", e.exit_code
    except click.ClickException as e:
        return "error", type(e).__name__, e.format_message()


@settings(max_examples=400, deadline=None)
@given(args_st)
def test_a_command_parses_the_long_spelling_as_the_short(args):
    for cmd in (search, scan, pack):
        assert parsed(cmd, spell_long(args, cmd)) == parsed(cmd, args), (cmd.name, args)


@settings(max_examples=400, deadline=None)
@given(args_st)
def test_the_group_parses_the_long_spelling_as_the_short(args):
    plain = lambda ctx, a: click.Group.parse_args(cli, ctx, a)          # noqa: E731 (click's own, no rewriting)
    assert parsed(cli, spell_long(args, cli), plain) == parsed(cli, args, plain), args


def test_what_is_rewritten():
    ctx = click.Context(cli, info_name="histmig")
    assert long_flags(cli, ctx, ["-q", "-v", "scan", "--tool", "pi", "--json"]) == \
        ["--quiet", "--verbose", "scan", "--tool", "pi", "--json"]
    assert long_flags(cli, ctx, ["-q", "search", "-s", "-l", "hello"]) == \
        ["--quiet", "search", "--case-sensitive", "--files-with-matches", "hello"]
    assert long_flags(cli, ctx, ["-q", "--version"]) == ["--quiet", "--version"]
    # a value is never rewritten; what cannot be followed (a cluster, "--") ends the rewriting
    assert long_flags(cli, ctx, ["--home", "-q", "scan"]) == ["--home", "-q", "scan"]
    assert long_flags(cli, ctx, ["pack", "-o", "-q", "-q"]) == ["pack", "-o", "-q", "-q"]
    assert long_flags(cli, ctx, ["-vq", "-q", "search", "--", "-s"]) == ["-vq", "-q", "search", "--", "-s"]
