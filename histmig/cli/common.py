"""Shared CLI plumbing: the context object, output helpers, error → exit-code mapping."""
from __future__ import annotations

import contextlib
import functools
import io
import os
import re
import sys
from typing import Any, Iterable

import click

from histmig.cli.commands import HOME_COMMANDS
from histmig.core.diagnostics import EXIT_OK, EXIT_USAGE, AmbiguousError, HistmigError, Skip, Warning
from histmig.core.homes import Homes
from histmig.core.valueclass import value
from histmig.tools import home_flags, resolve_homes


@value
class Context:
    """What every command gets: the homes and the output flags."""

    homes: Homes
    quiet: bool = False
    verbose: int = 0

    def __init__(self, homes: Homes, quiet: bool = False, verbose: int = 0) -> None:
        self.homes = homes
        self.quiet = quiet
        self.verbose = verbose

    @classmethod
    def create(cls, *, quiet=False, verbose=0, **home_flags) -> "Context":
        homes = resolve_homes(**home_flags)
        _GIVEN[:] = given_flags(home_flags)
        from histmig.core.spool import SPOOL  # noqa: PLC0415
        SPOOL.prefer(homes.state)          # long plan columns on disk beside the journal (core/spool.py)
        return cls(homes=homes, quiet=quiet, verbose=verbose)


# The home and state-dir flags of the running command, absolute, so a printed follow-up command
# ("undo with: histmig ...") reaches the same homes and journal when run as printed (docs/safety.md,
# "Follow-up commands"). Set by Context.create, cleared by run_guarded: one command per process.
_GIVEN: list[str] = []


@functools.cache
def _command_pattern() -> re.Pattern[str]:
    """``histmig <command>`` for every command that reads the homes; compiled when a follow-up command is
    printed, not at start-up (an alternation of 17 names: ~1.2 M instructions, 0.5 % of ``--version``)."""
    return re.compile(r"\bhistmig (?=(?:" + "|".join(HOME_COMMANDS) + r")\b)")


def given_flags(flags: dict) -> list[str]:
    """The home and state-dir options given, each as ``--name ABSOLUTE-PATH``."""
    out: list[str] = []
    for key in ("home", *(spec.keyword for spec in home_flags()), "state_dir"):   # resolve_homes' keywords
        if flags.get(key) is not None:
            out += ["--" + key.replace("_", "-"), os.path.abspath(os.path.expanduser(os.fspath(flags[key])))]
    return out


def complete(text: str) -> str:
    """``text`` with this run's home and state-dir flags put into every ``histmig <command>`` it names."""
    if not _GIVEN:
        return text
    import shlex        # (only a command that prints a follow-up command needs it)
    flags = shlex.join(_GIVEN) + " "
    return _command_pattern().sub(lambda m: "histmig " + flags, text)


def use_color(stream=None) -> bool:
    """Colour only on a terminal and never with NO_COLOR (https://no-color.org)."""
    stream = stream or sys.stdout
    return "NO_COLOR" not in os.environ and hasattr(stream, "isatty") and stream.isatty()


def style(text: str, **kw) -> str:
    return click.style(text, **kw) if use_color() else text


def emit_json(data: Any) -> None:
    """Machine output: one JSON document on stdout, no colour, no progress."""
    import orjson       # (not at start-up: ``--version`` and ``--help`` print no JSON)
    click.echo(orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS,
                            default=json_default).decode())


def emit_json_stream(data: Any) -> None:
    """:func:`emit_json` written a piece at a time (``Lazy`` lists: see histmig.jsonio.jsonstream)."""
    from histmig.jsonio.jsonstream import write_json
    with echo_chunks() as write:
        write_json(data, write, default=json_default)
        write("\n")


@contextlib.contextmanager
def echo_chunks(size: int = 1 << 16):
    """A ``write(text)`` that prints through click.echo in pieces of about ``size`` characters
    (echo flushes on every call; a large output is written as it is made, never held)."""
    buf: list[str] = []
    held = 0

    def write(text: str) -> None:
        nonlocal held
        if len(text) >= size:           # a large piece goes out as it is, not copied into a join
            if buf:
                click.echo("".join(buf), nl=False)
                buf.clear()
                held = 0
            click.echo(text, nl=False)
            return
        buf.append(text)
        held += len(text)
        if held >= size:
            click.echo("".join(buf), nl=False)
            buf.clear()
            held = 0

    yield write
    if buf:
        click.echo("".join(buf), nl=False)


