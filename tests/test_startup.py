"""Issue 13 start-up: each command imports only what it needs (flip's discipline, tests/test_flip_dry_fast.py,
applied to scan, show, move, convert and doctor). Each case runs a dry run or listing in a fresh interpreter
against the bundled samples and checks which histmig modules got imported."""
from __future__ import annotations

import subprocess
import sys

import pytest

from histmig.cli import samples

# the histmig modules, and the standard library's that only some commands need
STDLIB = ("pickle", "sqlite3", "base64", "shlex")   # shlex: only a printed follow-up command needs it (lists2)
# start4: imported where used, no longer by a dry run or a listing (each cost it 3-5 ms): tomlkit (the unusual
# config.toml forms), socket (a live Qwen marker's hostname), tempfile (an archive written), hashlib (a hash taken)
LAZY = ("tomlkit", "socket", "tempfile", "hashlib")
# start5: orjson only where JSON is written or read (not ``--version``, ``--help``)
LAZY5 = ("orjson",)
SHOWN = STDLIB + LAZY + LAZY5
PROBE = ("import sys\nfrom histmig.cli.common import run_guarded\nfrom histmig.cli import cli\n"
         "code = run_guarded(cli, sys.argv[1:])\n"
         f"print('MODULES', ' '.join(sorted(m for m in sys.modules if m.startswith('histmig') or m in {SHOWN!r})), "
         "code)\n")

WRITE_PATH = ("histmig.apply",)   # the engine, the journal, fsio: only an apply loads them
OTHER_TOOLS = {"codex": ("histmig.tools.claude_code", "histmig.tools.mini_cc", "histmig.tools.manifest"),
               "claude-code": ("histmig.tools.codex", "histmig.tools.mini_cc", "histmig.tools.manifest")}

SCAN_NEVER = ("histmig.core.plan", "histmig.jsonio.lineedit", "histmig.jsonio.jsonedit", "histmig.toolkit.move",
              "histmig.toolkit.convert", "histmig.toolkit.doctor", "histmig.core.dbread", *STDLIB,
              "tomlkit", "socket", "tempfile")

# OpenCode keeps its sessions only as rows (docs/opencode.md): listing every tool opens its database
SCAN_ALL_NEVER = tuple(m for m in SCAN_NEVER if m not in ("histmig.core.dbread", "sqlite3"))

