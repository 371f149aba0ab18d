"""Build README.md (the front page: docs/README.head.md and docs/README.jobs.md) and docs/MANUAL.md
(the manual: every page of docs/ in reading order) from their sources.

Run: ``python docs/assemble_readme.py``. ``tests/test_readme.py`` fails when either is out of date.
"""
from __future__ import annotations

import re
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
# (file, demote headings by) in README order
FRONT = [("README.head.md", 0), ("README.jobs.md", 0)]
PARTS = [
    ("MANUAL.head.md", 0),
    ("reference.md", 0),
    ("install.md", 1),
    ("demo.md", 1),
    ("scan-show.md", 1),
    ("search.md", 1),
    ("codex.md", 1),
    ("pi.md", 1),
    ("move.md", 1),
    ("convert.md", 1),
    ("doctor.md", 1),
    ("qwen.md", 1),
    ("gemini.md", 1),
    ("opencode.md", 1),
    ("copilot.md", 1),
    ("cline.md", 1),
    ("safety.md", 1),
    ("warnings.md", 1),
    ("formats.md", 1),
    ("bench.md", 1),
    ("testing.md", 1),
    ("e2e.md", 1),
    ("json.md", 1),
    ("decisions.md", 1),
    ("archive.md", 1),
    ("export.md", 1),
]


def demote(text: str, by: int) -> str:
    if not by:
        return text
    out, fenced = [], False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        if not fenced and re.match(r"#{1,5} ", line):
            line = "#" * by + line
        out.append(line)
    return "\n".join(out)


def assemble(parts: list[tuple[str, int]] | None = None) -> str:
    pieces = []
    for name, by in PARTS if parts is None else parts:
        path = DOCS / name
        if path.exists():
            pieces.append(demote(path.read_text().strip("\n"), by))
    return "\n\n".join(pieces) + "\n"


def front_page() -> str:
    return assemble(FRONT)


if __name__ == "__main__":
    (ROOT / "README.md").write_text(front_page())
    (DOCS / "MANUAL.md").write_text(assemble())
    print(f"wrote {ROOT / 'README.md'} and {DOCS / 'MANUAL.md'}")
