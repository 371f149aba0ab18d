"""`histmig doctor` on the command line: grouped output, --json, exit codes, --repair dry run / apply."""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from codex_fixtures import home_with, rollout, tid
from histmig.cli import cli
from histmig.cli.common import run_guarded
from histmig.toolkit.doctor.base import CHECKS

DOCS = Path(__file__).resolve().parent.parent / "docs" / "doctor.md"


def naive_state(isolated_homes) -> Path:
    """A Codex home whose DB still says openai while the rollout and config say my-provider."""
    codex = Path(isolated_homes["CODEX_HOME"])
    proj = Path(isolated_homes["HOME"]) / "app"
    proj.mkdir()
    home_with(codex, {tid(1): rollout(tid(1), "my-provider", cwd=str(proj))})
    con = sqlite3.connect(codex / "state_5.sqlite")
    con.execute("UPDATE threads SET cwd=?", (str(proj),))
    con.commit()
    con.close()
    (codex / "config.toml").write_text('model_provider = "my-provider"\n[model_providers.my-provider]\nname = "m"\n')
    return codex


def run(capsys, *args):
    code = run_guarded(cli, list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_healthy_homes_exit_0(capsys):
    code, out, _ = run(capsys, "doctor")
    assert code == 0 and out.splitlines()[-1] == "healthy"


def test_problems_are_grouped_per_tool_and_exit_1(isolated_homes, capsys):
    naive_state(isolated_homes)
    code, out, _ = run(capsys, "doctor")
    assert code == 1
    assert "codex: 1 problem(s) in 1 finding(s)" in out and "claude-code: ok" in out
    assert "  codex.db-provider-mismatch (1): " in out and "    fix: histmig doctor --repair --apply" in out


def test_json_report(isolated_homes, capsys):
    naive_state(isolated_homes)
    code, out, _ = run(capsys, "doctor", "--json")
    doc = json.loads(out)
    assert code == 1 and doc["healthy"] is False and doc["counts"] == {"codex.db-provider-mismatch": 1}
    [f] = doc["tools"]["codex"]
    assert f["repairable"] is True and f["repair"][0].endswith("model_provider='my-provider'")


def test_repair_dry_run_writes_nothing(isolated_homes, capsys):
    codex = naive_state(isolated_homes)
    before = (codex / "state_5.sqlite").read_bytes()
    code, out, _ = run(capsys, "doctor", "--repair")
    assert code == 1 and "would update state_5.sqlite threads" in out
    assert (codex / "state_5.sqlite").read_bytes() == before
    assert not Path(isolated_homes["HISTMIG_STATE_DIR"]).exists()


def test_repair_apply_fixes_and_exits_0_then_undo_restores(isolated_homes, capsys):
    naive_state(isolated_homes)
    code, out, _ = run(capsys, "doctor", "--repair", "--apply")
    assert code == 0 and "after repair: healthy" in out
    assert run(capsys, "doctor")[0] == 0
    assert run(capsys, "undo")[0] == 0
    assert run(capsys, "doctor")[0] == 1


def test_apply_without_repair_is_a_usage_error(capsys):
    code, _, err = run(capsys, "doctor", "--apply")
    assert code == 2 and "--apply and --plan-out need --repair" in err


def test_every_check_code_is_documented():
    text = DOCS.read_text()
    missing = [code for code in CHECKS if f"`{code}`" not in text]
    assert missing == []


def test_repair_apply_json_reports_the_rechecked_findings_the_repairs_and_the_transaction(isolated_homes, capsys):
    from jsonschema_lite import validate
    naive_state(isolated_homes)
    code, out, _ = run(capsys, "doctor", "--repair", "--apply", "--json")
    doc = json.loads(out)
    schema = json.loads((DOCS.parents[1] / "histmig" / "schemas" / "doctor.json").read_text())
    assert validate(doc, schema) == []
    assert code == 0 and doc["dry_run"] is False
    assert doc["healthy"] is True and doc["counts"] == {} and doc["tools"]["codex"] == []   # re-checked
    assert doc["plan"]["summary"]["repairs"] == {"codex.db-provider-mismatch": 1}           # what was repaired
    assert doc["result"]["applied"] and doc["result"]["txid"] and doc["result"]["done"]
    dry = json.loads(run(capsys, "doctor", "--repair", "--json")[1])                         # nothing left to do
    assert dry["healthy"] is True and dry["plan"]["operations"] == 0