# (argv after the homes, module prefixes that must not be imported)
CASES = {
    # issue 15: a listing needs neither the plan model nor the line editor (manifest's meta.json writer),
    # nor pickle (forkmap's workers: the samples are under its 32 MB) nor the Codex databases
    "scan": (["scan"], ["histmig.verbs", *WRITE_PATH, "histmig.cli.tx", "histmig.toolkit.convert",
                        "histmig.toolkit.move", "histmig.toolkit.doctor", *SCAN_ALL_NEVER]),
    "scan --json": (["scan", "--json"], ["histmig.verbs", *WRITE_PATH, "histmig.cli.tx", *SCAN_ALL_NEVER]),
    "scan --tool codex": (["scan", "--tool", "codex"], ["histmig.verbs", *WRITE_PATH, *OTHER_TOOLS["codex"],
                                                        *SCAN_NEVER]),
    "show": (["show", "--tool", "codex", "019"], ["histmig.verbs", *WRITE_PATH, "histmig.cli.tx",
                                                  "histmig.toolkit.convert", "histmig.toolkit.move"]),
    "move": (["move", "/nowhere/a", "/nowhere/b"], [*WRITE_PATH, "histmig.verbs.flip", "histmig.verbs.convert",
                                                    "histmig.verbs.doctor", "histmig.verbs.undo",
                                                    "histmig.toolkit.convert", "histmig.toolkit.doctor",
                                                    "tomlkit", "socket", "tempfile"]),
    "convert": (["convert", "--to", "codex", "--all"], [*WRITE_PATH, "histmig.verbs.flip", "histmig.verbs.move",
                                                        "histmig.verbs.doctor", "histmig.verbs.undo",
                                                        "histmig.toolkit.move", "histmig.toolkit.doctor"]),
    # issue 16 (lists2): a repeat listing of a tool that shares its reads out to every CPU (toolkit/forklist.py)
    # answers from the scan index: nothing to read, so no fork machinery
    "scan --tool qwen": (["scan", "--tool", "qwen", "--json"], ["histmig.verbs", *WRITE_PATH, "histmig.core.forkmap",
                                                              *OTHER_TOOLS["codex"], "histmig.tools.codex",
                                                              *SCAN_NEVER]),
    # issue 18: export reads and renders; it writes only below --out, never through the write path
    "export": (["export", "--all", "--to", "html", "--out", "exported"], [*WRITE_PATH, "histmig.verbs.flip",
                                                                          "histmig.verbs.move", "histmig.verbs.convert",
                                                                          "histmig.verbs.doctor", "histmig.verbs.undo",
                                                                          "histmig.toolkit.convert", "histmig.toolkit.move",
                                                                          "histmig.core.plan"]),
    "doctor": (["doctor", "--tool", "codex"], [*WRITE_PATH, "histmig.verbs.convert", "histmig.verbs.move",
                                               "histmig.verbs.undo", "histmig.toolkit.convert",
                                               "tomlkit", "socket", "tempfile"]),
    # issue 19: archiving reads; it plans nothing and needs no writer, converter or move hook
    "archive": (["archive"], [*WRITE_PATH, "histmig.cli.tx", "histmig.core.plan", "histmig.verbs.flip",
                              "histmig.verbs.convert", "histmig.verbs.move", "histmig.verbs.doctor",
                              "histmig.verbs.undo", "histmig.toolkit.convert", "histmig.toolkit.move"]),
    "restore --deleted": (["restore", "--deleted"], [*WRITE_PATH, "histmig.verbs.flip", "histmig.verbs.convert",
                                                      "histmig.verbs.move", "histmig.verbs.doctor", "histmig.verbs.undo",
                                                      "histmig.toolkit.convert", "histmig.toolkit.move"]),
    # issue 18: a search reads; it lists every tool (short ids are unique across all of them)
    "search": (["search", "hello"], [*WRITE_PATH, "histmig.cli.tx", "histmig.verbs.flip", "histmig.verbs.move",
                                     "histmig.verbs.convert", "histmig.verbs.doctor", "histmig.verbs.undo",
                                     "histmig.toolkit.convert", "histmig.toolkit.move", "histmig.toolkit.doctor",
                                     "histmig.core.plan", "histmig.jsonio.lineedit"]),
    # issue 19: pack only reads (no write path) and loads no other verb
    "pack": (["pack", "--all", "-o", "b.tar.zst"], [*WRITE_PATH, "histmig.verbs.flip",
                                                    "histmig.verbs.move", "histmig.verbs.convert",
                                                    "histmig.verbs.doctor", "histmig.verbs.undo",
                                                    "histmig.verbs.unpack", "histmig.toolkit.convert",
                                                    "histmig.toolkit.move", "histmig.toolkit.doctor"]),
}

# Narrower rules that hold once the tool table is lazy (the writer and doctor lookups by table, helper
# "table") and flip's line editor no longer sits under doctor (helper "editor"). strict: when they pass,
# drop the mark.
NARROW = {
    "convert --to codex": (["convert", "--to", "codex", "--all"],
                           ["histmig.tools.claude_code.write", "histmig.tools.mini_cc.write",
                            "histmig.tools.manifest.write"]),
    "convert --to claude-code": (["convert", "--to", "claude-code", "--from", "codex"],
                                 ["histmig.tools.codex.write", "histmig.tools.mini_cc.write",
                                  "histmig.tools.manifest.write"]),
    "doctor --tool codex": (["doctor", "--tool", "codex"], ["histmig.tools.claude_code.doctor", "histmig.verbs.flip"]),
    "doctor --tool claude-code": (["doctor", "--tool", "claude-code"], ["histmig.tools.codex.doctor",
                                                                        "histmig.verbs.flip"]),
}


# issue 18: ``scan --tool X`` prints short ids unique among every tool's sessions; the other tools' ids come
# from the scan index once a scan listed them (docs/scan-show.md, "Short ids"). These cases run after one
# plain ``scan`` (a first ``scan --tool X`` on an empty index lists the other tools once, for their ids).
WARM = {"scan --tool codex", "scan --tool qwen"}


