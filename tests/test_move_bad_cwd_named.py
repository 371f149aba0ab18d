"""``bad-cwd`` skips name the file (and line, or database row) a refused recorded path was read from,
not only the value: ``move OLD NEW`` leaves a recorded path under OLD that would be unusable under NEW
(docs/warnings.md ``bad-cwd``), and the user must be able to find it (CLI skip lines and ``--json``)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from histmig.toolkit.move.common import make_pathmap, scan_json_file, shown
from histmig.toolkit.move import parallel
from histmig.toolkit.move.scan import scan_file
from histmig.tools.claude_code.move import claude_fields
from histmig.verbs.move import refused_skips
from tests.test_hostile_newer_tools import _rows, _set_cwd, install, no_traceback, only

DOTDOT = "/../../../../../escape"
HUGE = "/" + "L" * 5000
OLD = "/tmp/histmig-rec/work/app"


def bad_cwd_skips(r) -> list[dict]:
    data = json.loads(r.stdout)
    return [s for s in data["plan"]["skips"] if s["code"] == "bad-cwd"]


def move(tmp_path: Path, old: str, tool: str, *extra: str):
    return no_traceback("move", old, str(tmp_path / "new"), "--tool", tool, "--include-active", *extra)


# ---- each tool: the skip's path is the file that holds the value ------------------------------------

@pytest.mark.parametrize("tool, pattern, where", [
    ("pi", "sessions/*/*.jsonl", "line 1: "), ("qwen", "projects/*/chats/*.jsonl", "line 1: "),
    ("copilot", "session-state/*/workspace.yaml", "line 2: "), ("cline", "data/sessions/*/*_?????.json", ""),
    ("gemini", "projects.json", "")])
def test_bad_cwd_skip_names_the_file_and_line(tmp_path, tool, pattern, where):
    home = install(tool)
    old = _set_cwd(tool, home, DOTDOT)
    path = only(home, pattern)
    r = move(tmp_path, old, tool, "--apply")
    assert r.exit_code == 3
    line = f"skip: {path}: {where}the recorded path {old}{DOTDOT} is under OLD but has a '..' component"
    assert line in r.stderr, r.stderr
    skips = bad_cwd_skips(move(tmp_path, old, tool, "--json"))
    assert str(path) in {s["path"] for s in skips}
    assert all(Path(s["path"]).is_file() for s in skips)     # every one names a file, never the bare value


def test_opencode_bad_directory_is_named_with_the_database_and_session(tmp_path):
    db = install("opencode", "resumed") / "opencode.db"
    _rows(db, ("UPDATE session SET directory = directory || '/../../../escape'", ()))
    r = no_traceback("move", "/tmp/histmig-rec-opencode/work/app", str(tmp_path / "new"), "--tool", "opencode",
                     "--json")
    skips = bad_cwd_skips(r)
    assert skips and all(s["path"] == str(db) and s["reason"].startswith("session ses_") for s in skips)


def _break_last_cwd(path: Path, old: str, bad: str) -> int:
    """The last line recording ``"cwd":"OLD"`` gets ``OLD + bad``; returns its line number."""
    lines = path.read_text().splitlines(keepends=True)
    n = max(i for i, line in enumerate(lines) if f'"cwd":"{old}"' in line)
    lines[n] = lines[n].replace(f'"cwd":"{old}"', f'"cwd":"{old}{bad}"')
    path.write_text("".join(lines))
    return n + 1


@pytest.mark.parametrize("tool, pattern", [("claude-code", "projects/*/*.jsonl"),
                                           ("codex", "sessions/*/*/*/rollout-*.jsonl")])
def test_a_later_line_is_named_by_its_number_and_the_rest_moves(tmp_path, tool, pattern):
    home = install(tool)
    path = only(home, pattern)
    n = _break_last_cwd(path, OLD, DOTDOT)
    assert n > 1
    r = move(tmp_path, OLD, tool)
    assert r.exit_code == 3
    assert f"skip: {path}: line {n}: the recorded path {OLD}{DOTDOT} is under OLD" in r.stderr, r.stderr


def test_a_huge_value_is_shortened_in_the_reason(tmp_path):
    home = install("pi")
    old = _set_cwd("pi", home, HUGE)
    skips = bad_cwd_skips(move(tmp_path, old, "pi", "--json"))
    (skip,) = skips
    assert skip["path"] == str(only(home, "sessions/*/*.jsonl"))
    assert len(skip["reason"]) < 400 and "…" in skip["reason"] and f"({len(old + HUGE)} bytes)" in skip["reason"]


# ---- the path map and the scan ----------------------------------------------------------------------

def test_one_skip_per_file_with_the_first_line_and_a_value_met_nowhere_named_by_itself(tmp_path):
    pm, _ = make_pathmap(OLD, str(tmp_path / "new"))
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    rec = json.dumps({"type": "user", "cwd": OLD + DOTDOT}) + "\n"
    a.write_text(json.dumps({"type": "user", "cwd": OLD}) + "\n" + rec * 3)
    b.write_text(rec)
    sa, sb = scan_file(str(a), pm, claude_fields), scan_file(str(b), pm, claude_fields)
    assert sa.patches and not sb.patches
    assert sa.refused == [(OLD + DOTDOT, "has a '..' component", "line 2")]
    assert sb.refused == [(OLD + DOTDOT, "has a '..' component", "line 1")]
    assert pm.rebase(OLD + "/x/../../y") is None               # read outside any file
    skips = refused_skips(pm)
    assert [s.path for s in skips] == [str(a), str(b), OLD + "/x/../../y"]
    assert [s.reason[:7] for s in skips] == ["line 2:", "line 1:", "the rec"]


def test_json_document_scan_names_the_file(tmp_path):
    pm, _ = make_pathmap(OLD, str(tmp_path / "new"))
    doc = tmp_path / "m.json"
    doc.write_text(json.dumps({"cwd": OLD + DOTDOT}, indent=2))
    scan = scan_json_file(str(doc), pm, lambda obj, pm: [(("cwd",), obj["cwd"], n)] if (n := pm.rebase(obj["cwd"]))
                          else [])
    assert scan.refused == [(OLD + DOTDOT, "has a '..' component", None)]
    assert refused_skips(pm)[0].path == str(doc)


def test_a_forked_scan_workers_refusals_reach_the_plan(tmp_path, monkeypatch):
    """scan_all forks above 32 MB: what a worker's path map learnt travels back in its FileScan."""
    monkeypatch.setattr(parallel, "MIN_PARALLEL_BYTES", 0)
    monkeypatch.setattr(parallel, "_cpus", lambda: 2)
    files = []
    for i in range(4):
        f = tmp_path / f"{i}.jsonl"
        f.write_text(json.dumps({"type": "user", "cwd": OLD}) + "\n" + json.dumps({"type": "user", "cwd": OLD + DOTDOT})
                     + "\n")
        files.append(str(f))
    pm, _ = make_pathmap(OLD, str(tmp_path / "new"))
    parallel.scan_all([(scan_file, (f, pm, claude_fields), {}) for f in files])
    assert sorted(s.path for s in refused_skips(pm)) == sorted(files)
    assert all(s.reason.startswith("line 2: ") for s in refused_skips(pm))


def test_shown_keeps_short_values_and_escapes_control_characters():
    assert shown("/a/b") == "/a/b"
    assert shown("/a\nb") == "/a\\nb"
    long = "/" + "x" * 1000
    assert len(shown(long)) < 200 and shown(long).endswith("(1001 bytes)")
