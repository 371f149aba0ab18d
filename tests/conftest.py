"""Every test runs with every home pointed at a temporary folder.

The autouse fixture ``isolated_homes`` redirects HOME, CODEX_HOME, CLAUDE_CONFIG_DIR, MINI_CC_HOME,
HISTMIG_STATE_DIR and the XDG folders, and fails the test if anything under the real home that
histmig could touch changed while it ran.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

REAL_HOME = Path(os.path.expanduser("~"))
# what histmig (or a real client started by a test) could write under the real home
WATCHED = [".codex", ".claude", ".claude.json", ".mini_cc", ".qwen", ".pi", ".gemini", ".copilot", ".cline",
           ".local/share/opencode", ".local/state/histmig", ".histmig"]


def _snapshot(home: Path) -> dict[str, tuple[int, int]]:
    snap: dict[str, tuple[int, int]] = {}
    for name in WATCHED:
        top = home / name
        if not top.exists() and not top.is_symlink():
            continue
        paths = [top] if not top.is_dir() else [top, *top.rglob("*")]
        for p in paths[:20000]:
            try:
                st = p.lstat()
            except OSError:
                continue
            snap[str(p)] = (st.st_size, st.st_mtime_ns)
    return snap


@pytest.fixture(autouse=True)
def isolated_homes(tmp_path_factory, monkeypatch):
    base = tmp_path_factory.mktemp("home")
    homes = {
        "HOME": base,
        "CODEX_HOME": base / ".codex",
        "CLAUDE_CONFIG_DIR": base / ".claude",
        "MINI_CC_HOME": base / ".mini_cc",
        "QWEN_HOME": base / ".qwen",
        "PI_CODING_AGENT_DIR": base / ".pi" / "agent",
        "GEMINI_CLI_HOME": base,          # a $HOME stand-in: the Gemini home is its .gemini
        "COPILOT_HOME": base / ".copilot",
        "CLINE_DIR": base / ".cline",
        "HISTMIG_STATE_DIR": base / ".local" / "state" / "histmig",
        "XDG_STATE_HOME": base / ".local" / "state",
        "XDG_CONFIG_HOME": base / ".config",
        "XDG_CACHE_HOME": base / ".cache",
        "XDG_DATA_HOME": base / ".local" / "share",
    }
    for var, path in homes.items():
        monkeypatch.setenv(var, str(path))
    monkeypatch.delenv("CODEX_SQLITE_HOME", raising=False)
    monkeypatch.delenv("QWEN_RUNTIME_DIR", raising=False)
    monkeypatch.delenv("PI_CODING_AGENT_SESSION_DIR", raising=False)
    monkeypatch.delenv("OPENCODE_DB", raising=False)
    monkeypatch.delenv("CLINE_DATA_DIR", raising=False)
    monkeypatch.delenv("HISTMIG_CRASH_AT", raising=False)
    before = _snapshot(REAL_HOME)
    yield homes
    after = _snapshot(REAL_HOME)
    changed = sorted(set(before.items()) ^ set(after.items()))
    assert not changed, f"test wrote outside its temporary home: {changed[:5]}"


@pytest.fixture
def codex_world(isolated_homes):
    """(homes, codex home, an existing project folder) in the isolated home."""
    from histmig.tools import resolve_homes
    homes = resolve_homes()
    proj = Path(isolated_homes["HOME"]) / "code" / "app"
    proj.mkdir(parents=True)
    homes.codex.mkdir(parents=True, exist_ok=True)
    return homes, homes.codex, str(proj)
