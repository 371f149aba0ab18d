"""Claude Code's part of ``histmig undo`` (the protocol: histmig/toolkit/undo.py).

- ``~/.claude.json``: Claude Code saves it at every start; when it changed since a move, its backup
  would throw those changes away, so the move's project keys go NEW -> OLD again on the file as it
  is now (through the same edit the move used); an unpack's added ``projects`` entries are cut out
  of it again (the keys the unpack journaled, docs/pack.md).
- A live session (``<claude home>/sessions/<pid>.json``) keeps its project folder from being renamed
  back whole.
"""
from __future__ import annotations

from typing import Any

from histmig.tools.claude_family.live import claude_live_sessions
from histmig.core.plan import Op
from histmig.toolkit.undo import UndoHook, move_back, same_file


class ClaudeCodeUndo(UndoHook):

    def live_sessions(self, homes: Any) -> set[str]:
        return set(claude_live_sessions(homes.claude))

    def settings_inverse(self, homes: Any, begin: dict[str, Any], path: str) -> list[Op] | None:
        if begin.get("op") == "unpack" and same_file(path, homes.claude_json):
            from histmig.tools.claude_code.edits import remove_projects_op
            keys = ((begin.get("args") or {}).get("added") or {}).get(path)
            if not keys:
                return None
            w = remove_projects_op(homes, keys)
            return [w] if w is not None else []
        rebase = move_back(begin)
        if rebase is None or not same_file(path, homes.claude_json):
            return None
        from histmig.tools.claude_code.edits import claude_json_op
        w, _, _ = claude_json_op(homes, rebase)
        return [w] if w is not None else []


UNDO = ClaudeCodeUndo()
