"""The one place where the client versions the e2e suite runs are chosen.

Two named sets: ``PINNED`` (what the suite is written against; the default) and ``NEWEST`` (the newest
versions known to pass; CI runs the suite a second time with them). Pick a set with
``HISTMIG_E2E_CLIENTS=pinned|newest``; override one client with ``HISTMIG_E2E_CODEX=<v>`` /
``HISTMIG_E2E_CLAUDE_CODE=<v>`` (these win over the set). tests/e2e/clients.py installs whatever this
module says into a cache folder named after the two versions, so the sets live side by side.

``python -m tests.e2e.versions`` prints the npm specs of the selected versions.
"""
from __future__ import annotations

import os
import re

PINNED = {"codex": "0.171.0", "claude-code": "2.1.197"}
NEWEST = {"codex": "0.171.0", "claude-code": "2.1.332"}
SETS = {"pinned": PINNED, "newest": NEWEST}

_VERSION = re.compile(r"\d+\.\d+\.\d+")


def _selected_set() -> dict[str, str]:
    name = os.environ.get("HISTMIG_E2E_CLIENTS") or "pinned"
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

PACKAGES = {
    "@openai/codex": CODEX,
    "@anthropic-ai/claude-code": CLAUDE_CODE,
}


def parse(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split("."))


def claude_newer_than_pinned() -> bool:
    """True when the suite runs a Claude Code newer than the pinned one (for version-only marks)."""
    return parse(CLAUDE_CODE) > parse(PINNED["claude-code"])


def describe() -> str:
    return f"codex {CODEX}, claude-code {CLAUDE_CODE}"


def npm_specs() -> list[str]:
    return [f"{name}@{version}" for name, version in PACKAGES.items()]


if __name__ == "__main__":
    print(" ".join(npm_specs()))
