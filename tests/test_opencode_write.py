"""Converting TO OpenCode (tools/opencode/write.py, target.py, provenance.py, undo.py): rows in
``session``/``message``/``part`` with OpenCode's time-ordered ids, inserted in one journaled
transaction; read back by the OpenCode reader; idempotent; undone row for row; a session OpenCode
continued since is kept; the project a folder belongs to; thinking kept only for Anthropic."""
from __future__ import annotations

import json
import os
import shutil
import sqlite3
from pathlib import Path

from clirun import histmig
from histmig import tools as registry
from histmig.core.model import Reasoning, ToolCall, ToolResult
from histmig.toolkit.convert.ids import Ids
from histmig.tools import resolve_homes
from histmig.tools.opencode.target import SessionRows
from histmig.tools.opencode.write import Minter, new_id, oc_id

SAMPLES = Path(__file__).resolve().parent.parent / "histmig" / "samples"
ID_RE = r"^(ses|msg|prt)_[0-9a-f]{12}[0-9A-Za-z]{14}$"


def home(model: str | None = "anthropic/claude-sonnet-4-5") -> Path:
    homes = resolve_homes()
    db = homes.opencode / "opencode.db"
    db.parent.mkdir(parents=True)
    shutil.copy2(SAMPLES / "opencode" / "resumed" / "opencode.db", db)
    shutil.copytree(SAMPLES / "codex" / "tool-reasoning", homes.codex, dirs_exist_ok=True)
    shutil.copytree(SAMPLES / "claude-code" / "tool-thinking", homes.claude, dirs_exist_ok=True)
    if model:
        cfg = Path(os.environ["XDG_CONFIG_HOME"]) / "opencode" / "opencode.json"
        cfg.parent.mkdir(parents=True)
        cfg.write_text(json.dumps({"model": model}))
    return db


def dump(db: Path) -> dict[str, list]:
    con = sqlite3.connect(db)
    try:
        return {t: con.execute(f"SELECT * FROM {t} ORDER BY id").fetchall() for t in ("project", "session", "message",
                                                                                       "part")}
    finally:
        con.close()


def converted(source: str) -> dict:
    out = histmig("convert", "--to", "opencode", "--from", source, "--apply", "--json")
    assert out.exit_code == 0, out.stderr
    [done] = [s for s in json.loads(out.stdout)["sessions"] if s["status"] == "convert"]
    return done


def test_ids_are_opencodes_time_ordered_ids():
    import re
    ids = Ids(seed=1, now=1.8e9)
    sid = new_id(ids)
    assert re.match(ID_RE, sid)
    # sessions count down (the newest sorts first), messages and parts count up
    assert new_id(Ids(seed=1, now=1.9e9)) < sid
    mint = Minter(ids)
    minted = [mint("msg", 5000), mint("prt", 5000), mint("msg", 4000), mint("msg", 6000)]
    assert [m[4:16] for m in minted] == sorted(m[4:16] for m in minted) and len({m[4:16] for m in minted}) == 4
    assert oc_id(ids, "msg", 1, 1)[4:16] == f"{4097:012x}"


def test_codex_and_claude_sessions_become_rows_the_reader_reads_back(tmp_path):
    db = home()
    before = dump(db)
    codex, claude = converted("codex"), converted("claude-code")
    after = dump(db)
    assert len(after["session"]) == len(before["session"]) + 2 and after["project"] == before["project"]
    assert codex["paths"] == [f"{db}#{codex['new_id']}"]
    assert "reasoning (codex: bound to its provider)" in codex["loss"]["dropped"]
    # the Claude sample was made by another Claude model than OpenCode asks: it sends the thinking as text
    assert any(k.startswith("reasoning (made by") for k in claude["loss"].get("approximated", {}))

    reader = registry.adapter("opencode")
    s = reader.read(f"{db}#{codex['new_id']}")
    calls = [p for r in s.records for p in r.parts if isinstance(p, ToolCall)]
    results = [p for r in s.records for p in r.parts if isinstance(p, ToolResult)]
    assert [(c.name, c.arguments["command"]) for c in calls] == [("bash", "echo hello from the tool")]
    assert [r.call_id for r in results] == [calls[0].call_id] and "hello from the tool" in results[0].output
    assert [r.role for r in s.records] == ["user", "assistant", "assistant"]
    assert s.cwd == "/tmp/histmig-rec/work/app" and s.provider == "anthropic"
    c = reader.read(f"{db}#{claude['new_id']}")
    [thinking] = [p for r in c.records for p in r.parts if isinstance(p, Reasoning)]
    assert thinking.signature and thinking.text
    data = [json.loads(m[4]) for m in dump(db)["message"] if m[1] == claude["new_id"]]
    assert data[0]["model"] == {"providerID": "anthropic", "modelID": "claude-sonnet-4-5"}
    assert [d.get("finish") for d in data[1:]] == ["tool-calls", "stop"] and data[1]["parentID"]


