"""Recordings by other client versions (histmig/samples/versions/<tool>-<version>/<case>/, issue 14):
Codex 0.120.0 / 0.150.0 and Claude Code 2.1.100 / 2.1.265 / 2.1.332, recorded by the real clients with
tests/e2e/record_samples.py and a version override (histmig/samples/README.md). Each is scanned, moved
(and undone), converted to the other tool, and (Codex: flip re-labels Codex sessions only) flipped."""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from histmig.cli import cli, samples
from histmig.core.paths import claude_slug
from histmig.tools.claude_code import adapter, records

from test_move_fixtures import structured_leftovers, tool_trees

VERSIONS = Path(__file__).resolve().parents[1] / "histmig" / "samples" / "versions"
CASES = sorted(p for v in VERSIONS.iterdir() if v.is_dir() for p in v.iterdir() if p.is_dir())
RECORDED_CWD = "/tmp/histmig-rec/work/app"


def tool_of(case: Path) -> str:
    return case.parent.name.rsplit("-", 1)[0]


def case_id(case: Path) -> str:
    return f"{case.parent.name}/{case.name}"


def test_the_older_writers_are_all_recorded():
    assert {c.parent.name for c in CASES} >= {"codex-0.120.0", "codex-0.150.0", "claude-code-2.1.100",
                                              "claude-code-2.1.265", "claude-code-2.1.332"}


@pytest.fixture(params=CASES, ids=case_id)
def home(request, tmp_path):
    """The case installed alone into a scratch home, as ``histmig demo`` installs a sample case."""
    case: Path = request.param
    root = tmp_path / "root"
    (root / tool_of(case)).mkdir(parents=True)
    (root / tool_of(case) / case.name).symlink_to(case)
    homes = samples.install(tmp_path / "home", root=root, tools=(tool_of(case),))
    return case, homes


def histmig(homes, *args: str):
    argv = ["--home", str(homes.claude.parent), *args]    # the scratch $HOME (~/.claude's parent)
    return CliRunner().invoke(cli, argv, catch_exceptions=False)


def scan(homes) -> list[dict]:
    out = histmig(homes, "scan", "--json")
    assert out.exit_code == 0, out.output
    return json.loads(out.stdout)["sessions"]      # the histmig.scan/1 envelope (docs/json.md)


def test_scan_lists_the_recorded_session(home):
    case, homes = home
    rows = scan(homes)
    assert len(rows) == 1 and rows[0]["tool"] == tool_of(case) and rows[0]["cwd"] == RECORDED_CWD
    assert "RUN: echo hello from the tool" in (rows[0]["title"] or "") or case.name == "subagent"


def test_claude_records_of_every_version_are_named_and_kept_byte_exact():
    for case in CASES:
        for path in (case / "projects").rglob("*.jsonl") if tool_of(case) == "claude-code" else ():
            session = adapter.read_file(path)
            assert records.serialize(session) == path.read_bytes(), path
            unknown = [k for k in records.type_counts(session.records) if k.startswith("unknown")]
            assert unknown == [], (path, unknown)


def test_move_rewrites_every_path_field_and_undo_restores(home, tmp_path):
    case, homes = home
    new = str(tmp_path / "work" / "app2")
    before = state(homes)
    out = histmig(homes, "move", RECORDED_CWD, new, "--apply")
    assert out.exit_code == 0, out.output
    assert [r["cwd"] for r in scan(homes)] == [new]
    assert structured_leftovers(homes.claude if tool_of(case) == "claude-code" else homes.codex, RECORDED_CWD) == []
    if tool_of(case) == "claude-code":
        assert (homes.claude / "projects" / claude_slug(new)).is_dir()
    assert histmig(homes, "undo").exit_code == 0
    assert diff(state(homes), before) == []


def test_convert_writes_a_session_of_the_other_tool(home):
    case, homes = home
    if tool_of(case) == "codex":
        out = histmig(homes, "convert", "--to", "claude-code", "--all", "--apply")
    else:
        out = histmig(homes, "convert", "--to", "codex", "--all", "--provider", "openai", "--apply")
    assert out.exit_code == 0, out.output
    rows = scan(homes)
    assert sorted(r["tool"] for r in rows) == ["claude-code", "codex"]
    assert {r["cwd"] for r in rows} == {RECORDED_CWD}


def test_flip_relabels_a_codex_session_and_undo_restores(home):
    case, homes = home
    if tool_of(case) != "codex":
        pytest.skip("flip re-labels Codex sessions only")
    before = state(homes)
    out = histmig(homes, "flip", "openai", "my-provider", "--apply")
    assert out.exit_code == 0, out.output
    assert [r["provider"] for r in scan(homes)] == ["my-provider"]
    assert histmig(homes, "undo").exit_code == 0
    assert diff(state(homes), before) == []


def state(homes) -> dict:
    """Every file of both homes (bytes, mode, mtime) but SQLite databases by their rows: undo restores
    rows, and SQLite may lay the pages out anew."""
    trees = tool_trees(homes)
    out = {(root, k): v for root, snap in trees.items() for k, v in snap.items() if ".sqlite" not in k}
    for db in homes.codex.glob("*.sqlite"):
        with sqlite3.connect(db) as con:
            for (table,) in con.execute("SELECT name FROM sqlite_master WHERE type='table'").fetchall():
                out[(str(db), table)] = sorted(map(repr, con.execute(f'SELECT * FROM "{table}"').fetchall()))
        con.close()
    return out


def diff(a: dict, b: dict) -> list:
    return [k for k in set(a) | set(b) if a.get(k) != b.get(k)]
