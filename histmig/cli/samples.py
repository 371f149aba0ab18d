"""Install the bundled ``histmig/samples/`` trees into a scratch home (for ``histmig demo`` and tests).

Each ``histmig/samples/<tool>/<case>/`` folder (``<tool>``: its canonical name in the tool table) is a
home of that tool (CODEX_HOME, CLAUDE_CONFIG_DIR, MINI_CC_HOME; manifest cases are Claude-home-like).
Installing merges every case of a tool into that tool's home: files are copied with their mtimes,
SQLite databases are merged row by row, then each tool's ``samples`` hook fixes what a copy breaks
(histmig/tools/codex/samples.py re-points ``threads.rollout_path`` at the copied files: a copied home
otherwise keeps pointing at the tree it was recorded in). The trees are package data, so a wheel, an sdist and an
editable install all carry them (docs/install.md, "What the wheel and the sdist ship").
"""
from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path

from histmig import tools as registry
from histmig.core.homes import Homes
from histmig.tools import resolve_homes



def tools() -> tuple[str, ...]:
    """The tools with bundled samples: ``histmig/samples/<tool>/`` is named by its canonical name."""
    return tuple(t for t in registry.names() if (samples_root() / t).is_dir())


def samples_root() -> Path:
    env = os.environ.get("HISTMIG_SAMPLES")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[1] / "samples"


def cases(tool: str, root: Path | None = None, *, include_broken: bool = True) -> list[Path]:
    base = (root or samples_root()) / tool
    if not base.is_dir():
        return []
    out = sorted(p for p in base.iterdir() if p.is_dir())
    return out if include_broken else [p for p in out if not is_broken_case(p)]


def is_broken_case(path: Path) -> bool:
    return any(w in path.name for w in ("broken", "unhealthy"))


def _merge_sqlite(src: Path, dst: Path) -> None:
    if not dst.exists():
        with sqlite3.connect(src) as s, sqlite3.connect(dst) as d:
            s.backup(d)
        return
    con = sqlite3.connect(dst)
    try:
        con.execute("ATTACH DATABASE ? AS src", (str(src),))
        tables = [r[0] for r in con.execute("SELECT name FROM src.sqlite_master WHERE type='table' "
                                            "AND name NOT LIKE 'sqlite_%' AND name != '_sqlx_migrations'")]
        for t in tables:
            cols = [r[1] for r in con.execute(f"PRAGMA src.table_info('{t}')")]
            mine = {r[1] for r in con.execute(f"PRAGMA main.table_info('{t}')")}
            if not mine:
                continue
            common = ", ".join(f'"{c}"' for c in cols if c in mine)
            con.execute(f'INSERT OR IGNORE INTO main."{t}" ({common}) SELECT {common} FROM src."{t}"')
        con.commit()
        con.execute("DETACH DATABASE src")
    finally:
        con.close()


def _copy_tree(src: Path, dst: Path) -> None:
    for root, _dirs, files in os.walk(src):
        rel = Path(root).relative_to(src)
        (dst / rel).mkdir(parents=True, exist_ok=True)
        for name in files:
            s, d = Path(root) / name, dst / rel / name
            if name.endswith((".sqlite-wal", ".sqlite-shm", ".db-wal", ".db-shm")):
                continue
            if name.endswith((".sqlite", ".db")):   # .db: OpenCode's database
                _merge_sqlite(s, d)
            elif not d.exists():
                shutil.copy2(s, d)


def install(dest_home: Path, *, root: Path | None = None, include_broken: bool = False,
            tools: tuple[str, ...] | None = None) -> Homes:
    """Copy the samples of ``tools`` (default: every tool in the table) into ``dest_home`` (a $HOME
    stand-in), each into that tool's home, and return its Homes. Then every tool's ``samples`` hook
    fixes up what a copy breaks (Codex's ``threads.rollout_path``)."""
    homes = resolve_homes(home=dest_home)
    for tool in registry.names() if tools is None else tools:
        for case in cases(tool, root, include_broken=include_broken):
            _copy_tree(case, Path(registry.tool(tool).home(homes)))
    for row in list(registry.TABLE.values()):
        fix = row.hook("samples")
        if fix is not None:
            fix(homes)
    return homes