def json_default(obj):
    if hasattr(obj, "to_dict"):
        return obj.to_dict()
    if isinstance(obj, os.PathLike):
        return os.fspath(obj)
    if isinstance(obj, (set, frozenset)):
        return sorted(obj)
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


def info(ctx: Context | None, message: str) -> None:
    """Human output on stdout unless --quiet."""
    if ctx is None or not ctx.quiet:
        click.echo(message)


def diag(message: str) -> None:
    """Diagnostics go to stderr; a command they suggest gets this run's home flags (:func:`complete`)."""
    click.echo(coloured(complete(message)), err=True)


# the prefix of a diagnostic line -> its colour on a terminal (docs/safety.md, "Colour")
_COLOURS = {"error:": "red", "warning:": "yellow", "skip:": "magenta", "lossy:": "yellow"}


def coloured(message: str) -> str:
    """``message`` with its ``error:``/``warning:``/``skip:`` prefix coloured when stderr is a
    terminal, never with NO_COLOR or in a ``--json`` run (whose stderr a program may read)."""
    word = message.split(" ", 1)[0]
    if word not in _COLOURS or not use_color(sys.stderr) or _json_run():
        return message
    return click.style(word, fg=_COLOURS[word], bold=True) + message[len(word):]


def _json_run() -> bool:
    ctx = click.get_current_context(silent=True)
    return _JSON_ARGV[0] or (ctx is not None and bool(ctx.params.get("as_json")))


_JSON_ARGV = [False]        # set by run_guarded: errors print after click's context is gone


def print_warnings(items: Iterable[Warning | Skip]) -> None:
    """One line per warning or skip; a line said several times (each row of a locked database is a
    skip of its own) is printed once, with how many times it was said."""
    items = list(items)
    followers = _followers(items)
    lines: dict[str, list] = {}
    for item in items:
        if isinstance(item, Skip) and item.code == "session-skipped" and _cause(item) in followers:
            continue                      # said once, under the skip that caused it
        lines.setdefault(item.describe() if isinstance(item, Skip) else "warning: " + item.describe(), []).append(item)
    for line, said in lines.items():
        diag(line if len(said) == 1 else f"{line} ({len(said):,} times)")
        if isinstance(said[0], Skip) and said[0].path in followers:
            diag("  skipped with it (the rest of its session): " + ", ".join(followers[said[0].path]))


def _cause(skip: Skip) -> str:
    return skip.reason.rpartition("(see ")[2].removesuffix(")")


def _followers(items: list) -> dict[str, list[str]]:
    """cause path -> the files and databases skipped with its session (apply/skipping.py names the
    cause in each ``session-skipped`` reason), when the cause is among ``items``."""
    causes = {i.path for i in items if isinstance(i, Skip) and i.code != "session-skipped"}
    out: dict[str, list[str]] = {}
    for i in items:
        if isinstance(i, Skip) and i.code == "session-skipped" and _cause(i) in causes:
            out.setdefault(_cause(i), [])
            if i.path not in out[_cause(i)]:
                out[_cause(i)].append(i.path)
    return out


