"""tests/e2e/tui.py with both folder-trust dialogs (issue 14), no client needed: the screens below were
captured from the real clients in tmux (2026-12-01). 2.1.197 numbers the options and selects "Yes";
2.1.332 lists "No, exit" first and selected, so pressing Enter at once would quit."""
from __future__ import annotations

import pytest

from . import tui

HEAD = """ Accessing workspace:
 /tmp/x/work/app
 Quick safety check: Is this a project you created or one you trust?
 Claude Code'll be able to read, edit, and execute files here.
 Security guide
"""
OPTIONS = {
    "2.1.197": ["1. Yes, I trust this folder", "2. No, exit"],
    "2.1.332": ["No, exit", "Yes, I trust this folder"],
}


class FakeMenu:
    """A menu the keys move through, drawn like the client draws it (``❯`` on the selected line)."""

    def __init__(self, options: list[str]):
        self.options, self.selected, self.chosen = options, 0, None

    def screen(self) -> str:
        lines = [(f" {tui.CURSOR} " if i == self.selected else "   ") + o for i, o in enumerate(self.options)]
        return HEAD + "\n".join(lines) + "\n Enter to confirm · Esc to cancel\n"

    def keys(self, *keys: str, literal: bool = False) -> None:
        for k in keys:
            if k == "Down":
                self.selected = min(self.selected + 1, len(self.options) - 1)
            elif k == "Up":
                self.selected = max(self.selected - 1, 0)
            elif k == "Enter":
                self.chosen = self.options[self.selected]


@pytest.mark.parametrize("version", sorted(OPTIONS))
def test_tui_helper_accepts_both_trust_dialogs(version, monkeypatch):
    monkeypatch.setattr(tui.time, "sleep", lambda s: None)
    menu = FakeMenu(OPTIONS[version])
    assert tui.answer_dialogs(menu, menu.screen())
    assert menu.chosen is not None and menu.chosen.endswith(tui.TRUST)     # never "No, exit"


def test_tui_helper_knows_both_idle_prompts():
    assert tui.ready("  ? for shortcuts")                                  # 2.1.197
    assert tui.ready("  ⏵⏵ auto mode on (shift+tab to cycle)")              # 2.1.332: no "? for shortcuts"
    assert not tui.ready(HEAD)
