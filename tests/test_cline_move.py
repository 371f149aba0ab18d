"""Cline's part of ``move`` (tools/cline/move.py): the manifest's cwd and workspace_root rewritten in
place, everything else byte-identical, undo restores bytes and mtimes."""
from __future__ import annotations

import json
import sqlite3
import subprocess
import sys

from histmig.cli import samples
from histmig.tools.cline import adapter


def tree(root) -> dict:
    return {str(p): (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(root.rglob("*")) if p.is_file()}


def test_move_rewrites_the_manifest_cwd_and_undo_restores(tmp_path):
    home = tmp_path / "h"
    homes = samples.install(home, tools=("cline",))
    root = adapter.sessions_root(homes)
    before = tree(root)
    old, new = "/tmp/histmig-rec/work/app", str(tmp_path / "app2")
    (tmp_path / "app2").mkdir()
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}

    def hm(*args):
        return subprocess.run([sys.executable, "-m", "histmig", "--home", str(home), "--state-dir",
                               str(tmp_path / "st"), *args], env=env, capture_output=True, text=True)
    done = hm("move", old, new, "--tool", "cline", "--apply")
    assert done.returncode == 0, done.stdout + done.stderr
    moved = {r.title: r for r in adapter.discover(homes)}
    assert moved["first question"].cwd == new
    assert moved["hello from a unicode folder"].cwd.startswith("/tmp/histmig-rec/work/my app")
    manifest = adapter.manifest_path(moved["first question"].path)
    data = json.loads(manifest.read_bytes())
    assert data["cwd"] == data["workspace_root"] == new
    after = tree(root)
    changed = {p for p in before if before[p][0] != after[p][0]}
    assert changed and all(p.endswith(".json") and not p.endswith(".messages.json") for p in changed)
    assert hm("undo").returncode == 0
    assert tree(root) == before


def test_move_updates_the_index_row_and_undo_restores_it(tmp_path):
    home = tmp_path / "h"
    homes = samples.install(home, tools=("cline",))
    db = adapter.data_dir(homes) / "db" / "sessions.db"
    db.parent.mkdir(parents=True)
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE sessions (session_id TEXT PRIMARY KEY, cwd TEXT NOT NULL, workspace_root TEXT NOT NULL)")
    con.execute("INSERT INTO sessions VALUES ('1796137263007_59v2o', '/tmp/histmig-rec/work/app', "
                "'/tmp/histmig-rec/work/app'), ('1_other', '/elsewhere', '/elsewhere')")
    con.commit()
    con.close()
    new = str(tmp_path / "app2")
    (tmp_path / "app2").mkdir()
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}

    def hm(*args):
        return subprocess.run([sys.executable, "-m", "histmig", "--home", str(home), "--state-dir",
                               str(tmp_path / "st"), *args], env=env, capture_output=True, text=True)

    def rows():
        con = sqlite3.connect(db)
        try:
            return sorted(con.execute("SELECT * FROM sessions").fetchall())
        finally:
            con.close()
    before = rows()
    done = hm("move", "/tmp/histmig-rec/work/app", new, "--tool", "cline", "--apply")
    assert done.returncode == 0, done.stdout + done.stderr
    assert rows() == [("1796137263007_59v2o", new, new), ("1_other", "/elsewhere", "/elsewhere")]
    assert hm("undo").returncode == 0
    assert rows() == before