class PipeClosed(Exception):
    """The reader of stdout went away (``histmig scan | head -1``): not an error."""


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush does not fail on the closed pipe
    (the recipe in the Python docs, "Note on SIGPIPE")."""
    try:
        fd = os.open(os.devnull, os.O_WRONLY)
        os.dup2(fd, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        pass                            # not a real file (tests capture into a StringIO)


def run_guarded(group: click.Group, argv: list[str] | None) -> int:
    """Run the click group; turn library errors into ``error: ...`` and an exit code."""
    _GIVEN.clear()
    _JSON_ARGV[0] = "--json" in (sys.argv[1:] if argv is None else argv)
    try:
        rv = group.main(args=argv, prog_name="histmig", standalone_mode=False)
        return rv if isinstance(rv, int) else EXIT_OK
    except AmbiguousError as e:
        diag(f"error: {e.describe()}")
        for c in e.candidates:
            diag(f"  {c}")
        return e.exit_code
    except HistmigError as e:
        diag(f"error: {e.describe()}")
        return e.exit_code
    except (BrokenPipeError, PipeClosed):
        _silence_stdout()
        return EXIT_OK
    except OSError as e:   # the library names its errors; this is the net under a raw one
        where = f"{os.fsdecode(e.filename)}: " if e.filename else ""
        diag(f"error: {where}{e.strerror or e}")
        return 1
    except click.exceptions.Abort:
        diag("aborted")
        return 1
    except click.ClickException as e:
        e.show()
        return EXIT_USAGE if e.exit_code == 2 else e.exit_code
    except click.exceptions.Exit as e:
        return e.exit_code
    except MemoryError:     # readers stream; what is still built whole names itself here, not in a traceback
        diag("error: out of memory (a single record or converted session too large for this machine's limit)")
        return 1


class Progress:
    """A progress line on stderr for runs over about a second, only when stderr is a terminal."""

    def __init__(self, label: str, *, total: int | None = None, enabled: bool = True, unit: str = "files"):
        import time
        self.label, self.total, self.count, self.bytes, self.unit = label, total, 0, 0, unit
        self.start = time.monotonic()
        self.enabled = enabled and sys.stderr.isatty()
        self.shown = False

    def step(self, nbytes: int = 0) -> None:
        import time
        self.count += 1
        self.bytes += nbytes
        if not self.enabled or self.count % 50:
            return
        elapsed = time.monotonic() - self.start
        if elapsed < 1.0:
            return
        eta = ""
        if self.total:
            rate = self.count / elapsed
            eta = f", ETA {max(0, (self.total - self.count) / rate):.0f}s"
        of = f"/{self.total}" if self.total else ""
        size = f", {self.bytes / 1e6:.1f} MB" if self.bytes else ""    # apply counts files, not bytes
        sys.stderr.write(f"\r{self.label}: {self.count}{of} {self.unit}{size}{eta}   ")
        sys.stderr.flush()
        self.shown = True

    def restart(self, total: int | None) -> None:
        """Count again from 0, towards ``total``, the ETA from now (a planner's second phase)."""
        import time
        self.count, self.bytes, self.total, self.start = 0, 0, total, time.monotonic()

    def done(self) -> None:
        if self.shown:
            sys.stderr.write("\r" + " " * 70 + "\r")
            sys.stderr.flush()


@contextlib.contextmanager
def planning_progress(ctx: Context, *, enabled: bool = True):
    """Progress on stderr while a long plan is made (histmig/core/progress.py): files read (of how
    many, when the planner says), their size and, for a planner made of parts (move, flip: one per
    tool), which part of how many."""
    from histmig.core import progress as events
    shown = Progress("planning", enabled=enabled and not ctx.quiet, unit="files read")

    def listener(event: str, value) -> None:
        if event == "file":
            shown.step(value or 0)
        elif event == "step":
            name, n, total = value
            shown.label = f"planning ({name}, {n}/{total})"
        elif event == "files":                # the files read from here on, of this many
            shown.restart(value)
    if not shown.enabled:                 # not a terminal: the readers pay nothing
        yield
        return
    previous = events.listen(listener)
    try:
        yield
    finally:
        events.listen(previous)
        shown.done()


class ToolName(click.ParamType):
    """A tool name: the canonical ``codex``, ``claude-code``, ``mini-cc``, ``manifest``, or one of
    their aliases (``claude``, ``mini_cc``, ...); the command always gets the canonical one."""

    name = "tool"

    def convert(self, value, param, ctx):
        from histmig.tools import canonical, names
        try:
            return canonical(value)
        except HistmigError:
            self.fail(f"{value!r} is not a tool (choose from {', '.join(names())})", param, ctx)

    def get_metavar(self, param, *args, **kwargs) -> str:
        from histmig.tools import names
        return f"[{'|'.join(names())}]"


TOOL = ToolName()


def session_filters(command):
    """The filters scan's rows are chosen by, as ``search``, ``export`` and ``pack`` take them:
    ``--tool`` (repeatable), ``--cwd``, ``--since``, ``--until`` (docs/scan-show.md)."""
    options = (
        click.option("--tool", "tools", multiple=True, type=TOOL, help="Only these tools (repeatable)."),
        click.option("--cwd", "cwd", type=click.Path(), help="Only sessions whose cwd is PATH or lies below it."),
        click.option("--since", help="Only sessions updated since a date (2026-11-01) or a duration (7d, 12h)."),
        click.option("--until", help="Only sessions updated until a date (a date alone: the end of that day) "
                     "or a duration ago (30d)."))
    for option in reversed(options):       # click applies decorators bottom-up: keep this order in --help
        command = option(command)
    return command