def test_converting_again_finds_the_copy_and_undo_deletes_exactly_the_rows():
    db = home()
    before = dump(db)
    converted("codex")
    again = histmig("convert", "--to", "opencode", "--from", "codex", "--apply")
    assert again.exit_code == 0 and "already converted" in again.stdout
    assert histmig("undo").exit_code == 0
    assert dump(db) == before


def test_a_session_opencode_continued_since_is_kept_by_undo():
    db = home()
    done = converted("codex")
    con = sqlite3.connect(db)
    con.execute("INSERT INTO message VALUES ('msg_ffffffffffffzzzzzzzzzzzzzz', ?, 1, 1, '{\"role\":\"user\"}')",
                (done["new_id"],))
    con.commit()
    con.close()
    out = histmig("undo")
    assert out.exit_code != 0 and "kept-continued" in out.stdout + out.stderr
    assert done["new_id"] in str(dump(db)["session"])


def test_without_configured_anthropic_model_thinking_is_dropped_and_steps_stay_honest():
    db = home(model="openai/gpt-5")
    claude = converted("claude-code")
    assert any(k.startswith("reasoning (claude-code: signed for anthropic") for k in claude["loss"]["dropped"])
    parts = [json.loads(p[5]) for p in dump(db)["part"] if p[2] == claude["new_id"]]
    assert not any(p["type"] == "reasoning" for p in parts)


def test_keep_reasoning_text_carries_codex_reasoning_as_text():
    home()
    out = histmig("convert", "--to", "opencode", "--from", "codex", "--keep-reasoning-text", "--json")
    [done] = [s for s in json.loads(out.stdout)["sessions"] if s["status"] == "convert"]
    assert "reasoning carried as plain text" in done["loss"]["approximated"]


def test_no_database_is_a_skip_that_says_to_run_opencode_first():
    homes = resolve_homes()
    shutil.copytree(SAMPLES / "codex" / "tool-reasoning", homes.codex, dirs_exist_ok=True)
    out = histmig("convert", "--to", "opencode", "--from", "codex", "--apply")
    assert out.exit_code == 3 and "run opencode once first" in out.stdout + out.stderr
    assert not (homes.opencode / "opencode.db").exists()


def test_the_project_of_a_folder_is_the_one_opencode_would_find(tmp_path):
    db = home()
    con = sqlite3.connect(db)
    con.execute("INSERT INTO project (id, worktree, time_created, time_updated, sandboxes) "
                "VALUES ('abc123', ?, 1, 1, '[]')", (str(tmp_path / "repo"),))
    con.commit()
    con.close()
    rows = SessionRows(resolve_homes())
    assert rows.project_for(str(tmp_path / "repo" / "sub"))[:2] == ("abc123", str(tmp_path / "repo"))
    cached = tmp_path / "other"
    (cached / ".git").mkdir(parents=True)
    (cached / ".git" / "opencode").write_text("def456\n")
    assert rows.project_for(str(cached / "x"))[:2] == ("def456", str(cached))
    unknown = tmp_path / "fresh"
    (unknown / ".git").mkdir(parents=True)
    pid, tree, note = rows.project_for(str(unknown))
    assert (pid, tree) == ("global", "/") and "global project" in note
    assert rows.project_for("/nowhere/at/all") == ("global", "/", None)


def test_calls_map_to_opencodes_tools():
    from histmig.toolkit.convert.calls import translate
    from histmig.tools.opencode.calls import CALLS

    def to_oc(source, name, args):
        return [(m.name, m.arguments) for m in translate(ToolCall("c", name, args), registry.hook(source, "calls"),
                                                          CALLS, "/w/app")]
    assert to_oc("codex", "exec_command", '{"cmd": "ls", "workdir": "sub"}') == \
        [("bash", {"command": "ls", "description": "ls", "workdir": "/w/app/sub"})]
    assert to_oc("claude-code", "Read", {"file_path": "a.py", "offset": 2}) == \
        [("read", {"filePath": "/w/app/a.py", "offset": 2})]
    assert to_oc("claude-code", "MultiEdit", {"file_path": "/a", "edits": [
        {"old_string": "x", "new_string": "y"}, {"old_string": "p", "new_string": "q", "replace_all": True}]}) == \
        [("edit", {"filePath": "/a", "oldString": "x", "newString": "y"}),
         ("edit", {"filePath": "/a", "oldString": "p", "newString": "q", "replaceAll": True})]
    assert to_oc("codex", "apply_patch", "*** Begin Patch\n*** Add File: n.txt\n+hi\n*** End Patch") == \
        [("write", {"filePath": "/w/app/n.txt", "content": "hi\n"})]
    assert to_oc("claude-code", "mcp__x", {"a": 1}) == [("mcp__x", {"a": 1})]


def test_rows_count_toward_the_runs_batches(monkeypatch):
    from histmig.verbs.convert import batches
    home()
    monkeypatch.setattr(batches, "BATCH_BYTES", 1)           # every session its own transaction
    out = histmig("convert", "--to", "opencode", "--all", "--apply", "--json")
    assert out.exit_code == 0, out.stderr
    assert len(json.loads(histmig("log", "--json").stdout)["transactions"]) == 2
