"""Shared settings files a client rewrites all the time (``~/.claude.json``: Claude Code saves it
at every start; Codex's ``config.toml``): when one changed since the transaction, its backup would
throw those changes away, so undo re-applies the transaction's own edit backwards to the file as
it is now (a move re-keys the project entries NEW -> OLD; a flip with --set-config sets
``model_provider`` back), through the same store functions the verbs use."""
from __future__ import annotations

import os
from typing import Any

from histmig.core.diagnostics import HistmigError
from histmig.core.plan import Op


def semantic_inverse(homes, begin: dict[str, Any], path: str) -> list[Op] | None:
    """The ops reverting the transaction's edit of ``path`` as it is now; None: not such a file
    (or the edit cannot be made safely: the caller keeps the file)."""
    op, args, summary = begin.get("op"), begin.get("args") or {}, begin.get("summary") or {}
    try:
        if op == "move" and summary.get("old") and summary.get("new"):
            return _move_back(homes, path, summary)
        if op == "flip" and args.get("set_config") and _same(path, _config(homes)):
            from histmig.tools.codex.config import set_model_provider_op
            w = set_model_provider_op(homes, args["old"])
            return [w] if w is not None else []
    except (HistmigError, OSError, ValueError, KeyError):
        return None
    return None


def _move_back(homes, path: str, summary: dict) -> list[Op] | None:
    from histmig.toolkit.move.common import PathMap
    rebase = PathMap((summary["new"],), summary["old"][-1]).rebase
    if _same(path, homes.claude_json):
        from histmig.tools.claude_code.edits import claude_json_op
        w, _, _ = claude_json_op(homes, rebase)
    elif _same(path, _config(homes)):
        from histmig.tools.codex.projects import projects_op
        w, _, _ = projects_op(homes, rebase)
    else:
        return None
    return [w] if w is not None else []


def _config(homes) -> str:
    from histmig.tools.codex.config import config_path
    return str(config_path(homes))


def _same(a, b) -> bool:
    return os.path.realpath(a) == os.path.realpath(b)
