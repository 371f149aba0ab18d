"""Qwen Code doctor checks (docs/doctor.md): hidden after a folder move, wrong folder, id mismatch, broken lines."""
from __future__ import annotations

from pathlib import Path

from histmig.tools import resolve_homes
from histmig.tools.qwen.adapter import qwen_slug
from histmig.verbs.doctor import diagnose
from test_qwen_move import session


def findings(homes):
    return sorted((f.code, f.count) for f in diagnose(homes, tools=["qwen"]).findings)


def test_recorded_samples_in_an_existing_folder_are_healthy(isolated_homes):
    homes = resolve_homes()
    proj = Path(isolated_homes["HOME"]) / "code" / "app"
    proj.mkdir(parents=True)
    session(homes, str(proj))
    assert findings(homes) == []


def test_a_moved_folder_is_named_with_the_move_that_fixes_it(isolated_homes):
    homes = resolve_homes()
    home = Path(isolated_homes["HOME"])
    gone, new = home / "old" / "app", home / "code" / "app"
    new.mkdir(parents=True)
    session(homes, str(gone))
    (f,) = diagnose(homes, tools=["qwen"]).findings
    assert f.code == "qwen.cwd-missing" and f.data == {"cwd": str(gone), "suggested": str(new)}
    assert f.fix == f"histmig move {gone} {new} --apply"


def test_wrong_folder_id_mismatch_and_broken_lines(isolated_homes):
    homes = resolve_homes()
    proj = Path(isolated_homes["HOME"]) / "code" / "app"
    proj.mkdir(parents=True)
    path = session(homes, str(proj))
    wrong = homes.qwen / "projects" / "-elsewhere" / "chats"
    wrong.mkdir(parents=True)
    moved = wrong / "11111111-1111-4111-8111-111111111111.jsonl"
    moved.write_bytes(path.read_bytes() + b"{torn")
    path.unlink()
    fs = {f.code: f for f in diagnose(homes, tools=["qwen"]).findings}
    assert sorted(fs) == ["qwen.broken-lines", "qwen.folder-mismatch", "qwen.id-mismatch"]
    assert fs["qwen.folder-mismatch"].fix.endswith(f"/projects/{qwen_slug(str(proj))}/chats/")
