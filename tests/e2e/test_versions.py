"""tests/e2e/versions.py: the named sets and the environment overrides (no client needed)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from . import versions

ROOT = Path(__file__).resolve().parents[2]


def specs(**env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("HISTMIG_E2E_")}
    return subprocess.run([sys.executable, "-m", "tests.e2e.versions"], cwd=ROOT, env=clean | env,
                          capture_output=True, text=True, timeout=30)


def test_newest_is_the_default_and_oldest_is_a_named_set():
    newest = [f"@openai/codex@{versions.NEWEST['codex']}", f"@anthropic-ai/claude-code@{versions.NEWEST['claude-code']}"]
    assert specs().stdout.split() == newest
    assert specs(HISTMIG_E2E_CLIENTS="newest").stdout.split() == newest
    assert specs(HISTMIG_E2E_CLIENTS="oldest").stdout.split() == [
        f"@openai/codex@{versions.OLDEST['codex']}", f"@anthropic-ai/claude-code@{versions.OLDEST['claude-code']}"]


def test_the_newest_claude_code_is_pinned_and_2_1_197_stays_the_second_run():
    assert versions.parse(versions.NEWEST["claude-code"]) >= (2, 1, 332)
    assert versions.OLDEST["claude-code"] == "2.1.197"
    run = (ROOT / ".ci" / "run").read_text()
    assert "HISTMIG_E2E_CLIENTS=oldest" in run and "pytest" in run.split("HISTMIG_E2E_CLIENTS=oldest")[-1]


def test_one_client_is_overridden_over_the_set():
    out = specs(HISTMIG_E2E_CLIENTS="oldest", HISTMIG_E2E_CLAUDE_CODE="2.1.200").stdout.split()
    assert out == [f"@openai/codex@{versions.OLDEST['codex']}", "@anthropic-ai/claude-code@2.1.200"]
    assert specs(HISTMIG_E2E_CODEX="0.170.0").stdout.split()[0] == "@openai/codex@0.170.0"


def test_a_bad_set_or_version_is_refused_with_the_variable_named():
    bad = specs(HISTMIG_E2E_CLIENTS="latest")
    assert bad.returncode != 0 and "HISTMIG_E2E_CLIENTS='latest'" in bad.stderr
    bad = specs(HISTMIG_E2E_CLAUDE_CODE="latest; rm -rf /")
    assert bad.returncode != 0 and "HISTMIG_E2E_CLAUDE_CODE=" in bad.stderr
