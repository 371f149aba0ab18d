"""Issue 14, "Help and messages": one test per rough edge a new user trips over."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
from clirun import histmig
from codex_fixtures import rollout, tid, write_rollout

from histmig.cli import cli
from test_cli import FakeTty, progress_on_a_terminal

EXAMPLE_COMMANDS = ["scan", "show", "flip", "move", "convert", "doctor", "demo"]


def _help(*argv: str) -> str:
    r = histmig(*argv, "--help")
    assert r.exit_code == 0, r.stderr
    return r.stdout


@pytest.mark.parametrize("name", EXAMPLE_COMMANDS)
def test_help_examples_keep_one_line_per_command(name):
    lines = _help(name).splitlines()
    at = lines.index("  Examples:")            # a paragraph of its own, not reflowed into the description
    examples = [x for x in lines[at + 1:] if x.strip()][:2]
    assert all(x.startswith("    histmig ") or x.startswith("    mv ") for x in examples), examples


def test_root_help_shows_a_convert_example():
    assert "  histmig convert --to " in _help()


def test_strip_encrypted_help_says_it_retypes_the_item():
    text = " ".join(_help("flip").split())
    assert "Retype" in text and "null" not in text


def _run(argv, env, **kw):
    return subprocess.run([sys.executable, "-m", "histmig", *argv], env=env, **kw)


def test_scan_piped_into_head_exits_0(isolated_homes):
    codex = isolated_homes["CODEX_HOME"]
    write_rollout(codex, tid(1), rollout(tid(1), turns=3000))   # `show` of it is far over a pipe buffer
    proc = subprocess.Popen([sys.executable, "-m", "histmig", "show", tid(1)], env=dict(os.environ),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.readline()
    proc.stdout.close()                      # what `head -1` does
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 0, err
    assert "Traceback" not in err and "Exception ignored" not in err


@pytest.mark.parametrize("argv", [
    ["scan", "--home", "{h}"], ["scan", "--home={h}", "-v"], ["-q", "scan", "--state-dir", "{h}/st", "--home", "{h}"],
    ["flip", "--list", "--codex-home", "{h}/.codex", "-vv"],
])
def test_global_options_are_accepted_after_the_command(tmp_path, argv):
    r = histmig(*[a.format(h=tmp_path) for a in argv])
    assert r.exit_code == 0, r.stderr
    assert "No such option" not in r.stderr


def test_global_options_after_the_command_mean_the_same_as_before(tmp_path):
    write_rollout(tmp_path / ".codex", tid(7), rollout(tid(7)))
    before = histmig("--home", str(tmp_path), "scan", "--json")
    after = histmig("scan", "--json", "--home", str(tmp_path))
    assert before.exit_code == after.exit_code == 0
    assert before.stdout == after.stdout and tid(7) in after.stdout


def test_an_empty_or_wrong_home_says_where_it_looked(tmp_path):
    (tmp_path / ".codex").mkdir()
    r = histmig("--home", str(tmp_path), "scan")
    assert r.exit_code == 0
    assert "no sessions found in:" in r.stdout
    assert f"codex        {tmp_path / '.codex'}\n" in r.stdout                  # exists, empty
    assert f"{tmp_path / '.mini_cc'}  (does not exist)" in r.stdout
    only = histmig("--home", str(tmp_path), "scan", "--tool", "codex", "--since", "1d")
    assert "no sessions match the filters in:" in only.stdout and ".claude" not in only.stdout


def _demo_home(tmp_path):
    from histmig.cli import samples
    samples.install(tmp_path)
    return tmp_path


def test_convert_apply_prints_how_to_resume_each_new_session(tmp_path):
    import shlex
    home = _demo_home(tmp_path / "h")
    base = ["--home", str(home), "--state-dir", str(tmp_path / "st")]
    r = histmig(*base, "convert", "--to", "claude-code", "--from", "codex", "--apply")
    assert r.exit_code == 0, r.stderr
    hints = r.stdout.split("resume with:\n", 1)[1].splitlines()
    assert hints and all(h.startswith("  cd ") for h in hints)
    for line in hints:
        words = shlex.split(line)
        assert words[2:4] == ["&&", "claude"] and words[4] == "--resume"
        assert list((home / ".claude" / "projects").glob(f"*/{words[5]}.jsonl"))
    back = histmig(*base, "convert", "--to", "codex", "--from", "claude-code", "--apply")
    assert "codex resume " in back.stdout


def _printed(text: str, marker: str) -> list[str]:
    """The command after ``marker`` on the line that has it, split as the shell would."""
    import shlex
    line = next(x for x in text.splitlines() if marker in x)
    return shlex.split(line.split(marker, 1)[1])


def _run_as_printed(words: list[str], env=None):
    assert words[0] == "histmig", words
    return _run(words[1:], dict(env or os.environ), capture_output=True, text=True, timeout=120)


def test_every_printed_follow_up_command_is_complete_and_runs_as_printed(tmp_path):
    home = _demo_home(tmp_path / "h")
    base = ["--home", str(home), "--state-dir", str(tmp_path / "st")]
    flipped = histmig("flip", "openai", "my-provider", "--apply", *base)           # flags after the command
    assert flipped.exit_code == 0, flipped.stderr
    undo = _printed(flipped.stdout, "undo with: ")
    assert undo[1:5] == base and undo[5] == "undo"
    done = _run_as_printed(undo)
    assert done.returncode == 0 and "undone" in done.stdout, done.stderr

    plan = tmp_path / "my plan.json"
    wrote = histmig(*base, "move", "/tmp/histmig-rec/work/app", "/tmp/histmig-rec/work/app2", "--plan-out", plan)
    assert wrote.exit_code == 0, wrote.stderr
    applied = _run_as_printed(_printed(wrote.stderr, "apply with: "))
    assert applied.returncode == 0, applied.stderr
    again = _run_as_printed(_printed(applied.stdout, "undo with: "))
    assert again.returncode == 0 and "undone" in again.stdout, again.stderr


def test_a_shared_state_dir_never_undoes_another_homes_transaction(tmp_path, monkeypatch):
    monkeypatch.setenv("HISTMIG_STATE_DIR", str(tmp_path / "shared"))
    a, b = _demo_home(tmp_path / "a"), _demo_home(tmp_path / "b")
    in_a = histmig("--home", a, "flip", "openai", "my-provider", "--apply")
    in_b = histmig("--home", b, "flip", "openai", "my-provider", "--apply")
    tx_a, tx_b = _printed(in_a.stdout, "undo with: ")[-1], _printed(in_b.stdout, "undo with: ")[-1]
    r = histmig("--home", a, "undo")                   # the latest transaction is b's: not this home's
    assert r.exit_code == 0, r.stderr
    assert f"transaction {tx_a} undone" in r.stdout and tx_b not in r.stdout
    assert f"transaction {tx_b} undone" in histmig("--home", b, "undo").stdout


def test_flip_old_provider_typo_gives_a_did_you_mean_with_the_command_to_run(tmp_path):
    home = _demo_home(tmp_path / "h")
    r = histmig("--home", home, "flip", "openia", "my-provider", "--apply")
    assert r.exit_code == 1 and "did you mean 'openai'?" in r.stderr
    fixed = _printed(r.stderr, "did you mean: ")
    assert fixed == ["histmig", "--home", str(home), "flip", "openai", "my-provider", "--apply"]
    assert _run_as_printed(fixed[:-1]).returncode == 0          # the dry run of the corrected line
    new = histmig("--home", home, "flip", "openai", "my-provder")
    assert _printed(new.stderr, "did you mean: ")[-2:] == ["openai", "my-provider"]


def _stderr_on_a_tty(monkeypatch, *argv):
    import contextlib
    import io
    tty = FakeTty()
    monkeypatch.setattr(sys, "stderr", tty)
    with contextlib.redirect_stdout(io.StringIO()):
        from histmig.cli.common import run_guarded
        code = run_guarded(cli, [str(a) for a in argv])
    return code, tty.text


def test_error_warning_and_skip_are_coloured_on_a_terminal(monkeypatch, tmp_path):
    from histmig.cli.common import coloured
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setattr(sys, "stderr", FakeTty())
    for word in ("error:", "warning:", "skip:"):
        assert coloured(f"{word} x").startswith("\x1b[") and coloured(f"{word} x").endswith(" x")
    assert coloured("wrote plan to x") == "wrote plan to x"
    code, err = _stderr_on_a_tty(monkeypatch, "show", "nope", "--home", tmp_path)
    assert code == 1 and err.startswith("\x1b[31m\x1b[1merror:\x1b[0m "), err


def test_no_colour_with_no_color_or_json(monkeypatch, tmp_path):
    monkeypatch.setenv("NO_COLOR", "1")
    assert "\x1b[" not in _stderr_on_a_tty(monkeypatch, "--home", tmp_path, "show", "nope")[1]
    monkeypatch.delenv("NO_COLOR")
    code, err = _stderr_on_a_tty(monkeypatch, "--home", tmp_path, "scan", "--since", "bogus", "--json")
    assert code != 0 and err.startswith("error: "), err


def test_apply_skip_lines_name_the_session_once_and_counts_share_one_vocabulary(tmp_path):
    home = _demo_home(tmp_path / "h")
    plan = tmp_path / "flip.json"
    assert histmig("--home", home, "flip", "openai", "my-provider", "--plan-out", plan).exit_code == 0
    rollout_file = sorted((home / ".codex" / "sessions").rglob("*.jsonl"))[0]
    with open(rollout_file, "ab") as fh:                  # a client appends after the plan
        fh.write(b'{"timestamp":"2026-12-01T00:00:00Z","type":"event_msg","payload":{"type":"x"}}\n')
    r = histmig("--home", home, "apply", plan)
    assert r.exit_code == 3, r.stderr
    lines = r.stderr.splitlines()
    cause = next(i for i, x in enumerate(lines) if x.startswith(f"skip: {rollout_file}: "))
    assert lines[cause + 1].startswith("  skipped with it (the rest of its session): ")
    assert ".sqlite" in lines[cause + 1]
    assert not [x for x in lines if x.startswith("skip:") and ".sqlite" in x.split(": ")[1]]
    planned = histmig("--home", home, "flip", "openai", "my-provider", "--exact").stdout
    assert "change(s)" not in planned
    applied = next(x for x in r.stdout.splitlines() if x.startswith("applied: "))
    files = int(applied.split()[1])
    assert " rows in " in applied and "change(s)" not in r.stdout
    log = histmig("--home", home, "log").stdout
    assert f"{files} files" in log
    undone = histmig("--home", home, "undo").stdout
    assert f"undone: {files} files" in undone


def test_flip_dry_run_says_how_many_more_files_than_listed(tmp_path):
    home = _demo_home(tmp_path / "h")
    out = histmig("--home", home, "flip", "openai", "my-provider").stdout
    listed = [x for x in out.splitlines() if x.startswith("  01")]
    assert len(listed) == 5 and "  ... and 1 more file; -v lists up to 10" in out
    assert "more file" not in histmig("--home", home, "-v", "flip", "openai", "my-provider").stdout


def test_apply_progress_never_says_0_0_mb(monkeypatch):
    _, fake = progress_on_a_terminal(monkeypatch, 0)      # apply counts files, not bytes
    assert "applying: 100/200 files, ETA" in fake.text and "MB" not in fake.text


@pytest.mark.parametrize("argv", [["move", "/w/proj", "/w/new"], ["flip", "openai", "my-provider", "--exact", "--force"]])
def test_long_planning_shows_progress_with_totals_on_a_terminal(monkeypatch, tmp_path, argv):
    import itertools
    import time
    for n in range(120):
        write_rollout(tmp_path / ".codex", tid(n), rollout(tid(n), cwd="/w/proj"))
    ticks = itertools.count(100.0, 0.6)                     # every reading of the clock: 0.6 s later
    monkeypatch.setattr(time, "monotonic", lambda: next(ticks))
    monkeypatch.delenv("NO_COLOR", raising=False)
    code, err = _stderr_on_a_tty(monkeypatch, "--home", tmp_path, *argv)
    assert code == 0, err
    assert "files read" in err and "\rplanning" in err
    if argv[0] == "move":
        from histmig.tools import names
        assert "planning (codex, " in err and f"/{len(names())}): " in err     # which tool of how many
    else:                                                                # which tool, and files read of how many
        assert "planning (codex, 1/1): 100/120 files read" in err and "ETA" in err
    quiet = _stderr_on_a_tty(monkeypatch, "--home", tmp_path, *argv, "--json")[1]
    assert "planning" not in quiet


def test_flip_planning_says_how_many_files_it_reads_whole(tmp_path):
    """The library side of the total: after the census, ``("files", n)``, then one ``file`` per target."""
    from histmig.core import progress
    from histmig.tools import resolve_homes
    from histmig.verbs.flip import plan_flip
    for n in range(7):
        write_rollout(tmp_path / ".codex", tid(n), rollout(tid(n), "zz" if n == 6 else "openai"))
    events = []
    previous = progress.listen(lambda event, value: events.append((event, value)))
    try:
        plan_flip(resolve_homes(codex_home=tmp_path / ".codex", env={"HOME": str(tmp_path)}), "openai", "my-provider")
    finally:
        progress.listen(previous)
    assert events[0] == ("step", ("codex", 1, 1))
    at = events.index(("files", 6))
    assert [e for e, _ in events[1:at]] == ["file"] * 7                  # the census: line 1 of every rollout
    assert [e for e, _ in events[at + 1:]] == ["file"] * 6               # then each of OLD's, whole


def test_doctor_groups_cwd_missing_under_their_moved_parent_with_one_move_command(tmp_path):
    home = tmp_path / "h"
    for n, name in enumerate(["api", "web", "cli"]):
        (home / "work" / name).mkdir(parents=True)                 # the projects now live here
        write_rollout(home / ".codex", tid(n), rollout(tid(n), cwd=str(home / "code" / name)))
    r = histmig("--home", home, "doctor", "--tool", "codex")
    assert r.exit_code == 1
    lines = [x for x in r.stdout.splitlines() if "cwd-missing" in x]
    assert lines == [f"  codex.cwd-missing (3): 3 folders below {home / 'code'}, which no longer exists; "
                     f"likely moved to {home / 'work'}"]
    each = histmig("--home", home, "-v", "doctor", "--tool", "codex").stdout       # -v names every folder
    assert all(f"recorded in {home / 'code' / name}" in each for name in ("api", "web", "cli"))
    fix = _printed(r.stdout, "fix: ")
    assert fix == ["histmig", "--home", str(home), "move", str(home / "code"), str(home / "work"), "--apply"]
    assert _run_as_printed(fix).returncode == 0
    assert histmig("--home", home, "doctor", "--tool", "codex").exit_code == 0          # healthy after it


def test_doctor_does_not_guess_where_a_parent_went_from_one_project_in_four(tmp_path):
    """One look-alike folder for one project of four is no evidence that the whole parent moved there."""
    home = tmp_path / "h"
    (home / "work" / "api").mkdir(parents=True)                    # only api has a look-alike
    for n, name in enumerate(["api", "web", "cli", "docs"]):
        write_rollout(home / ".codex", tid(n), rollout(tid(n), cwd=str(home / "code" / name)))
    r = histmig("--home", home, "doctor", "--tool", "codex")
    [line] = [x for x in r.stdout.splitlines() if "cwd-missing" in x]
    assert f"4 folders below {home / 'code'}, which no longer exists" in line and "likely moved" not in line
