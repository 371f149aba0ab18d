"""OpenCode adapter on the recorded samples (histmig/samples/opencode/): listing, the model's parts,
the row-exact native dump, homes from $XDG_DATA_HOME and $OPENCODE_DB."""
from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from clirun import histmig
from histmig.core.model import Reasoning, Text, ToolCall, ToolResult
from histmig.tools import canonical, resolve_homes
from histmig.tools.opencode import adapter as oc

SAMPLES = Path(__file__).resolve().parent.parent / "histmig" / "samples" / "opencode"
CASES = sorted(p.name for p in SAMPLES.iterdir())


def home_with(tmp_path: Path, case: str) -> Path:
    data = tmp_path / ".local/share/opencode"
    data.mkdir(parents=True)
    shutil.copy2(SAMPLES / case / "opencode.db", data / "opencode.db")
    return data / "opencode.db"


def table_rows(db: Path, table: str, sid: str) -> list[dict]:
    con = sqlite3.connect(db)
    con.row_factory = sqlite3.Row
    col = "id" if table == "session" else "session_id"
    return [dict(r) for r in con.execute(f"SELECT * FROM {table} WHERE {col} = ? ORDER BY id", (sid,))]


@pytest.mark.parametrize("case", CASES)
def test_native_dump_is_row_exact_for_every_sample(case, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    db = home_with(tmp_path, case)
    refs = list(oc.discover(resolve_homes()))
    assert refs and all(Path(r.path) == db for r in refs)
    for ref in refs:
        rows = oc.rows_of(oc.serialize(oc.read(ref)))
        for table in ("session", "message", "part"):
            assert rows[table] == table_rows(db, table, ref.id), table


def test_tool_call_signed_thinking_and_result_map_to_parts(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    home_with(tmp_path, "resumed")
    [ref] = list(oc.discover(resolve_homes()))
    assert ref.cwd == "/tmp/histmig-rec-opencode/work/app" and ref.provider == "anthropic"
    s = oc.read(ref)
    assert s.model == "claude-sonnet-4-5" and [r.role for r in s.records][:2] == ["user", "assistant"]
    step = next(r for r in s.records if r.kind == "tool_call")
    kinds = [type(p) for p in step.parts if not p.kind == "opaque"]
    assert kinds == [Reasoning, Text, ToolCall, ToolResult]
    thinking = step.parts[[type(p) for p in step.parts].index(Reasoning)]
    assert thinking.signature and step.parent_id == s.records[0].id
    assert ref.messages == len(s.records)


def test_scan_and_show_through_the_cli(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    (tmp_path / "xdg/opencode").mkdir(parents=True)
    shutil.copy2(SAMPLES / "unicode-cwd" / "opencode.db", tmp_path / "xdg/opencode/opencode.db")
    listed = json.loads(histmig("scan", "--tool", "opencode", "--json").stdout)["sessions"]
    [one] = listed
    assert one["cwd"].endswith("データ")
    shown = histmig("show", one["id"][:12])
    assert shown.exit_code == 0, shown.stderr
    assert "Hello from a folder with データ." in shown.stdout


def test_opencode_db_names_another_database(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("XDG_DATA_HOME")
    assert resolve_homes().opencode_db is None
    monkeypatch.setenv("OPENCODE_DB", "other.db")
    assert resolve_homes().opencode_db == tmp_path / ".local/share/opencode/other.db"
    monkeypatch.setenv("OPENCODE_DB", str(tmp_path / "x.db"))
    assert resolve_homes().opencode_db == tmp_path / "x.db"


def test_aliases_name_the_tool():
    assert canonical("opencode-ai") == canonical("OpenCode") == "opencode"
