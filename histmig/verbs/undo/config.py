"""Shared settings files a client rewrites all the time (``~/.claude.json`` is saved at every start of
its client; a config file): when one changed since the transaction, its backup would throw those
changes away, so undo asks each tool's undo hook (histmig/toolkit/undo.py) to re-apply the
transaction's own edit backwards to the file as it is now (a move re-keys the project entries
NEW -> OLD; a flip with --set-config sets the provider back), through the same store functions the
verbs use."""
from __future__ import annotations

from typing import Any

from histmig.core.diagnostics import HistmigError
from histmig.core.plan import Op
from histmig.toolkit.undo import UndoHook


def semantic_inverse(hooks: list[UndoHook], homes, begin: dict[str, Any], path: str) -> list[Op] | None:
    """The ops reverting the transaction's edit of ``path`` as it is now; None: no tool's settings
    file (or the edit cannot be made safely: the caller keeps the file)."""
    for hook in hooks:
        try:
            ops = hook.settings_inverse(homes, begin, path)
        except (HistmigError, OSError, ValueError, KeyError):
            return None
        if ops is not None:
            return ops
    return None
