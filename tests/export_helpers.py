"""Shared by the export tests: the bundled samples exported once per format, and what each session must show."""
from __future__ import annotations

from pathlib import Path

from clirun import histmig

from histmig import api
from histmig.cli import samples
from histmig.core.model import Text, ToolCall, ToolResult
from histmig.toolkit.export.blocks import output_text, turns


def export_all(tmp_path: Path, to: str, *extra: str) -> tuple[Path, Path, object]:
    """Install every sample into a scratch home and ``export --all --to TO``: (home, out, result)."""
    home, out = tmp_path / "home", tmp_path / f"out-{to}"
    home.mkdir(exist_ok=True)
    if not any(home.iterdir()):
        samples.install(home)
    result = histmig("--home", home, "--state-dir", tmp_path / "state", "export", "--all", "--to", to,
                     "--out", out, *extra)
    assert result.exit_code == 0, result.stderr
    return home, out, result


def sessions(home: Path):
    """(ref, session) of every session in the home, read through the tools' adapters."""
    from histmig.tools import adapter, resolve_homes
    homes = resolve_homes(home=home)
    for ref in api.scan(homes, use_index=False):
        tool = adapter(ref.format)
        yield ref, getattr(tool, "stream", tool.read)(ref)


def expected_strings(session) -> list[str]:
    """What a page must show of each visible message: its text, each tool call's name, each result's text."""
    out: list[str] = []
    for rec in turns(session):
        for p in rec.parts:
            if isinstance(p, Text) and p.text.strip():
                out.append(p.text.strip())
            elif isinstance(p, ToolCall):
                out.append(p.name)
            elif isinstance(p, ToolResult) and output_text(p.output).strip():
                out.append(output_text(p.output).strip())
    for sub in session.subagents:
        out += expected_strings(sub)
    return out
