"""Pi (``@mariozechner/pi-coding-agent``, the version tests/e2e/versions.py selects): installed once into
its own cache sub-folder, run offline against the fake API as a ``models.json`` custom provider that
speaks Anthropic Messages (docs/pi.md).

Command line: ``python -m tests.e2e.pi_client install`` installs it and prints the path.
"""
from __future__ import annotations

import json
from pathlib import Path

from . import versions
from .clients import RUN_TIMEOUT, Run, Scratch, cache_root, client_env, install_main, install_package, package_says, run
from .fake_api import FakeAPI

PACKAGE = "@mariozechner/pi-coding-agent"
PROVIDER, MODEL = "fake", "fake-model"


def install_dir(root: Path | None = None) -> Path:
    return (root or cache_root()) / f"pi-coding-agent-{versions.PI}"


def _version_ok(exe: Path) -> bool:
    return package_says(exe, PACKAGE, versions.PI)


def install(root: Path | None = None) -> Path:
    """The ``pi`` executable, installed on first use (its package.json names the version: no ``.ok``)."""
    return install_package(install_dir(root), f"{PACKAGE}@{versions.PI}", "pi", _version_ok, marker=False)


def agent_dir(scratch: Scratch) -> Path:
    return scratch.home / ".pi" / "agent"


def pi_setup(scratch: Scratch, api: FakeAPI) -> Path:
    """``models.json`` with the fake API as provider ``fake`` (Anthropic Messages, a fake key)."""
    path = agent_dir(scratch) / "models.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"providers": {PROVIDER: {
        "baseUrl": api.url, "api": "anthropic-messages", "apiKey": "sk-fake",
        "models": [{"id": MODEL, "reasoning": True}]}}}) + "\n")
    return path


def pi_env(scratch: Scratch, api: FakeAPI) -> dict[str, str]:
    return client_env(scratch, api, {"PI_CODING_AGENT_DIR": str(agent_dir(scratch)), "PI_OFFLINE": "1",
                                     "PI_SKIP_VERSION_CHECK": "1"})


def run_pi(exe: Path, scratch: Scratch, api: FakeAPI, prompt: str, cwd: Path, *, continue_: bool = False,
           session: str | None = None, timeout: float = RUN_TIMEOUT) -> Run:
    """``pi --provider fake --model fake-model -p PROMPT``; ``continue_`` adds ``-c``, ``session`` ``--session``."""
    cmd = [str(exe), "--provider", PROVIDER, "--model", MODEL]
    if continue_:
        cmd.append("-c")
    if session:
        cmd += ["--session", session]
    cmd += ["-p", prompt]
    return run(cmd, cwd=cwd, env=pi_env(scratch, api), api=api, timeout=timeout)


def pi_sessions(scratch: Scratch) -> list[Path]:
    """Session files, oldest first."""
    files = (agent_dir(scratch) / "sessions").glob("*/*.jsonl")
    return sorted(files, key=lambda p: p.stat().st_mtime_ns)


if __name__ == "__main__":  # python -m tests.e2e.pi_client install (.ci/install-clients.sh)
    install_main("pi_client", f"pi {versions.PI}", install)
