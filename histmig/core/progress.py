"""Progress while a plan is made: the readers and planners say what they reach, the CLI shows it.

A plan of 3,000 sessions takes seconds to make (docs/bench.md); the library never prints, so it
reports here and nothing happens unless the CLI listens (``histmig/cli/common.py``,
``planning_progress``). Events: ``("file", size)`` for every file opened for reading,
``("step", (name, n, total))`` when a planner starts the n-th of ``total`` parts (move and flip: one per
tool), ``("files", n)`` when a part knows it is about to read ``n`` files whole (flip: the rollouts its
census picked), which restarts the count with ``n`` as its total.
"""
from __future__ import annotations

from typing import Any, Callable

Listener = Callable[[str, Any], None]
_listener: Listener | None = None


def listen(fn: Listener | None) -> Listener | None:
    """Install ``fn`` (None: nobody listens); returns the previous listener to put back."""
    global _listener
    previous, _listener = _listener, fn
    return previous


def note(event: str, value: Any = None) -> None:
    if _listener is not None:
        _listener(event, value)


def listening() -> bool:
    """Whether anyone listens (forked workers forward their events only then: core/forkmap.py)."""
    return _listener is not None
