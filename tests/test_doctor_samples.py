"""`doctor` on every samples/ tree: healthy, except the deliberately broken cases.

Checks that depend on the machine or the clock (does the recorded cwd exist here, how old is the
file) are left out: the samples were recorded under /tmp/histmig-rec on another machine.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from histmig.cli import samples
from histmig.tools import resolve_homes
from histmig.verbs.doctor import diagnose, environment_codes

CASES = [(tool, case) for tool in samples.tools() for case in samples.cases(tool)]


def install_one(tool: str, case: Path, tmp_path: Path):
    root = tmp_path / "root"
    shutil.copytree(case, root / tool / case.name)
    return samples.install(tmp_path / "home", root=root, include_broken=True, tools=(tool,))


def test_there_are_samples_of_every_tool():
    assert {tool for tool, _ in CASES} == set(samples.tools())


@pytest.mark.parametrize("tool,case", CASES, ids=[f"{t}/{c.name}" for t, c in CASES])
def test_sample_is_healthy_unless_deliberately_broken(tool, case, tmp_path):
    homes = install_one(tool, case, tmp_path)
    report = diagnose(homes, ignore=environment_codes())
    if samples.is_broken_case(case):
        assert not report.healthy
    else:
        assert report.findings == []


@pytest.mark.parametrize("tool", ["claude-code", "mini-cc"])
def test_broken_samples_report_each_damaged_file(tool, tmp_path):
    import json
    src = samples.samples_root() / "broken" / tool
    dst = tmp_path / "h"
    shutil.copytree(src, dst)
    key = {"claude-code": "claude_home", "mini-cc": "mini_cc_home"}[tool]
    prefix = {"claude-code": "claude.", "mini-cc": "mini-cc."}[tool]
    homes = resolve_homes(home=tmp_path, **{key: dst})
    report = diagnose(homes, ignore=environment_codes())
    by_file = {Path(f.path).stem: f.code for f in report.findings}
    kinds = json.loads((src / "kinds.json").read_text())
    assert by_file.pop(next(k for k, v in kinds.items() if v == "truncated-tail")) == prefix + "truncated-tail"
    # every other damaged file is a broken line; CRLF and BOM lines parse (clients read them too)
    fine = {k for k, v in kinds.items() if v in ("crlf-lines", "leading-bom")}
    assert set(by_file.values()) == {prefix + "broken-lines"}
    assert set(by_file) == set(kinds) - fine - {k for k, v in kinds.items() if v == "truncated-tail"}
