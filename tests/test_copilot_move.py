"""Copilot's part of a project move (tools/copilot/move.py): workspace.yaml's ``cwd`` line and the index row,
through the apply path; undo restores both; events.jsonl is not touched."""
from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

from histmig import api
from histmig.cli import samples
from histmig.tools import resolve_homes
from histmig.tools.copilot.move import cwd_patch

SAMPLES = Path(samples.__file__).resolve().parents[1] / "samples" / "copilot"
OLD = "/tmp/histmig-rec/work/my app/データ"


def home_with_unicode_sample(homes) -> tuple[Path, str]:
    shutil.copytree(SAMPLES / "unicode-cwd" / "session-state", homes.copilot / "session-state")
    (d,) = (homes.copilot / "session-state").iterdir()
    con = sqlite3.connect(homes.copilot / "session-store.db")
    con.execute("CREATE TABLE sessions (id TEXT PRIMARY KEY, cwd TEXT, repository TEXT, host_type TEXT, "
                "branch TEXT, summary TEXT, created_at TEXT, updated_at TEXT)")
    con.execute("INSERT INTO sessions (id, cwd) VALUES (?, ?), ('other', '/elsewhere')", (d.name, OLD))
    con.commit()
    con.close()
    return d, d.name


def rows(homes) -> dict:
    con = sqlite3.connect(homes.copilot / "session-store.db")
    try:
        return dict(con.execute("SELECT id, cwd FROM sessions"))
    finally:
        con.close()


def test_move_rewrites_one_yaml_line_and_the_row_and_undo_restores(isolated_homes, tmp_path):
    homes = resolve_homes()
    d, sid = home_with_unicode_sample(homes)
    new = str(tmp_path / "new place: ü")
    Path(new).mkdir()
    ws_before, ev_before = (d / "workspace.yaml").read_bytes(), (d / "events.jsonl").read_bytes()
    api.apply(api.plan_move(homes, OLD, new), homes)
    after = (d / "workspace.yaml").read_bytes()
    changed = [(a, b) for a, b in zip(ws_before.splitlines(), after.splitlines()) if a != b]
    assert changed == [(f"cwd: {OLD}".encode(), f'cwd: "{new}"'.encode())]
    assert (d / "events.jsonl").read_bytes() == ev_before
    assert rows(homes) == {sid: new, "other": "/elsewhere"}
    api.undo(homes)
    assert (d / "workspace.yaml").read_bytes() == ws_before and rows(homes) == {sid: OLD, "other": "/elsewhere"}


def test_cwd_patch_keeps_every_other_byte():
    data = b"id: x\r\ncwd: /a/b\r\nname: n\r\n"
    p = cwd_patch(data, "/c")
    assert (p.offset, p.old, p.new) == (12, b"/a/b", b"/c")


def test_a_session_a_process_is_writing_is_skipped_and_named(isolated_homes, tmp_path):
    import subprocess
    import sys
    homes = resolve_homes()
    d, sid = home_with_unicode_sample(homes)
    before = (d / "workspace.yaml").read_bytes()
    writer = subprocess.Popen([sys.executable, "-c", "import sys,time; f=open(sys.argv[1],'ab'); time.sleep(60)",
                               str(d / "events.jsonl")])
    try:
        import time
        time.sleep(0.5)
        res = api.apply(api.plan_move(homes, OLD, str(tmp_path)), homes)
    finally:
        writer.kill()
        writer.wait()
    assert (d / "workspace.yaml").read_bytes() == before
    assert any(s.code == "live-session" and sid in s.reason for s in res.skips), res.skips
