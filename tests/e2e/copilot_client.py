"""GitHub Copilot CLI for the e2e suite: install the pinned version once, run it offline against the fake API.

Its own cache sub-folder (``copilot-<version>``). The offline recipe (docs/copilot.md): bring-your-own-key
with the Anthropic Messages wire (``COPILOT_OFFLINE=true``, ``COPILOT_PROVIDER_TYPE=anthropic``,
``COPILOT_PROVIDER_BASE_URL`` = the fake API), no GitHub login; ``-p PROMPT --allow-all-tools``;
``--continue`` / ``--resume=<id>`` continue a session. The client unpacks a 235 MB package into each home
unless ``COPILOT_CACHE_HOME`` is shared: every run here shares one beside the install.

``python -m tests.e2e.copilot_client install`` installs it and prints the path.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

from . import versions
from .clients import Run, Scratch, cache_root, client_env, install_main, install_package, reports_version, run
from .fake_api import FakeAPI

MODEL = "claude-sonnet-4.5"
RESUME_RE = re.compile(r"--resume=([0-9a-f-]{36})")


def install_dir(root: Path | None = None) -> Path:
    return (root or cache_root()) / f"copilot-{versions.COPILOT}"


def pkg_cache(exe: Path) -> Path:
    return exe.parents[2] / "pkg-cache"


def _version_ok(exe: Path) -> bool:
    home = exe.parents[2] / "version-home"
    return reports_version(exe, versions.COPILOT, {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home),
                                                   "COPILOT_AUTO_UPDATE": "false",
                                                   "COPILOT_CACHE_HOME": str(pkg_cache(exe))}, timeout=120)


def install(root: Path | None = None) -> Path:
    """The ``copilot`` executable of the pinned version (installed once; parallel callers wait; its install
    script runs: it fetches the platform build)."""
    return install_package(install_dir(root), f"@github/copilot@{versions.COPILOT}", "copilot", _version_ok,
                           scripts=True)


def copilot_home(scratch: Scratch) -> Path:
    return scratch.home / ".copilot"


def copilot_env(exe: Path, scratch: Scratch, api: FakeAPI) -> dict[str, str]:
    return client_env(scratch, api, {
        "COPILOT_HOME": str(copilot_home(scratch)), "COPILOT_CACHE_HOME": str(pkg_cache(exe)),
        "COPILOT_PKG_CACHE_HOME": str(pkg_cache(exe)),
        "COPILOT_AUTO_UPDATE": "false", "COPILOT_OFFLINE": "true", "COPILOT_PROVIDER_TYPE": "anthropic",
        "COPILOT_PROVIDER_BASE_URL": api.url, "COPILOT_PROVIDER_API_KEY": "sk-ant-fake", "COPILOT_MODEL": MODEL})


def run_copilot(exe: Path, scratch: Scratch, api: FakeAPI, prompt: str, cwd: Path, *, continue_: bool = False,
                resume: str | None = None, args: tuple[str, ...] = ()) -> Run:
    """``copilot -p PROMPT --allow-all-tools [--continue | --resume=ID]`` in ``cwd``."""
    cmd = [str(exe), "-p", prompt, "--allow-all-tools", *(["--continue"] if continue_ else []),
           *([f"--resume={resume}"] if resume else []), *args]
    return run(cmd, cwd=cwd, env=copilot_env(exe, scratch, api), api=api)


def sessions(scratch: Scratch) -> list[Path]:
    """Every ``session-state/<uuid>/events.jsonl``, oldest first."""
    files = (copilot_home(scratch) / "session-state").glob("*/events.jsonl")
    return sorted(files, key=lambda p: p.stat().st_mtime_ns)


if __name__ == "__main__":  # python -m tests.e2e.copilot_client install (.ci/install-clients.sh)
    install_main("copilot_client", f"copilot {versions.COPILOT}", install)