def _loaded(tmp_path, argv: list[str], *, warm: bool = False) -> tuple[list[str], str]:
    home = tmp_path / "h"
    home.mkdir()
    samples.install(home)
    full = ["--home", str(home), "--state-dir", str(tmp_path / "state"), *argv]
    if warm:
        subprocess.run([sys.executable, "-m", "histmig", *full[:4], "scan", "--json"], capture_output=True,
                       cwd=tmp_path, check=True)
    out = subprocess.run([sys.executable, "-c", PROBE, *full], capture_output=True, text=True, cwd=tmp_path)
    line = next((ln for ln in out.stdout.splitlines() if ln.startswith("MODULES ")), None)
    assert line is not None, out.stderr
    *mods, code = line.split()[1:]
    return mods, code


def _offending(mods: list[str], forbidden: list[str]) -> list[str]:
    return [m for m in mods if any(m == f or m.startswith(f + ".") for f in forbidden)]


@pytest.mark.parametrize("case", list(CASES))
def test_a_command_imports_only_what_it_needs(tmp_path, case):
    argv, forbidden = CASES[case]
    mods, code = _loaded(tmp_path, argv, warm=case in WARM)
    assert code in ("0", "1", "3"), (case, code)
    assert len(mods) > 5
    assert not _offending(mods, forbidden), f"{case} imported {_offending(mods, forbidden)}"


@pytest.mark.parametrize("case", list(NARROW))
def test_a_command_for_one_tool_imports_no_other_tool(tmp_path, case):
    argv, forbidden = NARROW[case]
    mods, code = _loaded(tmp_path, argv)
    assert code in ("0", "1", "3"), (case, code)
    assert not _offending(mods, forbidden), f"{case} imported {_offending(mods, forbidden)}"


def test_unpack_dry_run_loads_no_write_path(tmp_path):
    """issue 19: ``unpack`` without --apply verifies and plans; the write path (and convert's spool) stay out."""
    mods, code = _loaded(tmp_path, ["pack", "--all", "-o", "b.tar.zst"])
    assert code == "0", list(tmp_path.iterdir())
    full = ["--home", str(tmp_path / "h"), "--state-dir", str(tmp_path / "state"), "unpack", "b.tar.zst"]
    out = subprocess.run([sys.executable, "-c", PROBE, *full], capture_output=True, text=True, cwd=tmp_path)
    line = next((ln for ln in out.stdout.splitlines() if ln.startswith("MODULES ")), None)
    assert line is not None, out.stderr
    *mods, code = line.split()[1:]
    assert code == "0"
    forbidden = [*WRITE_PATH, "histmig.toolkit.convert", "histmig.verbs.flip", "histmig.verbs.move",
                 "histmig.verbs.convert", "histmig.verbs.doctor", "histmig.verbs.undo"]
    assert not _offending(mods, forbidden), _offending(mods, forbidden)


def test_a_listing_imports_no_adapter_of_a_tool_not_on_disk(tmp_path):
    """issue 16 (start3): ``scan --tool pi`` lists the other tools too, for short ids unique among all of
    them (tools/catalog.py ``known_ids``); a tool none of whose declared paths exists has no sessions,
    so its adapter is not imported (a home with Pi alone: nine imports fewer)."""
    import shutil
    full = tmp_path / "full"
    full.mkdir()
    samples.install(full)
    home = tmp_path / "h"
    shutil.copytree(full / ".pi", home / ".pi", symlinks=True)
    for args in (["scan", "--tool", "pi", "--json", "--no-index"], ["scan", "--json"]):
        argv = ["--home", str(home), "--state-dir", str(tmp_path / "state"), *args]
        out = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, cwd=tmp_path)
        line = next((ln for ln in out.stdout.splitlines() if ln.startswith("MODULES ")), None)
        assert line is not None, out.stderr
        *mods, code = line.split()[1:]
        assert code == "0", args
        assert "histmig.tools.pi.adapter" in mods
        others = [f"histmig.tools.{t}.adapter" for t in ("codex", "claude_code", "mini_cc", "manifest", "qwen",
                                                         "gemini", "copilot", "cline", "opencode")]
        assert not _offending(mods, others), (args, _offending(mods, others))


def test_start_up_imports_only_the_command_table_and_the_homes(tmp_path):
    """start4: what every command pays before it reads a file (``histmig --version``, the bench's start-up row):
    the command table, the homes and the tool table's rows, no tool's code, no model or plan, nothing lazy
    (start5: nor orjson, LAZY5)."""
    mods, code = _loaded(tmp_path, ["--version"])
    assert code == "0"
    assert set(mods) <= {"histmig", "histmig.cli", "histmig.cli.commands", "histmig.cli.common", "histmig.core",
                         "histmig.core.diagnostics", "histmig.core.homes", "histmig.core.valueclass",
                         "histmig.tools"}, mods


