"""Issue 12, case 7 with the real Codex 0.171.0: the provider ids ``flip`` accepts without
``--force`` (``codex_config.BUILTIN_PROVIDERS`` plus ``[model_providers.<id>]``) are exactly the ones
Codex loads; any other id makes Codex fail with "Model provider `x` not found" before it starts."""
from __future__ import annotations

import os
import signal
import subprocess
import threading

import pytest

from histmig.tools.codex.config import BUILTIN_PROVIDERS

from .clients import client_env, write_codex_config

pytestmark = pytest.mark.e2e
BANNER = "OpenAI Codex v"          # printed once the config (and its provider) has loaded


def provider_loads(clients, scratch, api, provider: str) -> str:
    """Run ``codex exec`` with ``model_provider = provider`` until it either prints its banner
    ("loaded") or the not-found error ("not found"); it is killed right after (no turn is run)."""
    write_codex_config(scratch, api, provider="openai", extra=f'model_provider = "{provider}"')
    project = scratch.project("p")
    p = subprocess.Popen([str(clients.codex), "exec", "--skip-git-repo-check", "hi"], cwd=project,
                         env=client_env(scratch, api), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, start_new_session=True)

    def kill() -> None:         # the whole group: the npm wrapper and the native binary it starts
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    watchdog = threading.Timer(60, kill)
    watchdog.start()
    seen = []
    try:
        for line in p.stdout:
            seen.append(line)
            if f"Model provider `{provider}` not found" in line:
                return "not found"
            if BANNER in line:
                return "loaded"
        return "exited: " + "".join(seen)[-2000:]
    finally:
        watchdog.cancel()
        kill()
        p.wait()


def test_case7_builtin_provider_ids_are_what_codex_loads(clients, fake_api, scratch):
    for provider in (*BUILTIN_PROVIDERS, "my-provider"):
        assert provider_loads(clients, scratch, fake_api, provider) == "loaded", provider
    for provider in ("oss", "my-provder", "anthropic"):
        assert provider_loads(clients, scratch, fake_api, provider) == "not found", provider
