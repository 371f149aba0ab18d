"""`histmig doctor --repair --apply` against the real Codex: the state the naive flip script leaves
behind makes `codex exec resume --last` fail; after the repair it resumes with the old history."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from codex_fixtures import naive_flip

from .clients import CUSTOM_PROVIDER, carried, codex_setup, run_codex, write_codex_config

pytestmark = pytest.mark.e2e



def histmig(scratch, *args: str) -> subprocess.CompletedProcess:
    homes = ["--home", str(scratch.home), "--codex-home", str(scratch.codex_home),
             "--claude-home", str(scratch.claude_dir), "--state-dir", str(scratch.root / "histmig-state")]
    env = {"HOME": str(scratch.home), "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}
    return subprocess.run([sys.executable, "-m", "histmig", *homes, *args], capture_output=True,
                          text=True, timeout=120, env=env)


def naive_flipped(clients, scratch, fake_api):
    """A session made under openai, then the seed's naive flip to the custom provider; its folder."""
    codex_setup(clients, scratch, fake_api)
    proj = scratch.project("app")
    run_codex(clients, scratch, fake_api, "made-under-openai", proj).check()
    write_codex_config(scratch, fake_api, provider=CUSTOM_PROVIDER)
    assert naive_flip(scratch.codex_home, "openai", CUSTOM_PROVIDER) == 1
    return proj


def test_naive_flip_state_fails_resume_and_doctor_repair_makes_it_resume(clients, scratch, fake_api):
    proj = naive_flipped(clients, scratch, fake_api)

    failed = run_codex(clients, scratch, fake_api, "after the naive flip", proj, resume="last")
    assert failed.returncode != 0
    assert "Cannot change this thread's model provider" in failed.stdout + failed.stderr

    found = histmig(scratch, "doctor", "--tool", "codex", "--json")
    assert found.returncode == 1, found.stderr
    codes = {f["code"] for f in json.loads(found.stdout)["tools"]["codex"]}
    assert {"codex.db-provider-mismatch", "codex.offsets-stale"} <= codes

    fixed = histmig(scratch, "doctor", "--tool", "codex", "--repair", "--apply")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "after repair: healthy" in fixed.stdout

    after = run_codex(clients, scratch, fake_api, "after the repair", proj, resume="last").check()
    [req] = after.model_requests("responses")
    assert req.provider == CUSTOM_PROVIDER and req.status == 200
    assert carried(req, "made-under-openai")