def test_an_unknown_option_still_gets_click_s_suggestion(tmp_path):
    out = subprocess.run([sys.executable, "-m", "histmig", "-q", "scan", "--jsn"], capture_output=True, text=True,
                         cwd=tmp_path, env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 2, out.stderr
    assert "Error: No such option '--jsn'. (Did you mean one of: '--json', '--since'?)" in out.stderr


def _codex_only(tmp_path):
    import shutil
    full = tmp_path / "full"
    full.mkdir()
    samples.install(full)
    home = tmp_path / "h"
    shutil.copytree(full / ".codex", home / ".codex", symlinks=True)
    return home


def _probe(tmp_path, home, args) -> tuple[list[str], str]:
    argv = ["--home", str(home), "--state-dir", str(tmp_path / "state"), *args]
    out = subprocess.run([sys.executable, "-c", PROBE + EXTRA, *argv], capture_output=True, text=True, cwd=tmp_path)
    line = next((ln for ln in out.stdout.splitlines() if ln.startswith("MODULES ")), None)
    assert line is not None, out.stderr
    *mods, code = line.split()[1:]
    return mods, code


# start6: the standard library modules printed besides SHOWN (zstandard: the archive's catalog; base64: a plan's bytes)
EXTRA = ("print('MODULES', ' '.join(sorted(m for m in sys.modules if m.startswith('histmig') or m in "
         "('zstandard', 'base64', 'shlex'))), code)\n")


def test_a_search_imports_no_adapter_of_a_tool_not_on_disk(tmp_path):
    """start6: ``search`` lists every tool like ``scan`` (short ids unique among all of them), and like
    scan (tools/catalog.py ``_chosen``) it imports no adapter or search hook of a tool with nothing on disk:
    a search of a Codex-only home imports one adapter, not ten."""
    home = _codex_only(tmp_path)
    for args in (["search", "-s", "hello"], ["search", "--no-index", "hello"], ["search", "--json", "hello"]):
        mods, code = _probe(tmp_path, home, args)
        assert code in ("0", "1"), args
        assert "histmig.tools.codex.adapter" in mods
        others = [f"histmig.tools.{t}.{m}" for t in ("claude_code", "mini_cc", "manifest", "qwen", "gemini", "pi",
                                                     "copilot", "cline", "opencode") for m in ("adapter", "search")]
        assert not _offending(mods, others), (args, _offending(mods, others))


def test_doctor_with_nothing_at_risk_loads_no_archive(tmp_path):
    """start6: doctor compares with the archive only the files a client is about to delete
    (verbs/doctor/archived.py); with none, neither the archive's catalog nor zstandard is imported, and a
    dry run no base64 (core/plan.py ``b64``). (shlex: here a follow-up command gets the --home flag.)"""
    home = _codex_only(tmp_path)
    for args in (["doctor"], ["doctor", "--json"]):
        mods, code = _probe(tmp_path, home, args)
        assert code in ("0", "1", "3"), args
        assert "histmig.verbs.doctor" in mods
        assert not _offending(mods, ["histmig.verbs.archive", "zstandard", "base64"]), \
            (args, _offending(mods, ["histmig.verbs.archive", "zstandard", "base64"]))


def test_the_follow_up_pattern_is_compiled_only_when_used(tmp_path):
    """start6: ``complete`` (a printed follow-up command gets this run's home flags) compiles its pattern
    on first use, not at start-up; what it prints is unchanged."""
    probe = ("import sys\nfrom histmig.cli.common import run_guarded, _command_pattern\nfrom histmig.cli import cli\n"
             "code = run_guarded(cli, sys.argv[1:])\nprint('COMPILED', _command_pattern.cache_info().currsize)\n")
    out = subprocess.run([sys.executable, "-c", probe, "--version"], capture_output=True, text=True, cwd=tmp_path)
    assert "COMPILED 0" in out.stdout, out
    from histmig.cli import common
    common._GIVEN[:] = ["--home", "/h x"]
    try:
        assert common.complete("undo with: histmig undo; see histmig log, histmigs scan") == \
            "undo with: histmig --home '/h x' undo; see histmig --home '/h x' log, histmigs scan"
    finally:
        common._GIVEN.clear()
