"""After the bundled samples were copied into a Codex home (histmig/cli/samples.py): re-point each
``threads.rollout_path`` at the copied rollout (the recorded one names the tree it was recorded in)."""
from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any


def installed(homes: Any) -> None:
    if homes.codex.exists():
        _repoint_rollouts(homes.codex)


def _repoint_rollouts(codex_home: Path) -> None:
    files = {p.name: p for p in codex_home.rglob("rollout-*.jsonl*")}
    for db in codex_home.rglob("state_*.sqlite"):
        con = sqlite3.connect(db)
        try:
            has = [r[1] for r in con.execute("PRAGMA table_info(threads)")]
            if "rollout_path" not in has:
                continue
            for tid, path in con.execute("SELECT id, rollout_path FROM threads").fetchall():
                name = Path(path or "").name
                hit = files.get(name) or files.get(name + ".zst") or files.get(name.removesuffix(".zst"))
                if hit is not None:
                    con.execute("UPDATE threads SET rollout_path=? WHERE id=?", (str(hit), tid))
            con.commit()
        finally:
            con.close()
