"""Issue 14, JSON: every command's --json output names its schema, validates against the schema file
shipped in histmig/schemas/, writes times as ISO 8601 UTC and tools by canonical name, and prints a
plan's summary (the whole plan only with --plan-out). docs/json.md documents each schema."""
from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import orjson
import pytest

from clirun import histmig
from histmig.cli import COMMANDS, samples
from histmig.cli.jsonout import iso_text, iso_utc
from histmig.tools import names
from jsonschema_lite import validate

ROOT = Path(__file__).resolve().parents[1]
SCHEMAS = ROOT / "histmig" / "schemas"
OLD = "/tmp/histmig-rec/work/app"          # the folder the recorded samples were made in (tests/test_scan.py)


def schema_for(doc: dict) -> dict:
    m = re.fullmatch(r"histmig\.([a-z.]+)/1", doc["schema"])
    assert m, doc["schema"]
    return json.loads((SCHEMAS / f"{m.group(1)}.json").read_text())


@pytest.fixture(scope="module")
def outputs(tmp_path_factory) -> dict[str, dict]:
    """Every command (and mode) with --json, run on the bundled samples; keyed by a label."""
    tmp = tmp_path_factory.mktemp("json")
    samples.install(tmp / "h")
    plan = tmp / "move.plan"
    out: dict[str, dict] = {}

    def run(label: str, *args: str, codes=(0, 1, 3)) -> dict:
        r = histmig("--home", tmp / "h", "--state-dir", tmp / "state", *args)
        assert r.exit_code in codes, (label, r.stderr)
        out[label] = orjson.loads(r.stdout)
        return out[label]

    scan = run("scan", "scan", "--json")
    run("scan --by month", "scan", "--by", "month", "--json")
    sid = scan["sessions"][0]["id"]
    run("show", "show", sid, "--format", "json")
    run("show.native", "show", sid, "--format", "native")
    run("flip.list", "flip", "--list", "--json")
    run("flip", "flip", "openai", "my-provider", "--json")
    run("flip --exact", "flip", "openai", "my-provider", "--exact", "--json")
    run("move", "move", OLD, str(tmp / "moved"), "--json")
    run("move --plan-out", "move", OLD, str(tmp / "moved"), "--json", "--plan-out", str(plan))
    run("convert", "convert", "--to", "claude-code", "--from", "codex", "--json")
    run("convert --plan-out", "convert", "--to", "mini-cc", "--from", "codex", "--json", "--plan-out", str(tmp / "c.plan"))
    run("doctor", "doctor", "--json")
    run("doctor --repair", "doctor", "--repair", "--json")
    run("log (empty)", "log", "--json")
    run("apply", "apply", str(plan), "--json")
    run("apply (again: nothing to do)", "apply", str(plan), "--json")
    run("flip --apply", "flip", "openai", "my-provider", "--apply", "--json")
    run("convert --apply", "convert", "--to", "mini-cc", "--from", "codex", "--apply", "--json")
    run("log", "log", "--json")
    run("undo --dry-run", "undo", "--dry-run", "--json")
    run("undo", "undo", "--json")
    run("recover", "recover", "--json")
    run("gc", "gc", "--older-than", "0", "--json")
    run("gc --apply", "gc", "--older-than", "0", "--apply", "--json")
    run("log (after gc)", "log", "--json")
    run("doctor --repair --apply", "doctor", "--repair", "--apply", "--json")   # the findings re-checked after it
    run("archive", "archive", "--json")
    run("restore", "restore", sid, "--json", codes=(0, 3))
    run("search", "search", "hello from the tool", "--tools", "--json")
    run("search -l", "search", "-l", "hello", "--json")
    run("export", "export", "--all", "--to", "markdown", "--out", str(tmp / "exported"), "--redact", "--json")
    return out


def test_every_json_output_validates_against_its_schema(outputs):
    for label, doc in outputs.items():
        assert validate(doc, schema_for(doc)) == [], label


def test_every_command_has_a_schema_and_every_schema_is_exercised(outputs):
    shipped = {p.stem for p in SCHEMAS.glob("*.json")}
    assert {d["schema"].removeprefix("histmig.").removesuffix("/1") for d in outputs.values()} == shipped
    assert {c for c in COMMANDS if c != "demo"} <= {s.split(".")[0] for s in shipped}   # demo prints no JSON


def test_the_schemas_are_documented_and_shipped():
    doc = (ROOT / "docs" / "json.md").read_text()
    for p in SCHEMAS.glob("*.json"):
        schema = json.loads(p.read_text())
        assert schema["title"] == f"histmig.{p.stem}/1" == schema["properties"]["schema"]["const"]
        assert f"`histmig.{p.stem}/1`" in doc, p.stem
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["histmig"]
    assert "schemas/*.json" in data


def test_times_are_iso_8601_utc(outputs):
    row = outputs["scan"]["sessions"][0]
    assert row["updated"].endswith("Z") and row["created"].endswith("Z")
    assert iso_utc(0) == "1970-01-01T00:00:00.000Z"
    assert iso_text("2026-10-23T10:00:01.5+02:00") == "2026-10-23T08:00:01.500Z"
    assert iso_text("2026-10-23T08:00:01") == "2026-10-23T08:00:01.000Z"      # no offset: the tools write UTC
    assert iso_text("yesterday") is None and iso_text(None) is None
    assert outputs["log"]["transactions"][0]["started"].endswith("Z")
    assert outputs["gc"]["transactions"][0]["last_write"].endswith("Z")
    assert outputs["log (after gc)"]["transactions"][0]["gc"]["at"].endswith("Z")


def test_tool_keys_are_canonical_names(outputs):
    for name in ("scan", "show", "doctor", "convert", "search"):
        tool_def = schema_for(outputs[name])["$defs"]["tool"]
        assert tool_def["enum"] == list(names())                     # a new tool is added to the schemas too
    assert list(outputs["doctor"]["tools"]) == list(names()) and "claude" not in outputs["doctor"]["tools"]


def test_move_prints_a_summary_and_plan_out_holds_the_whole_plan(outputs, tmp_path):
    dry, saved = outputs["move"], outputs["move --plan-out"]
    assert isinstance(dry["plan"]["operations"], int) and dry["plan"]["plan_out"] is None
    assert "patch" not in orjson.dumps(dry).decode() and dry["result"] is None
    whole = orjson.loads(Path(saved["plan"]["plan_out"]).read_bytes())
    assert len(whole["operations"]) == saved["plan"]["operations"] == dry["plan"]["operations"] > 0
    assert outputs["apply"]["result"]["applied"] and outputs["apply"]["result"]["txid"]


def test_the_validator_reports_what_breaks_a_schema():
    schema = json.loads((SCHEMAS / "log.json").read_text())
    good = {"schema": "histmig.log/1", "transactions": []}
    assert validate(good, schema) == []
    bad_tx = {"txid": "x", "state": "committed", "op": "flip", "argv": [], "started": 1796125177.5, "changes": 1,
              "paths": [], "kept": [], "backup_bytes": 0, "gc": None}
    errors = validate({"schema": "histmig.log/2", "transactions": [bad_tx], "extra": 1}, schema)
    assert len(errors) == 3 and "unexpected 'extra'" in errors[-1] and "started" in errors[1]
    with pytest.raises(ValueError, match="outside the subset"):
        validate({}, {"oneOf": []})
