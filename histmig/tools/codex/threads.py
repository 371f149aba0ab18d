"""The ``threads`` row that registers a converted Codex session (docs/specs/codex.md §14, §15.5; docs/specs/pitfalls.md #20).

One row per state database that exists and has a ``threads`` table. The columns are read with
``PRAGMA table_info`` and only those are filled; NOT NULL columns we have no value for get a neutral
one (0 or ''), so the insert fits every schema version.
"""
from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any

from histmig.toolkit.convert.common import Target, Written
from histmig.tools.codex.write import CODEX_VERSION
from histmig.core.diagnostics import HistmigError, Warning
from histmig.core.plan import SqlInsert


def _in_roots(path: Path, homes: Any) -> bool:
    real = os.path.realpath(path)
    return any(real == os.path.realpath(r) or real.startswith(os.path.realpath(r).rstrip("/") + "/")
               for r in homes.roots())


class ThreadsTables:
    def __init__(self, homes: Any):
        from histmig.tools.codex.state import connect_ro, state_dbs
        self.schemas: dict[Path, list[tuple[str, str, bool, bool]]] = {}
        self.warnings: list[Warning] = []
        for db in state_dbs(homes):
            if not _in_roots(db, homes):
                self.warnings.append(Warning("db-outside-homes", "state database outside the tool homes not registered", str(db)))
                continue
            try:
                con = connect_ro(db)
                try:
                    cols = [(r[1], (r[2] or "").upper(), bool(r[3]), r[4] is not None)
                            for r in con.execute("PRAGMA table_info(threads)")]
                finally:
                    con.close()
            except (HistmigError, sqlite3.Error) as e:
                self.warnings.append(Warning("db-unreadable", str(e), str(db)))
                continue
            if cols:
                self.schemas[db] = cols

    @property
    def dirs(self) -> list[Path]:
        return [db.parent for db in self.schemas]

    def inserts(self, w: Written, t: Target, *, updated: float, tag: dict) -> list[SqlInsert]:
        values = row_values(w, t, updated)
        ops = []
        for db, cols in self.schemas.items():
            row: dict[str, Any] = {}
            for name, type_, notnull, has_default in cols:
                if name in values and values[name] is not None:
                    row[name] = values[name]
                elif notnull and not has_default:
                    row[name] = 0 if "INT" in type_ else ""
            ops.append(SqlInsert(str(db), "threads", row, ("id",), tag, "register converted thread"))
        return ops


def row_values(w: Written, t: Target, updated: float) -> dict[str, Any]:
    created = w.info["created"]
    preview = (w.title or "").strip() or "(converted session)"
    git = w.info.get("git") or {}
    return {"id": t.sid, "rollout_path": str(w.files[0][0]), "created_at": int(created),
            "updated_at": int(updated), "created_at_ms": int(created * 1000), "updated_at_ms": int(updated * 1000),
            "recency_at": int(updated), "recency_at_ms": int(updated * 1000), "source": "cli",
            "model_provider": t.provider, "model": t.model, "cwd": w.info["cwd"], "title": preview,
            "preview": preview, "first_user_message": preview, "sandbox_policy": "read-only",
            "approval_mode": "on-request", "tokens_used": w.info.get("tokens_used", 0), "has_user_event": 1,
            "archived": 0, "cli_version": CODEX_VERSION, "history_mode": "legacy",
            "git_branch": git.get("branch"), "git_sha": git.get("commit_hash"),
            "git_origin_url": git.get("repository_url")}
