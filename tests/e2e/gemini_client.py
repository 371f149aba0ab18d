"""Gemini CLI for the e2e suite: install the pinned version (tests/e2e/versions.py) and run it offline.

The offline recipe is docs/specs/agents.md §2: an API key, ``GOOGLE_GEMINI_BASE_URL`` at the fake API,
``security.auth.selectedType=gemini-api-key`` in settings, a trusted workspace, and always ``-m`` (without
it Gemini asks its model router first and retries for about 100 s against a fake answer).
The home is ``$GEMINI_CLI_HOME/.gemini``; tests give it the scratch HOME.
"""
from __future__ import annotations

import json
from pathlib import Path

from . import versions
from .clients import (RUN_TIMEOUT, Run, Scratch, _base_env, cache_root, client_env, install_main, install_package,
                      reports_version, run)
from .fake_api import FakeAPI

MODEL = "gemini-2.5-flash"
SETTINGS = {"security": {"auth": {"selectedType": "gemini-api-key"}},
            "privacy": {"usageStatisticsEnabled": False}, "telemetry": {"enabled": False},
            "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False}}


def install_dir(root: Path | None = None) -> Path:
    return (root or cache_root()) / f"gemini-cli-{versions.GEMINI}"


def binary(prefix: Path) -> Path:
    return prefix / "node_modules/.bin/gemini"


def _version_ok(exe: Path) -> bool:
    home = exe.parents[2] / "version-home"
    home.mkdir(parents=True, exist_ok=True)
    return reports_version(exe, versions.GEMINI, _base_env(None) | {"HOME": str(home)})


def install(root: Path | None = None) -> Path:
    """Install the pinned Gemini CLI into its cache sub-folder once; return the ``gemini`` binary."""
    return install_package(install_dir(root), f"@google/gemini-cli@{versions.GEMINI}", "gemini", _version_ok)


def gemini_dir(scratch: Scratch) -> Path:
    return scratch.home / ".gemini"


def setup(scratch: Scratch, extra: dict | None = None) -> Path:
    """``~/.gemini/settings.json`` selecting API-key auth, no telemetry, no updates (plus ``extra``)."""
    path = gemini_dir(scratch) / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(SETTINGS | (extra or {}), indent=2))
    return path


def env(scratch: Scratch, api: FakeAPI) -> dict[str, str]:
    return client_env(scratch, api, {"GEMINI_CLI_HOME": str(scratch.home), "GEMINI_API_KEY": "fake-gemini-key",
                                     "GOOGLE_GEMINI_BASE_URL": api.url, "GEMINI_CLI_TRUST_WORKSPACE": "true",
                                     "NO_BROWSER": "true"})


def run_gemini(exe: Path, scratch: Scratch, api: FakeAPI, prompt: str | None, cwd: Path, *,
               resume: str | None = None, args: tuple[str, ...] = (), timeout: float = RUN_TIMEOUT) -> Run:
    """``gemini -m MODEL -y [-r RESUME] -p PROMPT``; ``prompt=None`` runs ``args`` alone (``--list-sessions``)."""
    cmd = [str(exe)]
    if prompt is not None:
        cmd += ["-m", MODEL, "-y"]
        if resume:
            cmd += ["-r", resume]
        cmd += ["-p", prompt]
    cmd += list(args)
    return run(cmd, cwd=cwd, env=env(scratch, api), api=api, timeout=timeout)


def chats(scratch: Scratch) -> list[Path]:
    """Every session file, oldest first."""
    files = (gemini_dir(scratch) / "tmp").glob("*/chats/session-*.json*")
    return sorted(files, key=lambda p: p.stat().st_mtime_ns)


if __name__ == "__main__":  # python -m tests.e2e.gemini_client install (.ci/install-clients.sh)
    install_main("gemini_client", f"gemini {versions.GEMINI}", install)
