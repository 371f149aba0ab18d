"""The README is assembled from docs/*.md; it must be up to date and name the two set-up commands."""
from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _assemble() -> str:
    spec = importlib.util.spec_from_file_location("assemble_readme", ROOT / "docs" / "assemble_readme.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.assemble()


def test_readme_is_assembled_from_the_docs_pages():
    assert (ROOT / "README.md").read_text() == _assemble(), "run: python docs/assemble_readme.py"


def test_readme_test_command_is_what_ci_runs():
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    assert "bash .ci/install-clients.sh" in readme and "install-clients.sh" in ci
    assert ".venv/bin/python -m pytest -q" in readme and ".venv/bin/python -m pytest -q" in ci
    assert ".venv/bin/histmig demo" in readme
