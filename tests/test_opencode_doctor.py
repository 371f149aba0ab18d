"""OpenCode doctor (histmig/tools/opencode/doctor.py): a folder that is gone, and the orphan turns a
failed run leaves (user prompt + empty unfinished assistant message), repaired and undone."""
from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

from clirun import histmig
from histmig.tools import resolve_homes

SAMPLE = Path(__file__).resolve().parent.parent / "histmig" / "samples" / "opencode" / "resumed" / "opencode.db"


def all_rows(db: Path) -> dict:
    con = sqlite3.connect(db)
    try:
        return {t: con.execute(f"SELECT * FROM {t} ORDER BY id").fetchall() for t in ("message", "part")}
    finally:
        con.close()


def with_orphan(cwd: Path) -> tuple[Path, str]:
    """The sample with its session in ``cwd`` and one failed turn (as OpenCode 1.18.33 stores it) appended."""
    db = resolve_homes().opencode / "opencode.db"
    db.parent.mkdir(parents=True)
    shutil.copy2(SAMPLE, db)
    con = sqlite3.connect(db)
    con.execute("UPDATE session SET directory = ?, path = ?", (str(cwd), str(cwd).lstrip("/")))
    sid = con.execute("SELECT id FROM session").fetchone()[0]
    user = {"role": "user", "time": {"created": 1}, "agent": "build",
            "model": {"providerID": "anthropic", "modelID": "claude-sonnet-4-5"}}
    answer = {"parentID": "msg_ffffffffffff01orphanuser00", "role": "assistant", "mode": "build", "agent": "build",
              "path": {"cwd": str(cwd), "root": "/"}, "cost": 0, "tokens": {"input": 0, "output": 0},
              "modelID": "claude-sonnet-4-5", "providerID": "anthropic", "time": {"created": 2}}
    con.execute("INSERT INTO message VALUES ('msg_ffffffffffff01orphanuser00', ?, 1, 1, ?)", (sid, json.dumps(user)))
    con.execute("INSERT INTO part VALUES ('prt_ffffffffffff01orphanpart00', 'msg_ffffffffffff01orphanuser00', ?, 1, 1, ?)",
                (sid, json.dumps({"type": "text", "text": "failing prompt"})))
    con.execute("INSERT INTO message VALUES ('msg_ffffffffffff02orphanreply0', ?, 2, 2, ?)", (sid, json.dumps(answer)))
    con.commit()
    con.close()
    return db, sid


def test_orphan_turns_are_found_repaired_and_undo_restores_them(tmp_path):
    app = tmp_path / "app"
    app.mkdir()
    db, sid = with_orphan(app)
    report = json.loads(histmig("doctor", "--tool", "opencode", "--json").stdout)
    [finding] = report["tools"]["opencode"]
    assert finding["code"] == "opencode.orphan-messages" and finding["data"]["session"] == sid
    assert finding["data"]["messages"] == ["msg_ffffffffffff01orphanuser00"]
    before = all_rows(db)
    out = histmig("doctor", "--tool", "opencode", "--repair", "--apply")
    assert out.exit_code == 0, out.stdout + out.stderr
    after = all_rows(db)
    assert len(after["message"]) == len(before["message"]) - 2 and len(after["part"]) == len(before["part"]) - 1
    assert json.loads(histmig("doctor", "--tool", "opencode", "--json").stdout)["tools"]["opencode"] == []
    out = histmig("undo")
    assert out.exit_code == 0, out.stderr
    assert all_rows(db) == before


def test_a_folder_that_is_gone_names_the_move_command(tmp_path):
    gone = tmp_path / "gone"
    db, sid = with_orphan(gone)
    report = json.loads(histmig("doctor", "--tool", "opencode", "--json").stdout)
    missing = [f for f in report["tools"]["opencode"] if f["code"] == "opencode.cwd-missing"]
    assert missing[0]["data"] == {"cwd": str(gone), "suggested": None, "sessions": [sid]}
    assert "histmig move" in missing[0]["fix"]


def test_sessions_in_another_channels_database_are_named_with_how_to_see_them(tmp_path, monkeypatch):
    data = resolve_homes().opencode
    data.mkdir(parents=True)
    shutil.copy2(SAMPLE, data / "opencode-dev.db")
    (data / "opencode-empty.db").write_bytes(b"")                 # not a database: no finding
    report = json.loads(histmig("doctor", "--tool", "opencode", "--json").stdout)
    [found] = [f for f in report["tools"]["opencode"] if f["code"] == "opencode.channel-db"]
    assert found["data"]["channel"] == "dev" and found["count"] == 1
    assert found["path"] == str(data / "opencode-dev.db") and "OPENCODE_DB=" in found["fix"]
    # looked at through OPENCODE_DB, the channel's sessions are listed, and opencode.db is not reported
    monkeypatch.setenv("OPENCODE_DB", "opencode-dev.db")
    assert "ses_" in histmig("scan", "--tool", "opencode").stdout
    again = json.loads(histmig("doctor", "--tool", "opencode", "--json").stdout)
    assert not [f for f in again["tools"]["opencode"] if f["code"] == "opencode.channel-db"]
