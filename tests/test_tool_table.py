"""Issue 13: adding a tool touches one folder plus one row of the tool table (histmig/tools/__init__.py).

A toy tool lives in a package written to tmp_path; one ``register`` call makes ``scan``, ``show`` and
``move`` work for it, through the library and through the CLI, with no other module edited.
"""
from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest

from histmig import tools as registry
from histmig.core.homes import resolve_homes

ADAPTER = '''
"""A toy history format: ``~/.toy/<id>.jsonl``, one ``{"cwd": ..., "role": ..., "text": ...}`` per line."""
import json
from pathlib import Path

from histmig.core.model import Record, Session, SessionRef, Text
from histmig.tools.base import FunctionAdapter

NAME = "toy"


def detect(path):
    return Path(path).suffix == ".jsonl" and Path(path).parent.name == ".toy"


def discover(homes):
    for path in sorted((homes.home / ".toy").glob("*.jsonl")):
        first = json.loads(path.read_text().splitlines()[0])
        st = path.stat()
        yield SessionRef(format=NAME, id=path.stem, path=path, cwd=first["cwd"], updated=st.st_mtime,
                         size=st.st_size, title=first["text"])


def read(ref):
    path = Path(getattr(ref, "path", ref))
    records = [Record(kind="message", role=o["role"], parts=[Text(o["text"])])
               for o in map(json.loads, path.read_text().splitlines())]
    return Session(id=path.stem, format=NAME, path=path, cwd=records and json.loads(
        path.read_text().splitlines()[0])["cwd"], records=records)


def serialize(session):
    return session.path.read_bytes()


ADAPTER = FunctionAdapter(NAME, frozenset({"text"}), detect=detect, discover=discover, read=read,
                          serialize=serialize)
'''

MOVE = '''
"""The toy's part of a project move: ``cwd`` of every line rewritten in place."""
import os

from histmig.toolkit.move.common import field_at, scan_file


def line_fields(obj, pm):
    return field_at(obj, ("cwd",), pm) if isinstance(obj, dict) else []


def plan(homes, pm, plans, opts):
    tplan = plans["toy"]
    folder = homes.home / ".toy"
    for name in sorted(os.listdir(folder)) if folder.is_dir() else []:
        scan = scan_file(str(folder / name), pm, line_fields, rewrite_content=opts["rewrite_content"])
        tplan.add_scan(scan, session={"tool": "toy", "id": name[:-6]}, reason="project move")
'''

SID = "70790000-0000-4000-8000-000000000001"


@pytest.fixture
def toy(tmp_path, monkeypatch, isolated_homes):
    """The toy package on sys.path, registered by one table call; the table restored afterwards."""
    pkg = tmp_path / "pkgs" / "toytool"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "adapter.py").write_text(textwrap.dedent(ADAPTER))
    (pkg / "move.py").write_text(textwrap.dedent(MOVE))
    monkeypatch.syspath_prepend(str(tmp_path / "pkgs"))
    monkeypatch.setattr(registry, "TABLE", dict(registry.TABLE))
    registry.register(registry.Tool("toy", "toytool", lambda homes: homes.home / ".toy", aliases=("toy-cli",)))
    yield resolve_homes()
    for name in [m for m in sys.modules if m == "toytool" or m.startswith("toytool.")]:
        del sys.modules[name]


@pytest.fixture
def toy_session(toy, tmp_path):
    old = tmp_path / "work" / "app"
    old.mkdir(parents=True)
    lines = [{"cwd": str(old), "role": "user", "text": "make the toy"},
             {"cwd": str(old), "role": "assistant", "text": "the toy is made"}]
    path = toy.home / ".toy" / f"{SID}.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("".join(json.dumps(o) + "\n" for o in lines))
    return toy, old, path


def test_a_registered_tool_is_scanned_shown_and_moved_by_the_library(toy_session):
    from histmig.verbs.catalog import discover_all, resolve
    from histmig.verbs.move import plan_move
    homes, old, path = toy_session
    assert "toy" in registry.names() and registry.canonical("TOY-CLI") == "toy"
    [ref] = [r for r in discover_all(homes) if r.format == "toy"]
    assert ref.id == SID and ref.cwd == str(old)
    assert list(discover_all(homes, ["toy"])) == [ref]
    assert resolve(homes, SID[:12]).path == path
    assert [r.parts[0].text for r in registry.adapter("toy").read(ref).records] == ["make the toy", "the toy is made"]

    plan = plan_move(homes, str(old), str(old.parent / "moved"), tools=["toy"])
    assert plan.summary["tools"] == {"toy": {"files": 1, "fields": 2, "skipped": 0}}
    assert [op.paths()[0] for op in plan.operations] == [str(path)]
    assert str(homes.home / ".toy") in plan.roots
    everyone = plan_move(homes, str(old), str(old.parent / "moved"))
    assert list(everyone.summary["tools"]) == [*registry.names()]


def test_a_registered_tool_is_scanned_shown_and_moved_by_the_cli(toy_session):
    from clirun import histmig
    homes, old, path = toy_session
    r = histmig("scan", "--tool", "toy", "--json")
    assert r.exit_code == 0, r.stderr
    assert [(s["tool"], s["id"]) for s in json.loads(r.stdout)] == [("toy", SID)]
    r = histmig("show", "--tool", "toy-cli", SID[:8])
    assert r.exit_code == 0 and "make the toy" in r.stdout and "the toy is made" in r.stdout, r.stderr
    assert "toy" in histmig("move", "--help").stdout

    before = path.read_bytes()
    new = old.parent / "moved"
    r = histmig("move", old, new, "--tool", "toy", "--apply")
    assert r.exit_code == 0, r.stderr
    assert path.read_bytes() == before.replace(str(old).encode(), str(new).encode())
    r = histmig("undo")
    assert r.exit_code == 0, r.stderr
    assert path.read_bytes() == before


def test_every_hook_is_imported_only_when_asked_for(toy):
    """The table imports nothing itself; a tool without a hook module has no part in that verb."""
    assert "toytool.move" not in sys.modules
    assert registry.hook("toy", "writer") is None and registry.hook("toy", "doctor") is None
    assert registry.hook("toy", "move") is not None and "toytool.move" in sys.modules


def test_move_planning_runs_a_needed_tool_first_and_lays_plans_out_in_table_order():
    assert registry.move_order(set(registry.names())) == ["claude-code", "manifest", "codex", "mini-cc"]
    assert registry.move_order({"manifest"}) == ["claude-code", "manifest"]
    assert registry.move_order({"mini-cc", "codex"}) == ["codex", "mini-cc"]
    assert registry.names() == ("codex", "claude-code", "mini-cc", "manifest")


def test_every_row_names_a_package_that_holds_its_adapter():
    """Every built-in row's package exists and holds an adapter (a typo in a row fails here, not in use)."""
    for row in registry.TABLE.values():
        assert Path(__import__(row.package, fromlist=["_"]).__file__).parent.name == row.package.rsplit(".", 1)[1]
        assert registry.adapter(row.name).name == row.name
