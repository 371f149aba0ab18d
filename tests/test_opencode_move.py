"""OpenCode's part of ``move`` (histmig/tools/opencode/move.py): ``session.directory``/``path``,
``project.worktree``/``sandboxes`` and ``project_directory`` rows in one transaction; undo puts them back."""
from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

from clirun import histmig
from histmig.tools import resolve_homes

SAMPLE = Path(__file__).resolve().parent.parent / "histmig" / "samples" / "opencode" / "resumed" / "opencode.db"
GIT = "0123456789abcdef0123456789abcdef01234567"


def rows(db: Path) -> dict:
    con = sqlite3.connect(db)
    try:
        return {t: con.execute(f"SELECT * FROM {t} ORDER BY 1, 2").fetchall()
                for t in ("project", "project_directory", "session", "message", "part")}
    finally:
        con.close()


def database(tmp_path: Path, old: Path) -> Path:
    """The recorded sample, its session re-pointed at ``old`` plus a git project whose worktree is ``old/repo``."""
    db = resolve_homes().opencode / "opencode.db"
    db.parent.mkdir(parents=True)
    shutil.copy2(SAMPLE, db)
    con = sqlite3.connect(db)
    con.execute("UPDATE session SET directory = ?, path = ?", (str(old), str(old).lstrip("/")))
    con.execute("INSERT INTO project (id, worktree, vcs, time_created, time_updated, sandboxes) "
                "VALUES (?, ?, 'git', 1, 1, ?)", (GIT, str(old / "repo"), f'["{old / "repo"}"]'))
    con.execute("INSERT INTO project_directory (project_id, directory, time_created) VALUES (?, ?, 1)",
                (GIT, str(old / "repo")))
    con.commit()
    con.close()
    return db


def test_rows_follow_the_folder_and_undo_restores_them(tmp_path):
    old, new = tmp_path / "w" / "app", tmp_path / "w" / "app2"
    (old / "repo").mkdir(parents=True)
    db = database(tmp_path, old)
    before = rows(db)
    old.rename(new)
    dry = histmig("move", old, new)
    assert dry.exit_code == 0, dry.stderr
    assert rows(db) == before
    out = histmig("move", old, new, "--apply")
    assert out.exit_code == 0, out.stderr
    con = sqlite3.connect(db)
    assert con.execute("SELECT directory, path FROM session").fetchall() == [(str(new), str(new).lstrip("/"))]
    assert con.execute("SELECT worktree, sandboxes FROM project WHERE id = ?", (GIT,)).fetchone() == (
        str(new / "repo"), f'["{new / "repo"}"]')
    assert con.execute("SELECT directory FROM project_directory").fetchall() == [(str(new / "repo"),)]
    assert con.execute("SELECT worktree FROM project WHERE id = 'global'").fetchone() == ("/",)
    con.close()
    after = rows(db)
    assert after["message"] == before["message"] and after["part"] == before["part"]
    undone = histmig("undo")
    assert undone.exit_code == 0, undone.stderr
    assert rows(db) == before


def test_a_session_outside_the_folder_is_left_alone(tmp_path):
    old = tmp_path / "w" / "app"
    (old / "repo").mkdir(parents=True)
    db = database(tmp_path, old)
    before = rows(db)
    other = tmp_path / "elsewhere"
    other.mkdir()
    out = histmig("move", other, tmp_path / "elsewhere2", "--apply")
    assert out.exit_code in (0, 1), out.stderr
    assert rows(db) == before
