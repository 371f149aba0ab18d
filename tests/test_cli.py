"""CLI conventions shared by every command."""
from __future__ import annotations

import json
import re
from pathlib import Path

import click
import pytest
from clirun import histmig

from histmig import __version__
from histmig.cli import cli

ROOT = Path(__file__).resolve().parent.parent


def all_commands() -> dict[str, click.Command]:
    ctx = click.Context(cli)
    return {name: cli.get_command(ctx, name) for name in cli.list_commands(ctx)}


def test_every_issue_command_exists():
    assert {"scan", "show", "flip", "move", "convert", "doctor", "apply", "undo", "log", "recover",
            "demo"} <= set(all_commands())


@pytest.mark.parametrize("name", sorted(all_commands()))
def test_every_command_help_shows_an_example(name):
    result = histmig(name, "--help")
    assert result.exit_code == 0
    assert "Example" in result.stdout and f"histmig {name}" in result.stdout


def test_version_and_python_m_entry_point():
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-m", "histmig", "--version"], capture_output=True, text=True)
    assert out.returncode == 0 and __version__ in out.stdout


def test_usage_error_exits_2_with_message_on_stderr():
    result = histmig("scan", "--tool", "nope")
    assert result.exit_code == 2 and "nope" in result.stderr and result.stdout == ""


def test_json_output_has_no_colour_even_when_forced(monkeypatch, tmp_path):
    monkeypatch.setenv("FORCE_COLOR", "1")
    result = histmig("--home", tmp_path, "scan", "--json")
    assert result.exit_code == 0 and "\x1b[" not in result.stdout
    assert json.loads(result.stdout) == {"schema": "histmig.scan/1", "sessions": []}


def test_every_warning_code_in_the_code_is_documented_in_the_manual():
    readme = (ROOT / "docs" / "MANUAL.md").read_text()
    codes = set()
    for path in (ROOT / "histmig").rglob("*.py"):
        text = path.read_text()
        codes |= set(re.findall(r'Warning\(\s*"([a-z0-9][a-z0-9._-]+)"', text))
        codes |= set(re.findall(r'Skip\([^)]*code="([a-z0-9][a-z0-9._-]+)"', text, re.S))
        codes |= set(re.findall(r'\bwarn\(\s*"([a-z0-9][a-z0-9._-]+)"', text))
    assert codes, "found no warning codes at all"
    missing = sorted(c for c in codes if f"`{c}`" not in readme)
    assert not missing, f"undocumented warning codes: {missing}"


class FakeTty:
    """A stream that says it is a terminal (colour and progress tests)."""

    def __init__(self):
        self.text = ""

    def isatty(self):
        return True

    def write(self, s):
        self.text += s

    def flush(self):
        pass


def progress_on_a_terminal(monkeypatch, step_bytes: int):
    """A Progress of 200 files on a fake terminal, 100 steps of ``step_bytes`` made 1.5 s after it started."""
    import time

    from histmig.cli import common
    fake = FakeTty()
    monkeypatch.setattr(common.sys, "stderr", fake)
    clock = iter([100.0] + [101.5] * 1000)
    monkeypatch.setattr(time, "monotonic", lambda: next(clock))
    p = common.Progress("applying", total=200)
    for _ in range(100):
        p.step(step_bytes)
    return p, fake


def test_progress_line_appears_on_a_terminal_after_a_second_and_is_cleared(monkeypatch):
    p, fake = progress_on_a_terminal(monkeypatch, 1_000_000)
    assert "applying: 100/200 files" in fake.text and "ETA" in fake.text and "MB" in fake.text
    p.done()
    assert fake.text.endswith("\r")


def test_no_progress_when_stderr_is_not_a_terminal(monkeypatch, capsys):
    from histmig.cli import common
    p = common.Progress("scanning")
    for _ in range(200):
        p.step(10)
    p.done()
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("argv", [["scan", "--tool", "{t}"], ["doctor", "--tool", "{t}"],
                                  ["move", "/nowhere/a", "/nowhere/b", "--tool", "{t}"],
                                  ["convert", "--to", "{t}", "--all"], ["show", "--tool", "{t}", "zzzz"]])
def test_canonical_tool_names_and_their_aliases_are_accepted_by_every_command(isolated_homes, argv):
    """Issue 13: canonical codex / claude-code / mini-cc / manifest everywhere, aliases everywhere."""
    from clirun import histmig
    for name in ("claude-code", "claude", "Claude_Code", "mini-cc", "mini_cc"):
        r = histmig(*[a.format(t=name) for a in argv])
        assert r.exit_code != 2 or "is not a tool" not in r.stderr, (name, r.stderr)
    r = histmig(*[a.format(t="claud") for a in argv])
    assert r.exit_code == 2 and "is not a tool" in r.stderr


def test_code_comments_cite_documents_that_exist_in_the_repo():
    """Issue 13: every document a source comment cites (``x.md §N``, ``x.md row N``, ``docs/…md``)
    is a file of the repository."""
    import re
    root = Path(__file__).resolve().parent.parent
    cite = re.compile(r'(docs/[\w./-]+\.md)|([\w./-]+\.md)(?=\s*(?:§|rows?\s|"))')
    cited = {(p.name, m.group(1) or m.group(2)) for p in (root / "histmig").rglob("*.py")
             for m in cite.finditer(p.read_text())}
    assert len(cited) > 30
    missing = sorted((f, m) for f, m in cited if not (root / m).is_file())
    assert not missing, missing


@pytest.mark.parametrize("argv", [["move", "/nowhere/a", "/nowhere/b"], ["doctor"], ["convert", "--to", "claude-code", "--all"],
                                  ["scan"]])
def test_a_dry_run_never_loads_the_write_path(isolated_homes, tmp_path, argv):
    """Issue 13 start-up: flip's discipline for move, doctor and convert too (checked on sys.modules)."""
    import subprocess
    import sys
    probe = ("import sys\nfrom histmig.cli.common import run_guarded\nfrom histmig.cli import cli\n"
             "code = run_guarded(cli, sys.argv[1:])\n"
             "print(sorted(m for m in sys.modules if m.startswith(('histmig.apply', 'histmig.apply.journal'))), code)\n")
    out = subprocess.run([sys.executable, "-c", probe, *argv], capture_output=True, text=True, cwd=tmp_path,
                         check=True).stdout
    loaded, code = out.strip().splitlines()[-1].rsplit(" ", 1)
    assert loaded == "[]" and code in ("0", "1", "3"), out
