"""bench/run.py smoke run: builds its tiny trees in a temporary folder, runs every command and its
floor once and writes the table into the page it is given. No timing is asserted."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_quick_run_writes_the_table(tmp_path):
    doc = tmp_path / "bench.md"
    doc.write_text("# Benchmarks\n\nintro\n")
    p = subprocess.run([sys.executable, str(ROOT / "bench" / "run.py"), "--quick", "--no-compile",
                        "--work", str(tmp_path / "work"), "--doc", str(doc)],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    text = doc.read_text()
    assert text.startswith("# Benchmarks\n\nintro\n")
    for command in ("scan --json", "doctor", "flip openai my-provider --apply", "undo", "move` (dry run)",
                    "move --apply", "convert --to claude-code", "`log --json` after that move"):
        assert command in text
    # each warm scan against its necessary work too
    assert text.count("each file's record looked up in the loaded index") == 5     # Codex, Qwen, Pi, Gemini, Claude
    assert text.count("<!-- bench/run.py: begin -->") == 1
    p = subprocess.run([sys.executable, str(ROOT / "bench" / "run.py"), "--quick", "--no-compile",
                        "--work", str(tmp_path / "work2"), "--doc", str(doc)], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    assert doc.read_text().count("<!-- bench/run.py: begin -->") == 1    # replaced, not added again


def _twice_into_a_page(tmp_path, *args: str) -> str:
    """bench/run.py --quick with ``args``, run twice into one page: the page's text."""
    doc = tmp_path / "bench.md"
    doc.write_text("# Benchmarks\n\nintro\n")
    argv = [sys.executable, str(ROOT / "bench" / "run.py"), "--quick", "--no-compile", *args, "--doc", str(doc)]
    for _ in range(2):
        p = subprocess.run(argv, capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stderr[-3000:]
    return doc.read_text()


def test_quick_scale_run_writes_one_table_across_the_sizes(tmp_path):
    text = _twice_into_a_page(tmp_path, "--scale", "500,2000,8000", "--only", "convert")
    assert text.count("<!-- bench/run.py --scale: begin -->") == 1 and "<!-- bench/run.py: begin -->" not in text
    assert "| command | 8 sessions | 16 sessions | 24 sessions | per session added | RSS added |" in text
    assert "`convert --to claude-code --from codex --all --apply`, every session | " in text


def test_quick_grow_run_writes_one_table_across_the_tree_sizes(tmp_path):
    text = _twice_into_a_page(tmp_path, "--grow", "100,400,1600", "--only", "move")
    assert text.count("<!-- bench/run.py --grow: begin -->") == 1 and "<!-- bench/run.py: begin -->" not in text
    assert "| command | 1 MB | 2 MB | 3 MB | per MB added | RSS added |" in text
    assert "`undo` of that move | " in text and "the same 8 sessions in trees of each size" in text
