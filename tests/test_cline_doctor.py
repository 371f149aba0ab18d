"""Cline doctor checks (tools/cline/doctor.py): a gone cwd (with the move), unnamed tool results,
a stale messages_path, unreadable files."""
from __future__ import annotations

import json
from datetime import datetime, timezone

from histmig.cli import samples
from histmig.toolkit.doctor.locate import HomeIndex
from histmig.tools.cline import adapter, doctor


def findings(homes):
    return doctor.check(homes, HomeIndex(homes.home, []), datetime.now(timezone.utc))


def test_samples_recorded_in_a_gone_folder_are_named_with_the_move(tmp_path):
    homes = samples.install(tmp_path / "h", tools=("cline",))
    codes = {f.code: f for f in findings(homes)}
    assert set(codes) <= {"cline.cwd-missing"}
    if "cline.cwd-missing" in codes:     # /tmp/histmig-rec/work/app exists only while recording
        assert "histmig" in codes["cline.cwd-missing"].fix and "move" in codes["cline.cwd-missing"].fix


def test_unnamed_result_stale_messages_path_and_broken_file(tmp_path):
    homes = samples.install(tmp_path / "h", tools=("cline",))
    refs = {r.title: r for r in adapter.discover(homes)}
    tool = refs["RUN: echo hello from the tool"].path
    doc = json.loads(tool.read_bytes())
    for m in doc["messages"]:
        for b in m["content"]:
            b.pop("name", None) if b.get("type") == "tool_result" else None
    tool.write_text(json.dumps(doc, indent=2))
    manifest = adapter.manifest_path(refs["first question"].path)
    man = json.loads(manifest.read_bytes())
    man["messages_path"] = "/elsewhere/x.messages.json"
    manifest.write_text(json.dumps(man, indent=2))
    refs["Say hello in one short sentence."].path.write_text("{")
    got = {(f.code, f.path) for f in findings(homes)}
    assert ("cline.tool-result-name", str(tool)) in got
    assert ("cline.messages-path", str(manifest)) in got
    assert ("cline.unreadable", str(refs["Say hello in one short sentence."].path)) in got
