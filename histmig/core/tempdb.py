"""A private temporary SQLite database on disk, for per-entry state that would otherwise grow memory with
a session's length (histmig/core/treepath.py: a branched Pi session's parents; histmig/tools/gemini/records.py:
a long Gemini log's message list).

``sqlite3.connect("")`` makes a file in SQLite's temporary directory (``SQLITE_TMPDIR``, ``TMPDIR``,
``/var/tmp`` or ``/tmp``), unlinked as it is made: it is gone when the connection closes or the process
dies. No journal and no syncs (nothing in it outlives the run); a few MB of page cache.
"""
from __future__ import annotations

import sqlite3

from histmig.core.diagnostics import HistmigError

CACHE_KB = 4096
Error = sqlite3.Error


def connect(what: str) -> sqlite3.Connection:
    """The database, in autocommit mode (callers BEGIN and COMMIT their batches); ``what`` names the
    state it keeps, for :func:`failed`."""
    try:
        con = sqlite3.connect("", isolation_level=None, check_same_thread=False)
        for pragma in (f"cache_size = -{CACHE_KB}", "journal_mode = OFF", "synchronous = OFF", "temp_store = FILE"):
            con.execute(f"PRAGMA {pragma}")
    except sqlite3.Error as e:
        raise failed(what, e) from e
    return con


def failed(what: str, e: Exception) -> HistmigError:
    """The typed error for a temporary database that cannot be written (a full or read-only temp folder)."""
    return HistmigError(f"cannot keep {what} in a temporary file: {e} (SQLITE_TMPDIR or TMPDIR names where it goes)")
