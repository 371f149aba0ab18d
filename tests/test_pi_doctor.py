"""Pi's doctor checks (histmig/tools/pi/doctor.py): hidden history after a folder move with the move that
fixes it, ambiguous 8-character id prefixes across projects, missing usage, broken lines."""
from __future__ import annotations

import json

from clirun import histmig
from histmig.tools import resolve_homes
from histmig.tools.pi.layout import pi_slug
from test_pi_move import ID_A, ID_B, session


def doctor_json(*args: str) -> dict:
    out = histmig("doctor", "--tool", "pi", "--json", *args)
    return {f["code"]: f for f in json.loads(out.stdout)["tools"].get("pi", [])}


def test_a_moved_project_is_named_with_the_move_that_fixes_it():
    homes = resolve_homes()
    old, new = homes.home / "w" / "app", homes.home / "w2" / "app"     # doctor finds it below $HOME by name
    old.mkdir(parents=True)
    session(homes.pi / "sessions" / pi_slug(str(old)), ID_A, str(old))
    new.parent.mkdir()
    old.rename(new)
    found = doctor_json()
    assert found["pi.cwd-missing"]["fix"] == f"histmig move {old} {new} --apply"
    assert histmig("move", old, new, "--apply").exit_code == 0
    assert "pi.cwd-missing" not in doctor_json()


def test_prefixes_shared_across_projects_missing_usage_and_broken_lines(tmp_path):
    homes = resolve_homes()
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    pa = session(homes.pi / "sessions" / pi_slug(str(a)), ID_A, str(a))
    session(homes.pi / "sessions" / pi_slug(str(b)), ID_B, str(b))
    with open(pa, "ab") as fh:
        fh.write(b'{"type":"message","id":"b2","parentId":"a1","timestamp":"t","message":{"role":"assistant",'
                 b'"content":[{"type":"text","text":"x"}]}}\n{"type":\n')
    found = doctor_json()
    assert found["pi.ambiguous-prefix"]["data"] == {"prefix": ID_A[:8], "ids": [ID_A, ID_B]}
    assert found["pi.usage-missing"]["line"] == 3 and found["pi.broken-lines"]["line"] == 4
    assert "pi.folder-mismatch" not in found


def test_a_session_outside_its_cwds_folder_is_named(tmp_path):
    homes = resolve_homes()
    a = tmp_path / "a"
    a.mkdir()
    session(homes.pi / "sessions" / "--elsewhere--", ID_A, str(a))
    assert doctor_json()["pi.folder-mismatch"]["data"] == {"cwd": str(a), "folder": "--elsewhere--"}
