"""Codex's part of ``histmig undo`` (the protocol: histmig/toolkit/undo.py).

- ``codex archive`` / ``unarchive`` move a rollout between ``sessions/`` and ``archived_sessions/``:
  a journaled rollout that is gone is looked for there by its name.
- ``config.toml`` a client rewrote since: a move's project keys go NEW -> OLD again, a flip with
  ``--set-config`` sets ``model_provider`` back, on the file as it is now.
- A converted rollout that goes away takes along the rows Codex added for it itself (on a Codex
  whose databases did not exist yet at the conversion): a row pointing at no file would be left
  behind. The apply journals the deleted rows, so the undo of this undo restores them.
- A rollout continued since the apply: its thread's byte offsets (``thread_history_1.sqlite``),
  including rows Codex wrote after the apply, are recomputed from the inverse edits against the
  database as it is now, instead of put back from the journal (docs/codex.md, "Byte offsets").
"""
from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any

from histmig.core.diagnostics import HistmigInputError
from histmig.core.plan import Delete, Op, SqlDelete
from histmig.toolkit.undo import Extra, UndoHook, move_back, same_file, under

ROLLOUT = "rollout-"
ROLLOUT_FOLDERS = ("sessions", "archived_sessions")
# the tables of thread_history_1.sqlite that hold a thread's rows, keyed by thread_id
HISTORY_TABLES = ("thread_turns", "thread_items", "thread_history_projection_state")


class Rollouts:
    """A rollout by its file name, wherever ``codex archive`` / ``unarchive`` put it (indexed once)."""

    def __init__(self, home: Path):
        self.home = home
        self._index: dict[str, str] | None = None

    def __call__(self, path: str) -> str | None:
        name = os.path.basename(path)
        if not name.startswith(ROLLOUT) or not under(path, str(self.home)):
            return None
        if self._index is None:
            self._index = {}
            for sub in ROLLOUT_FOLDERS:
                for d, _dirs, files in os.walk(self.home / sub):
                    for f in files:
                        if f.startswith(ROLLOUT):
                            self._index.setdefault(f, os.path.join(d, f))
        return self._index.get(name)


class CodexUndo(UndoHook):
    offset_tables = frozenset({"thread_turns", "thread_history_projection_state"})

    def relocator(self, homes: Any) -> Rollouts:
        return Rollouts(Path(homes.codex))

    def settings_inverse(self, homes: Any, begin: dict[str, Any], path: str) -> list[Op] | None:
        from histmig.tools.codex.config import config_path
        if (rebase := move_back(begin)) is not None:
            if not same_file(path, config_path(homes)):
                return None
            from histmig.tools.codex.projects import projects_op
            w, _, _ = projects_op(homes, rebase)
        elif begin.get("op") == "flip" and (begin.get("args") or {}).get("set_config"):
            if not same_file(path, config_path(homes)):
                return None
            from histmig.tools.codex.config import set_model_provider_op
            w = set_model_provider_op(homes, begin["args"]["old"])
        else:
            return None
        return [w] if w is not None else []

    def rows_added(self, homes: Any, session: dict[str, Any], ops: list[Op]) -> Extra | None:
        if not any(isinstance(op, Delete) and os.path.basename(op.path).startswith(ROLLOUT) for op in ops):
            return None
        from histmig.tools.codex import state
        planned = {(op.db, op.table) for op in ops if isinstance(op, SqlDelete)}
        wanted = [(db, "threads", "id") for db in state.state_dbs(homes)]
        wanted += [(db, t, "thread_id") for db in state.history_dbs(homes) for t in HISTORY_TABLES]
        added: list[Op] = [SqlDelete(db=str(db), table=t, where={col: session["id"]}, expect_count=n, session=session,
                                     reason="undo: rows Codex added for the converted session")
                           for db, t, col in wanted if (str(db), t) not in planned
                           and (n := _count(db, t, col, session["id"]))]
        return Extra("rows Codex added", added) if added else None

    def offset_ops(self, homes: Any, session_id: str, edits: list[tuple[int, int]]) -> list[Op]:
        from histmig.tools.codex.state import offset_shift_ops
        return list(offset_shift_ops(homes, session_id, edits, reason="undo"))


def _count(db, table: str, col: str, value: str) -> int:
    from histmig.tools.codex.state import connect_ro
    try:
        con = connect_ro(db)
    except HistmigInputError:       # unreadable: nothing undo can remove there
        return 0
    try:
        return con.execute(f'SELECT count(*) FROM "{table}" WHERE "{col}" = ?', (value,)).fetchone()[0]
    except sqlite3.Error:
        return 0
    finally:
        con.close()


UNDO = CodexUndo()
