"""Where OpenCode keeps its database, and the read-only row queries every hook shares (docs/opencode.md).

Everything lives in one SQLite file in WAL mode: ``$XDG_DATA_HOME/opencode/opencode.db`` (default
``~/.local/share/opencode``); ``$OPENCODE_DB`` names another file (absolute, or relative to the data
folder). Rows are read through :func:`histmig.core.dbread.connect_ro` (read-only, busy timeout), never
written here: writes are plan operations (histmig/apply/sqlops.py). No sqlite3 import here: resolving
homes (every command) loads this module (tests/test_startup.py).
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

DB_NAME = "opencode.db"


def db_from_env(data_dir: Path, value: str | None) -> Path:
    """``$OPENCODE_DB``: an absolute path, or one relative to the data folder; unset: ``opencode.db``."""
    if not value:
        return data_dir / DB_NAME
    return Path(os.path.normpath(value if os.path.isabs(value) else data_dir / value))


def db_path(homes: Any) -> Path:
    found = getattr(homes, "opencode_db", None)
    return Path(found) if found else Path(homes.opencode) / DB_NAME
