"""Pi's part of ``move`` (histmig/tools/pi/move.py): the slug folder and the header ``cwd``; a folder that
also holds another project's session, a target folder Pi already made, a flat session dir; undo."""
from __future__ import annotations

import json
from pathlib import Path

from clirun import histmig
from histmig.tools import resolve_homes
from histmig.tools.pi.layout import pi_slug

ID_A = "01a23020-314b-7782-b551-4f10209b9c80"
ID_B = "01a23020-e3a6-751b-a649-39706fda5997"


def session(folder: Path, sid: str, cwd: str, text: str = "hello") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"2026-12-01T05-42-25-868Z_{sid}.jsonl"
    lines = [{"type": "session", "version": 3, "id": sid, "timestamp": "2026-12-01T05:42:25.868Z", "cwd": cwd},
             {"type": "message", "id": "a1", "parentId": None, "timestamp": "2026-12-01T05:42:26.000Z",
              "message": {"role": "user", "content": [{"type": "text", "text": f"{text} in {cwd}"}], "timestamp": 1}}]
    path.write_bytes(b"".join(json.dumps(x, separators=(",", ":"), ensure_ascii=False).encode() + b"\n" for x in lines))
    return path


def snapshot(root: Path) -> dict:
    return {str(p): (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(root.rglob("*")) if p.is_file()}


def test_the_folder_is_renamed_and_the_header_rewritten_and_undo_restores_it(tmp_path):
    homes = resolve_homes()
    old, new = tmp_path / "w" / "app", tmp_path / "w" / "app2"
    old.mkdir(parents=True)
    root = homes.pi / "sessions"
    path = session(root / pi_slug(str(old)), ID_A, str(old))
    sub = session(root / pi_slug(str(old / "sub")), ID_B, str(old / "sub"))
    rest = path.read_bytes().split(b"\n", 1)[1]
    before = snapshot(homes.pi)
    old.rename(new)
    out = histmig("move", old, new, "--apply")
    assert out.exit_code == 0, out.stderr
    moved = root / pi_slug(str(new)) / path.name
    assert json.loads(moved.read_bytes().split(b"\n")[0])["cwd"] == str(new)
    assert moved.read_bytes().split(b"\n", 1)[1] == rest                    # only the header changed
    assert (root / pi_slug(str(new / "sub")) / sub.name).is_file()
    assert not (root / pi_slug(str(old))).exists()
    out = histmig("undo")
    assert out.exit_code == 0, out.stderr
    assert snapshot(homes.pi) == before


def test_a_shared_folder_keeps_the_other_session_and_an_existing_target_is_merged_into(tmp_path):
    homes = resolve_homes()
    old, new = tmp_path / "a-b", tmp_path / "x"
    root = homes.pi / "sessions"
    ours = session(root / pi_slug(str(old)), ID_A, str(old))
    theirs = session(root / pi_slug(str(old)), ID_B, str(tmp_path / "a" / "b"))    # same slug: /a-b and /a/b
    made = session(root / pi_slug(str(new)), "01a23021-3b5d-75d7-80fe-e7c8b9a6a0fd", str(new))
    out = histmig("move", old, new, "--apply")
    assert out.exit_code == 0, out.stderr
    assert theirs.read_bytes().startswith(b'{"type":"session"') and theirs.exists() and not ours.exists()
    assert sorted(p.name for p in made.parent.iterdir()) == sorted([made.name, ours.name])
    assert json.loads((made.parent / ours.name).read_bytes().split(b"\n")[0])["cwd"] == str(new)


def test_a_flat_session_dir_gets_the_header_rewritten_in_place(tmp_path, monkeypatch):
    flat = tmp_path / "flat"
    monkeypatch.setenv("PI_CODING_AGENT_SESSION_DIR", str(flat))
    old, new = tmp_path / "app", tmp_path / "app2"
    path = session(flat, ID_A, str(old))
    other = session(flat, ID_B, str(tmp_path / "other"))
    keep = other.read_bytes()
    out = histmig("move", old, new, "--apply")
    assert out.exit_code == 0, out.stderr
    assert json.loads(path.read_bytes().split(b"\n")[0])["cwd"] == str(new) and other.read_bytes() == keep


def test_a_running_pi_in_the_project_makes_its_folder_wait(tmp_path):
    """Pi holds no file open; a process whose command line names pi-coding-agent and whose working folder
    is the moved project is live (histmig/tools/pi/guards.py): nothing of that project is changed."""
    import subprocess
    import sys
    homes = resolve_homes()
    old, new = tmp_path / "app", tmp_path / "app2"
    old.mkdir()
    path = session(homes.pi / "sessions" / pi_slug(str(old)), ID_A, str(old))
    before = path.read_bytes()
    old.rename(new)
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "pi-coding-agent"], cwd=new)
    try:
        out = histmig("move", old, new, "--apply")
        assert out.exit_code == 3, out.stdout + out.stderr
        assert "a running Pi (pid" in out.stdout + out.stderr and path.read_bytes() == before
    finally:
        proc.kill()
        proc.wait()
    assert histmig("move", old, new, "--apply").exit_code == 0
    assert not path.exists()
