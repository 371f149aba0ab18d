"""Gemini CLI for the e2e suite: install the pinned version (tests/e2e/versions.py) and run it offline.

The offline recipe is docs/specs/agents.md §2: an API key, ``GOOGLE_GEMINI_BASE_URL`` at the fake API,
``security.auth.selectedType=gemini-api-key`` in settings, a trusted workspace, and always ``-m`` (without
it Gemini asks its model router first and retries for about 100 s against a fake answer).
The home is ``$GEMINI_CLI_HOME/.gemini``; tests give it the scratch HOME.
"""
from __future__ import annotations

import fcntl
import json
import subprocess
from pathlib import Path

from . import versions
from .clients import (ClientsUnavailable, RUN_TIMEOUT, Run, Scratch, _base_env, _checked, cache_root,
                      client_env, run)
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
    try:
        out = subprocess.run([str(exe), "--version"], capture_output=True, text=True, timeout=60,
                             env=_base_env(None) | {"HOME": str(home)}).stdout
    except (OSError, subprocess.TimeoutExpired):
        return False
    return versions.GEMINI in out


def install(root: Path | None = None) -> Path:
    """Install the pinned Gemini CLI into its cache sub-folder once; return the ``gemini`` binary."""
    import os
    import shutil
    prefix = install_dir(root)
    prefix.mkdir(parents=True, exist_ok=True)
    with open(prefix.parent / ".install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        exe = binary(prefix)
        if (prefix / ".ok").exists() and _version_ok(exe):
            return exe
        npm = shutil.which("npm")
        if not npm:
            raise ClientsUnavailable("npm is not on PATH")
        env = dict(os.environ) | {"npm_config_cache": str(prefix.parent / "npm-cache"),
                                  "npm_config_update_notifier": "false"}
        (prefix / "package.json").write_text('{"name": "histmig-e2e-clients", "private": true}\n')
        _checked([npm, "install", "--no-save", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error",
                  f"@google/gemini-cli@{versions.GEMINI}"], env, prefix, "npm install gemini-cli")
        if not _version_ok(exe):
            raise ClientsUnavailable(f"gemini in {prefix} does not report {versions.GEMINI}")
        (prefix / ".ok").write_text(f"@google/gemini-cli@{versions.GEMINI}\n")
        return exe


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
    import sys
    if sys.argv[1:] != ["install"]:
        sys.exit("usage: python -m tests.e2e.gemini_client install")
    try:
        print(f"gemini {versions.GEMINI}: {install()}")
    except ClientsUnavailable as e:
        sys.exit(f"error: {e}")
