"""Every damaged-line kind is read without an exception, counted, and kept byte for byte
(histmig/samples/broken/, made by histmig/samples/broken/make_broken.py)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from histmig.tools.claude_code import adapter as cc
from histmig.tools.manifest import adapter as mf
from histmig.tools.mini_cc import adapter as mc
from histmig.tools import resolve_homes

BROKEN = Path(__file__).resolve().parent.parent / "histmig" / "samples" / "broken"
TOOLS = {"claude-code": cc, "mini-cc": mc}
# lines a reader must set aside per kind: CRLF and a leading BOM are damage a strict reader
# survives (the record still parses); every other kind leaves one line that is not a record
EXPECTED = {"truncated-tail": 1, "spliced-records": 1, "nul-run": 1, "invalid-utf8": 1,
            "deep-nesting": 1, "duplicate-keys": 1, "crlf-lines": 0, "leading-bom": 0,
            "huge-number": 1}


def cases():
    out = []
    for tool in TOOLS:
        kinds = json.loads((BROKEN / tool / "kinds.json").read_text())
        assert sorted(kinds.values()) == sorted(EXPECTED)
        for sid, kind in sorted(kinds.items(), key=lambda kv: kv[1]):
            out.append(pytest.param(tool, kind, next((BROKEN / tool).rglob(f"{sid}.jsonl")), id=f"{tool}-{kind}"))
    return out


@pytest.mark.parametrize("tool, kind, path", cases())
def test_damaged_line_is_read_counted_and_kept(tool, kind, path):
    fmt = TOOLS[tool]
    data = path.read_bytes()
    session = fmt.read(path)
    assert session.opaque_count == EXPECTED[kind]
    assert fmt.serialize(session) == data
    assert len(session.warnings) == EXPECTED[kind]
    for rec in session.records:
        if rec.opaque:
            assert rec.raw and rec.raw in data                       # the damaged bytes themselves
            assert session.warnings[0].line == rec.line
    assert session.cwd == "/home/user/work/app"                     # the healthy lines still count
    assert session.title == "fix the failing test in parser.py"


# a listing parses leniently (orjson alone, docs/scan-show.md "What broken means in a listing"): a line that
# only fails the strict checks is listed with its value; reading the session (above) still sets it aside
LISTED = {**EXPECTED, "duplicate-keys": 0}


@pytest.mark.parametrize("tool, kind, path", cases())
def test_discover_reports_the_broken_line_count(tool, kind, path):
    fmt = TOOLS[tool]
    ref = fmt.ref_for(path)
    assert ref.error is None
    n = LISTED[kind]
    assert ref.state == ([f"{n} broken line" + ("s" if n != 1 else "")] if n else [])
    assert ref.cwd == "/home/user/work/app"


def test_reasons_name_the_damage():
    kinds = {v: k for k, v in json.loads((BROKEN / "claude-code" / "kinds.json").read_text()).items()}
    reasons = {}
    for kind, sid in kinds.items():
        session = cc.read(next((BROKEN / "claude-code").rglob(f"{sid}.jsonl")))
        reasons[kind] = [r.opaque_reason for r in session.records if r.opaque]
    assert reasons["nul-run"] == ["NUL bytes"]
    assert reasons["invalid-utf8"] == ["invalid UTF-8"]
    assert reasons["duplicate-keys"] == ["duplicate key 'cwd'"]
    # orjson may parse 100,000 levels (then it is an array, not a record) or refuse them
    assert reasons["deep-nesting"][0] in ("not a JSON object", "nesting too deep")
    assert reasons["huge-number"] == ["not valid JSON"]
    assert reasons["spliced-records"] == ["not valid JSON"] == reasons["truncated-tail"]


def test_crlf_and_bom_files_keep_their_records():
    kinds = {v: k for k, v in json.loads((BROKEN / "claude-code" / "kinds.json").read_text()).items()}
    for kind in ("crlf-lines", "leading-bom"):
        session = cc.read(next((BROKEN / "claude-code").rglob(f"{kinds[kind]}.jsonl")))
        assert [r.source_type for r in session.records] == ["queue-operation", "user", "assistant", "user", "last-prompt"]


def test_a_whole_tree_of_broken_files_is_listed_without_an_exception(isolated_homes):
    homes = resolve_homes()
    shutil.copytree(BROKEN / "claude-code", homes.claude)
    shutil.copytree(BROKEN / "mini-cc", homes.mini_cc)
    refs = list(cc.discover(homes)) + list(mc.discover(homes))
    assert len(refs) == 2 * len(EXPECTED)
    assert sum(1 for r in refs if r.state) == 2 * sum(1 for n in LISTED.values() if n)


def test_manifest_torn_tail_is_kept_and_reported(isolated_homes):
    homes = resolve_homes()
    shutil.copytree(BROKEN.parent / "manifest" / "healthy", homes.claude)
    transcript = next(homes.claude.rglob("transcript.jsonl"))
    torn = transcript.read_bytes() + b'{"ts":"2026-10-20T08:06:00.000Z","role":"assi'
    transcript.write_bytes(torn)
    session = mf.read(transcript)
    assert session.opaque_count == 1 and mf.serialize(session) == torn
    assert "transcript tail is not valid JSON" in mf.health(session)
    [ref] = list(mf.discover(homes))
    assert ref.state[0] == "1 broken line"


def test_an_over_limit_line_is_copied_from_the_source_without_being_held(monkeypatch):
    import functools
    from histmig.jsonio import jsonl
    path = next((BROKEN / "claude-code").rglob("00000005-*.jsonl"))      # has a 200,000-byte line
    monkeypatch.setattr(cc, "read_lines", functools.partial(jsonl.read_lines, max_line_bytes=10_000))
    session = cc.read(path)
    [big] = [r for r in session.records if r.opaque]
    assert big.raw is None and big.extra["length"] == 200_001
    assert cc.serialize(session) == path.read_bytes()
