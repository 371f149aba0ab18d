"""Gemini CLI move (histmig/tools/gemini/move.py; docs/specs/gemini.md §7): registry key and both markers,
slug folder kept, the slug the client claimed after the mv folded back; undo restores bytes and mtimes."""
from __future__ import annotations

import json
from pathlib import Path

from clirun import histmig
from test_apply_fixtures import snapshot

from histmig.cli import samples

OLD = "/tmp/histmig-rec/work/app"


def _home(tmp_path: Path) -> Path:
    samples.install(tmp_path / "home", tools=("gemini",))
    return tmp_path / "home"


def _registry(home: Path) -> dict:
    return json.loads((home / ".gemini/projects.json").read_text())["projects"]


def test_move_rekeys_the_registry_and_both_markers_and_undo_puts_every_byte_back(tmp_path):
    home = _home(tmp_path)
    gdir = home / ".gemini"
    before = snapshot(gdir)
    new = str(tmp_path / "app2")
    dry = histmig("--home", home, "move", OLD, new)
    assert dry.exit_code == 0 and snapshot(gdir) == before
    done = histmig("--home", home, "move", OLD, new, "--apply")
    assert done.exit_code == 0, done.stdout + done.stderr
    reg = _registry(home)
    assert reg[new] == "app" and OLD not in reg and reg["/tmp/histmig-rec/work/my app/データ"] == "project"
    assert (gdir / "tmp/app/.project_root").read_text() == new
    assert (gdir / "history/app/.project_root").read_text() == new
    assert sorted(p.name for p in (gdir / "tmp/app/chats").iterdir()) == sorted(
        p.name for p in samples.samples_root().glob("gemini/*/tmp/app/chats/*"))
    scan = json.loads(histmig("--home", home, "scan", "--json").stdout)["sessions"]
    assert {r["cwd"] for r in scan if r["tool"] == "gemini"} == {new, "/tmp/histmig-rec/work/my app/データ"}
    assert histmig("--home", home, "undo").exit_code == 0
    assert snapshot(gdir) == before


def test_a_slug_the_client_claimed_after_the_mv_is_folded_into_the_kept_one(tmp_path):
    home = _home(tmp_path)
    gdir = home / ".gemini"
    new = str(tmp_path / "app2")
    # what `gemini` run in the moved folder does: a new slug, registered, with its markers and a session
    reg = json.loads((gdir / "projects.json").read_text())
    reg["projects"][new] = "app2"
    (gdir / "projects.json").write_text(json.dumps(reg, indent=2, ensure_ascii=False))
    for base in ("tmp", "history"):
        (gdir / base / "app2").mkdir(parents=True)
        (gdir / base / "app2/.project_root").write_text(new)
    (gdir / "tmp/app2/chats").mkdir()
    fresh = gdir / "tmp/app2/chats/session-2026-12-01T15-00-feedbeef.jsonl"
    fresh.write_text('{"sessionId":"feedbeef-0000-4000-8000-000000000000","startTime":"2026-12-01T15:00:00Z",'
                     '"lastUpdated":"2026-12-01T15:00:00Z","kind":"main"}\n')
    before = snapshot(gdir)
    done = histmig("--home", home, "move", OLD, new, "--apply")
    assert done.exit_code == 0, done.stdout + done.stderr
    assert _registry(home)[new] == "app" and "app2" not in _registry(home).values()
    assert (gdir / "tmp/app/chats" / fresh.name).exists()
    assert not (gdir / "history/app2").exists() and not list((gdir / "tmp/app2").rglob("*.jsonl"))
    assert histmig("--home", home, "undo").exit_code == 0
    assert snapshot(gdir) == before


def test_nothing_to_do_for_a_folder_gemini_never_saw(tmp_path):
    home = _home(tmp_path)
    out = histmig("--home", home, "move", "/elsewhere/x", str(tmp_path / "y"), "--tool", "gemini", "--json")
    assert out.exit_code == 0, out.stderr
    assert json.loads(out.stdout)["plan"]["operations"] == 0


def test_a_registry_locked_by_gemini_is_not_written(tmp_path):
    home = _home(tmp_path)
    lock = home / ".gemini/projects.json.lock"
    lock.mkdir()
    before = snapshot(home / ".gemini")
    out = histmig("--home", home, "move", OLD, str(tmp_path / "app2"), "--apply")
    assert out.exit_code != 0 and "locked by Gemini CLI" in out.stderr
    assert snapshot(home / ".gemini") == before
