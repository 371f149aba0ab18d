"""Issue 12 case 6 with the real Claude Code 2.1.197 (interactive, in tmux) and Codex 0.171.0: a move
while a Claude session is live leaves that session's whole project folder untouched and named, moves
everything else, and the same command finishes the folder once the session has ended."""
from __future__ import annotations

import re
import time

import pytest

from histmig.core.paths import claude_slug

from . import tui
from .clients import carried, codex_setup, run_claude, run_codex
from .test_move_e2e import CODEX_ARGS, histmig

pytestmark = pytest.mark.e2e


def folder_bytes(folder) -> dict:
    return {str(p): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_case6_live_claude_session_keeps_its_folder_whole_until_it_ends(clients, fake_api, scratch, tmux):
    codex_setup(clients, scratch, fake_api)
    app = scratch.project("app")
    run_codex(clients, scratch, fake_api, "RUN: echo codex-skip-marker", app, args=CODEX_ARGS).check()
    run_claude(clients, scratch, fake_api, "RUN: echo claude-skip-marker", app).check()
    app2 = app.with_name("app2")
    folder = scratch.claude_dir / "projects" / claude_slug(str(app))

    tui.claude_setup(scratch)
    with tui.Tmux([str(clients.claude)], app, tui._env(scratch, fake_api)) as live:
        live.wait_for(*tui.READY, timeout=60)
        tui._send_prompt(live, fake_api, "typed-while-live", 60)
        registry = list((scratch.claude_dir / "sessions").glob("*.json"))
        assert registry, "Claude Code registers its live session in <config>/sessions/<pid>.json"
        before = folder_bytes(folder)
        done = histmig(scratch, "move", str(app), str(app2), "--apply")
        assert done.returncode == 3, done.stderr
        [line] = [x for x in done.stderr.splitlines() if x.startswith("skip: ")]
        assert line.startswith(f"skip: {folder}: live Claude Code session")
        # the re-run command is complete: the homes this run was given, then the move itself
        rerun = rf"re-run: histmig (--[a-z-]+ \S+ )*move {re.escape(str(app))} {re.escape(str(app2))} --apply"
        assert re.search(rerun, line), line
        assert folder_bytes(folder) == before                  # nothing in the live folder changed
        assert not (scratch.claude_dir / "projects" / claude_slug(str(app2))).exists()
        rollout = next(scratch.codex_home.rglob("rollout-*.jsonl")).read_text()
        assert f'"cwd":"{app2}"' in rollout                      # Codex moved meanwhile
        live.keys("/exit", literal=True)
        time.sleep(0.3)
        live.keys("Enter")
        live.wait_for(tui.EXIT_MARK, timeout=60)

    again = histmig(scratch, "move", str(app), str(app2), "--apply")
    assert again.returncode == 0, again.stderr
    assert not folder.exists() and (scratch.claude_dir / "projects" / claude_slug(str(app2))).is_dir()
    app.rename(app2)
    claude = run_claude(clients, scratch, fake_api, "after the move", app2, continue_=True).check()
    sent = claude.model_requests("anthropic")
    assert any(carried(r, "typed-while-live") or carried(r, "claude-skip-marker") for r in sent)
    codex = run_codex(clients, scratch, fake_api, "after the move", app2, resume="last", args=CODEX_ARGS).check()
    assert any(carried(r, "codex-skip-marker") for r in codex.model_requests("responses"))
