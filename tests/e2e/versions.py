"""The one place where the client versions the e2e suite runs are chosen.

Two named sets: ``NEWEST`` (the newest versions known to pass, pinned: the default, what users run) and
``OLDEST`` (the previous pin, still installed on many machines; CI runs the e2e suite a second time with
it, issue 14). Pick a set with ``HISTMIG_E2E_CLIENTS=newest|oldest``; override one client with ``HISTMIG_E2E_CODEX=<v>`` /
``HISTMIG_E2E_CLAUDE_CODE=<v>`` (these win over the set). tests/e2e/clients.py installs whatever this
module says into a cache folder named after the two versions, so the sets live side by side.

``python -m tests.e2e.versions`` prints the npm specs of the selected versions.
"""
from __future__ import annotations

import os
import re

NEWEST = {"codex": "0.171.0", "claude-code": "2.1.332", "qwen-code": "0.24.4",
          "pi": "0.73.1", "gemini": "0.61.0", "opencode": "1.18.33", "copilot": "1.0.102",
          "cline": "3.0.65"}
OLDEST = {"codex": "0.171.0", "claude-code": "2.1.197", "qwen-code": "0.24.4",
          "pi": "0.73.1", "gemini": "0.61.0", "opencode": "1.18.33", "copilot": "1.0.102",
          "cline": "3.0.65"}
SETS = {"newest": NEWEST, "oldest": OLDEST}

_VERSION = re.compile(r"\d+\.\d+\.\d+")


def _selected_set() -> dict[str, str]:
    name = os.environ.get("HISTMIG_E2E_CLIENTS") or "newest"
    if name not in SETS:
        raise SystemExit(f"HISTMIG_E2E_CLIENTS={name!r}: expected one of {', '.join(SETS)}")
    return SETS[name]


def _pick(var: str, default: str) -> str:
    value = os.environ.get(var) or default
    if not _VERSION.fullmatch(value):  # it becomes a folder name and an npm spec: keep it a plain x.y.z
        raise SystemExit(f"{var}={value!r}: expected a version like 1.2.3")
    return value


CODEX = _pick("HISTMIG_E2E_CODEX", _selected_set()["codex"])
CLAUDE_CODE = _pick("HISTMIG_E2E_CLAUDE_CODE", _selected_set()["claude-code"])
# Qwen Code installs into its own cache sub-folder (tests/e2e/qwen_client.py), not with the pair above
QWEN_CODE = _pick("HISTMIG_E2E_QWEN_CODE", _selected_set()["qwen-code"])
# Copilot CLI likewise (tests/e2e/copilot_client.py)
COPILOT = _pick("HISTMIG_E2E_COPILOT", _selected_set()["copilot"])
# Pi installs into a folder of its own (tests/e2e/pi_client.py), not with the two above
PI = _pick("HISTMIG_E2E_PI", _selected_set()["pi"])
GEMINI = _pick("HISTMIG_E2E_GEMINI", _selected_set()["gemini"])   # @google/gemini-cli (tests/e2e/gemini_client.py)
# OpenCode installs into a folder of its own (tests/e2e/opencode_client.py)
OPENCODE = _pick("HISTMIG_E2E_OPENCODE", _selected_set()["opencode"])
# Cline installs into a folder of its own (tests/e2e/cline_client.py)
CLINE = _pick("HISTMIG_E2E_CLINE", _selected_set()["cline"])

PACKAGES = {
    "@openai/codex": CODEX,
    "@anthropic-ai/claude-code": CLAUDE_CODE,
}


def parse(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split("."))


def claude_older_than_newest() -> bool:
    """True when the suite runs a Claude Code older than the newest set's (for version-only marks)."""
    return parse(CLAUDE_CODE) < parse(NEWEST["claude-code"])


def describe() -> str:
    return f"codex {CODEX}, claude-code {CLAUDE_CODE}"


def npm_specs() -> list[str]:
    return [f"{name}@{version}" for name, version in PACKAGES.items()]


if __name__ == "__main__":
    print(" ".join(npm_specs()))
