"""`histmig export`: Markdown (one renderer with `show --format markdown`), ATIF validated with the `atif`
package's models for every sample of every tool, --redact, the session choice (docs/export.md)."""
from __future__ import annotations

import json
import re

import pytest
from clirun import histmig
from export_helpers import expected_strings, export_all, sessions

from histmig.cli import samples
from histmig.toolkit.export.markdown import fence

atif = pytest.importorskip("atif")     # a test dependency only (pyproject.toml's test extra)


def _fences_balanced(md: str) -> None:
    """Every fence that opens a block is closed by a fence of the same length, and no block is empty
    (today's `show --format markdown` wrapped a tool call in two fences: an empty block before it)."""
    opened = None
    body = 0
    for line in md.splitlines():
        m = re.match(r"^(`{3,})(\S*)$", line)
        if opened is None and m:
            opened, body = m.group(1), 0
        elif opened is not None and line == opened:
            assert body, "an empty fenced block (a double fence)"
            opened = None
        elif opened is not None:
            body += 1
    assert opened is None, "a fence left open"


def test_markdown_pages_hold_every_message_with_balanced_fences(tmp_path):
    home, out, result = export_all(tmp_path, "markdown")
    assert "exported" in result.stdout and (out / "index.md").is_file()
    index = (out / "index.md").read_text()
    count = 0
    for ref, session in sessions(home):
        page = out / ref.format / f"{ref.id}.md"
        md = page.read_text()
        assert md.startswith("# "), page
        assert f"({ref.format}/{ref.id}.md)" in index
        for text in expected_strings(session):
            assert text in md, (page, text)
        _fences_balanced(md)
        count += 1
    assert count >= 30


def test_show_markdown_is_the_export_renderer_with_title_times_and_single_fences(tmp_path):
    samples.install(tmp_path)
    rows = json.loads(histmig("--home", tmp_path, "scan", "--json", "--tool", "codex").stdout)["sessions"]
    row = next(r for r in rows if r["title"] == "RUN: echo hello from the tool")
    md = histmig("--home", tmp_path, "show", row["id"], "--format", "markdown").stdout
    assert md.startswith("# RUN: echo hello from the tool\n")
    assert "- **started:** 2026-11-30T" in md and "- **tool:** codex" in md
    assert "## user" in md and "## assistant" in md and "**→ exec_command**" in md
    assert "> *reasoning (encrypted)*:" in md
    assert "```\n```" not in md and "```\n→" not in md
    _fences_balanced(md)
    out = tmp_path / "md"
    histmig("--home", tmp_path, "export", row["id"], "--to", "markdown", "--out", out)
    assert (out / "codex" / f"{row['id']}.md").read_text() == md


def test_a_fence_is_longer_than_any_backtick_run_inside():
    text = "before\n```python\nx = 1\n```\nand ```` four"
    block = fence(text)
    assert block.startswith("`````\n") and block.endswith("\n`````")
    assert fence("plain") == "```\nplain\n```"


@pytest.mark.parametrize("tool", samples.tools())
def test_atif_validates_for_every_sample_of_every_tool(tmp_path, tool):
    home = tmp_path / "home"
    home.mkdir()
    samples.install(home, tools=(tool,))
    out = tmp_path / "atif"
    result = histmig("--home", home, "--state-dir", tmp_path / "st", "export", "--tool", tool, "--to", "atif",
                     "--out", out)
    assert result.exit_code == 0, result.stderr
    pages = sorted((out / tool).glob("*.json"))
    assert pages
    for ref, session in sessions(home):
        if ref.format != tool:
            continue
        doc = json.loads((out / tool / f"{ref.id}.json").read_text())
        traj = atif.Trajectory.model_validate(doc)        # raises on any schema violation
        assert traj.schema_version == "ATIF-v1.8" and traj.session_id == ref.id
        assert traj.agent.name == tool and traj.steps
        assert traj.final_metrics.total_steps == len(traj.steps)
        shown = json.dumps(doc, ensure_ascii=False)
        for text in expected_strings(session):
            assert json.dumps(text, ensure_ascii=False)[1:-1] in shown, (ref.id, text)
        calls = {c.tool_call_id for s in traj.steps for c in (s.tool_calls or [])}
        results = [r for s in traj.steps if s.observation for r in s.observation.results]
        assert all(r.source_call_id in calls for r in results if r.source_call_id)
        if session.subagents:
            assert [t.trajectory_id for t in traj.subagent_trajectories] == [s.id for s in session.subagents]


def test_histmig_itself_does_not_import_atif():
    import subprocess
    import sys
    code = ("import sys, histmig.toolkit.export.atif, histmig.verbs.export\n"
            "print('atif' in sys.modules or 'pydantic' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_choice_needs_a_session_a_filter_or_all(tmp_path):
    samples.install(tmp_path)
    r = histmig("--home", tmp_path, "export", "--to", "html", "--out", tmp_path / "o")
    assert r.exit_code == 2 and "--all" in r.stderr
    r = histmig("--home", tmp_path, "export", "--tool", "qwen", "--until", "2100-01-01", "--to", "markdown",
                "--out", tmp_path / "o")
    assert r.exit_code == 0 and "exported 4 session(s)" in r.stdout
    r = histmig("--home", tmp_path, "export", "--all", "--since", "1d", "--until", "2000-01-01", "--to", "markdown",
                "--out", tmp_path / "o2")
    assert r.exit_code == 0 and "exported 0 session(s)" in r.stdout
    r = histmig("--home", tmp_path, "export", "--all", "--until", "soon", "--to", "markdown", "--out", tmp_path / "o")
    assert r.exit_code == 2 and "--until" in r.stderr


def test_out_inside_a_tool_home_is_refused(tmp_path):
    samples.install(tmp_path)
    r = histmig("--home", tmp_path, "export", "--all", "--to", "html", "--out", tmp_path / ".codex" / "export")
    assert r.exit_code == 1 and "inside the codex home" in r.stderr
    assert not (tmp_path / ".codex" / "export").exists()


def test_two_sessions_with_one_id_get_two_pages(tmp_path):
    """One id listed twice (a shadowed pair: an active and an archived copy) gives two pages, both indexed."""
    from histmig import api
    from histmig.tools import resolve_homes
    samples.install(tmp_path, tools=("codex",))
    homes = resolve_homes(home=tmp_path)
    ref = next(iter(api.scan(homes, tools=["codex"])))
    report = api.export(homes, [ref, ref], "markdown", tmp_path / "o")
    hrefs = [p.href for p in report.pages]
    assert hrefs == [f"codex/{ref.id}.md", f"codex/{ref.id}-2.md"]
    index = (tmp_path / "o" / "index.md").read_text()
    assert all(f"({h})" in index and (tmp_path / "o" / h).is_file() for h in hrefs)
