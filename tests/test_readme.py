"""The README is assembled from docs/*.md; it must be up to date and name the two set-up commands."""
from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _assembler():
    spec = importlib.util.spec_from_file_location("assemble_readme", ROOT / "docs" / "assemble_readme.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _assemble() -> str:
    return _assembler().assemble()


def test_readme_is_assembled_from_the_docs_pages():
    assert (ROOT / "README.md").read_text() == _assembler().front_page(), "run: python docs/assemble_readme.py"


def test_the_manual_is_assembled_from_the_docs_pages():
    assert (ROOT / "docs" / "MANUAL.md").read_text() == _assemble(), "run: python docs/assemble_readme.py"


def test_readme_is_a_front_page_a_new_user_reads_in_five_minutes():
    """What it fixes, the two set-up commands, the jobs with real output, where to go next (issue 14)."""
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 160 and len(readme.split()) <= 1600
    for job in ("histmig flip openai my-provider", "histmig move ", "histmig convert --to claude-code", "histmig doctor"):
        assert f"$ {job}" in readme, job
    assert "undo with: histmig undo" in readme and "(docs/MANUAL.md)" in readme
    for page, _ in _assembler().PARTS:
        assert (ROOT / "docs" / page).is_file(), page


def test_readme_test_command_is_what_ci_runs():
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    assert "bash .ci/run" in readme
    assert "bash .ci/install-clients.sh" in readme and "install-clients.sh" in ci
    assert ".venv/bin/python -m pytest -q" in readme and ".venv/bin/python -m pytest -q" in ci
    assert ".venv/bin/histmig demo" in readme
