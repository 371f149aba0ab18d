"""Fixtures for the e2e suite: the clients tests/e2e/versions.py selects (installed once), a fake API, a scratch world.

Outside CI a missing client (no npm, no registry) skips the client tests with the reason; in CI
(``CI=true``) it fails them, so a broken install can never pass as green.
"""
from __future__ import annotations

import os
import shutil

import pytest

from . import versions
from .clients import ClientsUnavailable, Scratch, install
from .fake_api import FakeAPI

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def pytest_report_header(config):
    return f"e2e clients: {versions.describe()} (tests/e2e/versions.py)"


@pytest.fixture(scope="session")
def clients():
    return installed("the Codex and Claude Code clients", install)


def installed(label: str, install_one):
    """``install()`` of one client: its path, or the test skipped (outside CI) / failed (in CI) with why."""
    try:
        return install_one()
    except ClientsUnavailable as e:
        if IN_CI:
            pytest.fail(f"{label} could not be installed in CI: {e}", pytrace=False)
        pytest.skip(f"{label} unavailable (set CI=true to make this a failure): {e}")


# one session fixture per client of the six agents (issues 16, 17): any e2e file may ask for them
@pytest.fixture(scope="session")
def gemini():
    from .gemini_client import install as install_gemini
    return installed("gemini", install_gemini)


@pytest.fixture(scope="session")
def qwen():
    from .qwen_client import install as install_qwen
    return installed("qwen", install_qwen)


@pytest.fixture(scope="session")
def pi():
    from .pi_client import install as install_pi
    return installed("Pi", install_pi)


@pytest.fixture(scope="session")
def copilot():
    from .copilot_client import install as install_copilot
    return installed("copilot", install_copilot)


@pytest.fixture(scope="session")
def cline():
    from .cline_client import install as install_cline
    return installed("cline", install_cline)


@pytest.fixture(scope="session")
def opencode():
    from .opencode_client import install as install_opencode
    return installed("OpenCode", install_opencode)


@pytest.fixture
def fake_api():
    with FakeAPI() as api:
        yield api


@pytest.fixture
def scratch(tmp_path) -> Scratch:
    return Scratch(tmp_path / "s").create()


@pytest.fixture
def tmux():
    """The interactive-UI helpers (tests/e2e/tui.py) need tmux; .ci/install-clients.sh installs it."""
    exe = shutil.which("tmux")
    if exe:
        return exe
    if IN_CI:
        pytest.fail("tmux is not installed (run .ci/install-clients.sh)", pytrace=False)
    pytest.skip("tmux is not installed (apt-get install -y tmux)")
