"""Issue 14: the examples in the manual stay honest. The pages of docs/ (README.md and docs/MANUAL.md are
assembled from them) print one count vocabulary, the one the CLI prints (docs/safety.md, "Counts"); the
JSON examples validate against the shipped schemas; and the summary lines they show are the ones the
commands print today, run on the bundled samples."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from clirun import histmig
from histmig.cli import samples
from jsonschema_lite import validate

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
GENERATED = {"MANUAL.md"}          # assembled by docs/assemble_readme.py from the other pages
PAGES = sorted(p for p in DOCS.glob("*.md") if p.name not in GENERATED)
RETIRED = ["change(s)", "file(s) or database(s)", "applied 1 change", "restored\n"]
OLD = "/tmp/histmig-rec/work/app"          # the folder the recorded samples were made in


def blocks(page: Path) -> list[str]:
    """The fenced blocks of a page (the examples)."""
    return re.findall(r"^ *```[a-z]*\n(.*?)^ *```", page.read_text(), flags=re.S | re.M)


def test_no_page_uses_the_retired_count_words():
    for page in PAGES:
        text = page.read_text()
        assert not [w for w in RETIRED if w in text], page.name


def test_every_apply_log_and_undo_summary_shown_uses_the_current_words():
    """`applied: N file(s) (M rows in K databases); transaction T`, `... undone: N files ... reverted`,
    `dry run: N files ... to change`: the shapes histmig/cli/tx.py prints."""
    count = r"\d[\d,]* files?( \(\d[\d,]* rows? in \d+ databases?\))?"
    shapes = {"applied": rf"applied: {count}; transaction \S+",
              "undone": rf"transaction \S+ (partly )?undone: {count} reverted.*",
              "dry run:": rf"dry run: ({count} to change, nothing written; add --apply to make them"
                          rf"|undo of \S+ would revert {count}.*|nothing (was )?(written|removed).*)"}
    seen = set()
    for page in PAGES:
        for block in blocks(page):
            for line in block.splitlines():
                line = line.strip()
                for key, shape in shapes.items():
                    if line.startswith(key) or (key == "undone" and " undone: " in line):
                        seen.add(key)
                        assert re.fullmatch(shape, line), (page.name, line)
    assert seen == set(shapes)


def _json_examples():
    for page in PAGES:
        for block in blocks(page):
            text = block.split("\n", 1)[1] if block.startswith("$ ") else block
            if text.lstrip().startswith('{"schema"') or text.startswith('{\n  "schema"'):
                yield page.name, json.loads(text)


def test_every_json_example_validates_against_its_schema():
    docs = list(_json_examples())
    assert len(docs) >= 10
    for page, doc in docs:
        if doc["schema"].startswith("histmig-bundle/"):     # a bundle's manifest (docs/pack.md), not a command's output
            schema = json.loads((ROOT / "histmig" / "schemas" / "bundle" / "manifest.json").read_text())
            assert validate(doc, schema) == [], (page, "bundle")
            continue
        name = re.fullmatch(r"histmig\.([a-z.]+)/1", doc["schema"]).group(1)
        schema = json.loads((ROOT / "histmig" / "schemas" / f"{name}.json").read_text())
        assert validate(doc, schema) == [], (page, name)


@pytest.fixture
def home(isolated_homes, monkeypatch):
    """The samples installed in HOME, the tools' default homes below it (as for a new user)."""
    home = Path(isolated_homes["HOME"])
    for var in ("CODEX_HOME", "CLAUDE_CONFIG_DIR", "MINI_CC_HOME"):
        monkeypatch.delenv(var)
    samples.install(home)
    (home / "work" / "app").mkdir(parents=True)
    return home


def _out(home, *args) -> str:
    r = histmig(*args)
    assert r.exit_code in (0, 1, 3), r.stderr
    from histmig.core.paths import claude_slug
    return (r.stdout + r.stderr).replace(str(home), "/home/you").replace(claude_slug(str(home)), "-home-you")


def test_the_front_page_shows_what_the_commands_print_on_the_samples(home):
    """docs/README.jobs.md runs the jobs against the samples with HOME=/home/you: its lines (but the
    transaction ids and the converted session's new id) are the ones the commands print."""
    page = (DOCS / "README.jobs.md").read_text()
    shown = {line for block in blocks(DOCS / "README.jobs.md") for line in block.splitlines()}
    printed = (_out(home, "flip", "openai", "my-provider", "--set-config", "--apply")
               + _out(home, "move", OLD, str(home / "work" / "app"))
               + _out(home, "convert", "--to", "claude-code", "01a22acf-18", "--apply"))
    doctor = _out(home, "doctor")
    if Path("/tmp/histmig-rec").exists():
        # the recorded folder exists on this machine (an e2e recording made it): doctor then names each
        # missing project instead of their missing parent, so it prints other lines than on a new machine
        shown -= {x for x in shown if x.startswith(("codex", "  codex.", "    fix:"))}
    else:
        printed += doctor
    ids = re.compile(r"\d{8}T\d{6}\.\d{6}Z-[0-9a-f]{6}|[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}")
    printed_lines = {ids.sub("ID", x) for x in printed.splitlines()}
    missing = [x for x in shown if not x.startswith(("$ ", "...", "  ...")) and ids.sub("ID", x) not in printed_lines
               and not x.startswith("  cd ")]
    assert missing == [], missing
    assert "histmig undo" in page


def test_undo_dry_run_counts_like_apply(home):
    _out(home, "flip", "openai", "my-provider", "--apply")
    dry = _out(home, "undo", "--dry-run")
    assert re.search(r"dry run: undo of \S+ would revert \d+ files \(\d+ rows in 2 databases\); nothing written", dry)
    assert "change(s)" not in dry
