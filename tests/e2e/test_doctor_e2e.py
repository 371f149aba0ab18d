"""`histmig doctor --repair --apply` against the real Codex: the state the naive flip script leaves
behind makes `codex exec resume --last` fail; after the repair it resumes with the old history."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .clients import CUSTOM_PROVIDER, carried, codex_setup, run_codex, write_codex_config

pytestmark = pytest.mark.e2e


def naive_flip(codex_home: Path, old: str, new: str) -> int:
    """Seed 003's flip script (lines 133-161) with --apply: line 1 re-dumped by json.dumps, DB untouched."""
    hit = 0
    for f in (codex_home / "sessions").rglob("rollout-*.jsonl"):
        text = f.read_text(encoding="utf-8")
        head, sep, rest = text.partition("\n")
        meta = json.loads(head)
        payload = meta.get("payload", meta)
        if payload.get("model_provider") != old:
            continue
        hit += 1
        payload["model_provider"] = new
        f.write_text(json.dumps(meta, ensure_ascii=False) + sep + rest, encoding="utf-8")
    return hit


def histmig(scratch, *args: str) -> subprocess.CompletedProcess:
    homes = ["--home", str(scratch.home), "--codex-home", str(scratch.codex_home),
             "--claude-home", str(scratch.claude_dir), "--state-dir", str(scratch.root / "histmig-state")]
    env = {"HOME": str(scratch.home), "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}
    return subprocess.run([sys.executable, "-m", "histmig", *homes, *args], capture_output=True,
                          text=True, timeout=120, env=env)


def test_naive_flip_state_fails_resume_and_doctor_repair_makes_it_resume(clients, scratch, fake_api):
    codex_setup(clients, scratch, fake_api)
    proj = scratch.project("app")
    run_codex(clients, scratch, fake_api, "made-under-openai", proj).check()
    write_codex_config(scratch, fake_api, provider=CUSTOM_PROVIDER)
    assert naive_flip(scratch.codex_home, "openai", CUSTOM_PROVIDER) == 1

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
