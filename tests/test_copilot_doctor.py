"""Copilot CLI doctor checks (tools/copilot/doctor.py): a listed folder that is gone (with the move that fixes
it), a broken parentId chain, broken lines; the recorded samples are healthy."""
from __future__ import annotations

import shutil
from pathlib import Path

from histmig.cli import samples
from histmig.tools import resolve_homes
from histmig.verbs.doctor import diagnose

SAMPLES = Path(samples.__file__).resolve().parents[1] / "samples" / "copilot"


def findings(homes):
    return diagnose(homes, tools=["copilot"]).findings


def install(homes, case: str) -> Path:
    shutil.copytree(SAMPLES / case / "session-state", homes.copilot / "session-state", dirs_exist_ok=True)
    return next(d for d in (homes.copilot / "session-state").iterdir() if d.name in
                {p.name for p in (SAMPLES / case / "session-state").iterdir()})


def test_a_sample_listing_an_existing_folder_is_healthy(isolated_homes, tmp_path):
    homes = resolve_homes()
    d = install(homes, "tool-call")
    ws = d / "workspace.yaml"
    ws.write_bytes(ws.read_bytes().replace(b"cwd: /tmp/histmig-rec/work/app", f"cwd: {tmp_path}".encode()))
    assert findings(homes) == []


def test_cwd_missing_names_the_move(isolated_homes, tmp_path):
    homes = resolve_homes()
    d = install(homes, "plain")
    gone = tmp_path / "gone"
    ws = d / "workspace.yaml"
    ws.write_bytes(ws.read_bytes().replace(b"cwd: /tmp/histmig-rec/work/app", f"cwd: {gone}".encode()))
    (f,) = findings(homes)
    assert f.code == "copilot.cwd-missing" and f.data["cwd"] == str(gone) and "histmig move" in (f.fix or "")


def test_a_broken_chain_and_a_broken_line_are_found(isolated_homes):
    homes = resolve_homes()
    d = install(homes, "tool-call")
    lines = (d / "events.jsonl").read_bytes().splitlines(keepends=True)
    (d / "events.jsonl").write_bytes(lines[0] + b"{not json\n" + b"".join(lines[2:]))
    codes = sorted(f.code for f in findings(homes) if f.code != "copilot.cwd-missing")
    assert codes == ["copilot.broken-lines", "copilot.chain-broken"]
