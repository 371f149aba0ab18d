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
    try:
        return install()
    except ClientsUnavailable as e:
        if IN_CI:
            pytest.fail(f"e2e clients could not be installed in CI: {e}", pytrace=False)
        pytest.skip(f"e2e clients unavailable (set CI=true to make this a failure): {e}")


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
