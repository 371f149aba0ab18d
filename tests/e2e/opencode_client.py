"""OpenCode (``opencode-ai``, the version tests/e2e/versions.py selects): installed once into its own cache
sub-folder, run offline against the fake API through an ``opencode.json`` whose ``anthropic`` provider
points at it (docs/opencode.md).

Command line: ``python -m tests.e2e.opencode_client install`` installs it and prints the path.
"""
from __future__ import annotations

import json
from pathlib import Path

from . import versions
from .clients import RUN_TIMEOUT, Run, Scratch, cache_root, client_env, install_main, install_package, package_says, run
from .fake_api import FakeAPI

PACKAGE = "opencode-ai"
MODEL = "anthropic/claude-sonnet-4-5"


def install_dir(root: Path | None = None) -> Path:
    return (root or cache_root()) / f"opencode-{versions.OPENCODE}"


def _version_ok(exe: Path) -> bool:
    return package_says(exe, PACKAGE, versions.OPENCODE)


def install(root: Path | None = None) -> Path:
    """The ``opencode`` executable, installed on first use (file lock: parallel callers wait; its package.json
    names the version: no ``.ok``; its install script runs: it links the platform binary)."""
    return install_package(install_dir(root), f"{PACKAGE}@{versions.OPENCODE}", "opencode", _version_ok,
                           marker=False, scripts=True)


def data_dir(scratch: Scratch) -> Path:
    return scratch.home / ".local/share/opencode"


def db_path(scratch: Scratch) -> Path:
    return data_dir(scratch) / "opencode.db"


def opencode_setup(scratch: Scratch, api: FakeAPI) -> Path:
    """``opencode.json``: the ``anthropic`` provider at the fake API with a fake key, no autoupdate/share."""
    path = scratch.home / ".config/opencode/opencode.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"autoupdate": False, "share": "disabled", "model": MODEL, "provider": {
        "anthropic": {"options": {"baseURL": api.url.rstrip("/") + "/v1", "apiKey": "sk-ant-fake"}}}}) + "\n")
    return path


def opencode_env(scratch: Scratch, api: FakeAPI) -> dict[str, str]:
    h = scratch.home
    return client_env(scratch, api, {
        "XDG_DATA_HOME": str(h / ".local/share"), "XDG_CONFIG_HOME": str(h / ".config"),
        "XDG_STATE_HOME": str(h / ".local/state"), "XDG_CACHE_HOME": str(h / ".cache"),
        "OPENCODE_DISABLE_MODELS_FETCH": "1", "OPENCODE_DISABLE_AUTOUPDATE": "1",
        "OPENCODE_DISABLE_CHANNEL_DB": "1", "npm_config_cache": str(h / ".npm")})


def run_opencode(exe: Path, scratch: Scratch, api: FakeAPI, words: list[str], cwd: Path, *,
                 continue_: bool = False, session: str | None = None, timeout: float = RUN_TIMEOUT) -> Run:
    """``opencode run [-c|-s ID] --auto WORDS...``: words unquoted, one argument each (the client wraps an
    argument with a space in quotes, docs/opencode.md)."""
    cmd = [str(exe), "run"]
    if continue_:
        cmd.append("-c")
    if session:
        cmd += ["-s", session]
    cmd += ["--auto", *words]
    return run(cmd, cwd=cwd, env=opencode_env(scratch, api), api=api, timeout=timeout)


if __name__ == "__main__":  # python -m tests.e2e.opencode_client install (.ci/install-clients.sh)
    install_main("opencode_client", f"opencode {versions.OPENCODE}", install)
