"""A tool's hook asked for by two threads at once: the second waits for the first's import.

Undo's diff threads (histmig/verbs/undo/ahead.py ``replaced_ahead``) each build the flip's
line edit for the lines appended to a rollout since the flip, and so each ask for the Codex flip
hook on first use. A module another thread is still importing is already in ``sys.modules``, half
run; taking it from there gave an undo of a flip with two continued rollouts an AttributeError
(partially initialized module 'histmig.tools.codex.flip' has no attribute 'tail_transform').
"""
from __future__ import annotations

import sys
import threading
import time
from types import SimpleNamespace

from histmig.tools import Tool

SLOW_HOOK = """
import time
time.sleep(0.3)          # the first thread is inside the import while the second asks
def tail_transform(args):
    return None
"""


def test_a_hook_still_being_imported_is_waited_for(tmp_path, monkeypatch):
    pkg = tmp_path / "slowtool_undo8"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "flip.py").write_text(SLOW_HOOK)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "slowtool_undo8.flip", raising=False)
    tool = SimpleNamespace(package="slowtool_undo8")
    got: dict[str, bool] = {}

    def ask(name: str) -> None:          # the hook as it is when handed over (the same module object finishes later)
        got[name] = callable(getattr(Tool.hook(tool, "flip"), "tail_transform", None))

    first = threading.Thread(target=ask, args=("first",))
    first.start()
    deadline = time.monotonic() + 5
    while "slowtool_undo8.flip" not in sys.modules and time.monotonic() < deadline:
        time.sleep(0.005)          # the first import has begun: the module is in sys.modules, half run
    second = threading.Thread(target=ask, args=("second",))
    second.start()
    first.join()
    second.join()
    try:
        assert got == {"first": True, "second": True}
    finally:
        sys.modules.pop("slowtool_undo8.flip", None)
        sys.modules.pop("slowtool_undo8", None)
