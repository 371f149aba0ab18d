"""OpenCode checks (docs/opencode.md): sessions whose folder is gone (``run -c`` there starts a new
session, ``run -s`` fails with UnknownError), and the turns such failed runs leave behind. Read-only:
rows are read through the read-only connection; repairs are plan operations.

A failed ``opencode run`` (for one, ``-s`` on a session whose folder moved) has already stored the
user's prompt and an assistant message that never got a part, a ``finish`` or ``time.completed``;
OpenCode sends those prompts with the next request, merged into one user turn. Such a turn is an
"orphan": the repair deletes its rows (parts first), journaled, so ``histmig undo`` re-inserts them.
A run still in progress looks the same for a moment; each delete names its expected row count, so a
turn that gained rows since the plan is refused, not deleted.

OpenCode's non-release builds (a channel other than ``latest``/``beta``/``prod``) keep their sessions
in ``opencode-<channel>.db`` beside ``opencode.db`` (unless ``OPENCODE_DISABLE_CHANNEL_DB`` is set;
the 1.18.33 client's database path function). Those sessions are invisible to a release build and to
histmig, which reads one database: ``opencode.channel-db`` names each such file that holds sessions,
and how to look at them (``OPENCODE_DB=<file>``, which both OpenCode and histmig honour).
"""
from __future__ import annotations

import json
import re
from collections import defaultdict
from contextlib import closing
from datetime import datetime
from pathlib import Path
from typing import Any

from histmig.core.homes import Homes
from histmig.core.plan import SqlDelete
from histmig.toolkit.doctor.base import Finding, dir_missing
from histmig.toolkit.doctor.locate import HomeIndex, move_fix
from histmig.tools.opencode.layout import db_path

REASON = "orphan turn of a failed OpenCode run"
CHANNEL_RE = re.compile(r"^opencode-([A-Za-z0-9._-]+)\.db$")


def check(homes: Homes, index: HomeIndex, now: datetime, ignored=lambda code: False) -> list[Finding]:
    """The table's doctor hook (histmig/tools/__init__.py)."""
    db = db_path(homes)
    out = [] if ignored("opencode.channel-db") else channel_dbs(homes, db)
    if not db.is_file():
        return out
    from histmig.core.diagnostics import HistmigInputError
    from histmig.tools.opencode.dbrows import open_db, rows
    try:
        con = open_db(db)
    except HistmigInputError as e:
        return out + [Finding("opencode.unreadable", str(e), path=str(db))]
    if con is None:
        return out
    with closing(con):
        sessions = list(rows(con, "SELECT id, directory FROM session ORDER BY id"))
        missing: dict[str, list[str]] = defaultdict(list)
        for s in sessions:
            if isinstance(s["directory"], str) and dir_missing(s["directory"]):   # a BLOB cwd is no folder
                missing[s["directory"]].append(s["id"])
        for cwd, ids in sorted(missing.items()):
            new = index.suggest(cwd)
            out.append(Finding("opencode.cwd-missing", f"{len(ids)} session(s) were recorded in {cwd}, which no longer "
                               "exists" + (f"; likely moved to {new}" if new else "") + "; `opencode run -c` there "
                               "starts a new session and `run -s` fails", path=str(db), count=len(ids),
                               fix=move_fix(cwd, new), data={"cwd": cwd, "suggested": new, "sessions": ids}))
        if not ignored("opencode.orphan-messages"):
            for s in sessions:
                found = orphans(con, str(db), s["id"])
                if found is not None:
                    out.append(found)
    return out


def _data(text: Any) -> dict:
    try:
        d = json.loads(text)
    except (TypeError, ValueError, RecursionError):       # RecursionError: "[" * 100000
        return {}
    return d if isinstance(d, dict) else {}


def orphans(con: Any, db: str, sid: str) -> Finding | None:
    """The session's failed turns: user messages whose every assistant reply is empty and unfinished."""
    msgs = con.execute("SELECT m.id, m.data, (SELECT count(*) FROM part p WHERE p.message_id = m.id) "
                       "FROM message m WHERE m.session_id = ? ORDER BY m.id", (sid,)).fetchall()
    replies: dict[str, list[tuple[str, bool]]] = defaultdict(list)
    users: list[tuple[str, int]] = []
    for mid, text, nparts in msgs:
        d = _data(text)
        if d.get("role") == "user":
            users.append((mid, nparts))
        elif d.get("role") == "assistant" and isinstance(d.get("parentID"), str):
            time = d.get("time") if isinstance(d.get("time"), dict) else {}
            empty = nparts == 0 and "finish" not in d and "completed" not in time and "error" not in d
            replies[d["parentID"]].append((mid, empty))
    ops: list = []
    turns = []
    unit = {"tool": "opencode", "id": sid}
    for uid, nparts in users:
        answers = replies.get(uid, [])
        if not answers or not all(empty for _, empty in answers):
            continue
        turns.append(uid)
        for mid, _ in answers:
            ops.append(SqlDelete(db=db, table="message", where={"id": mid}, expect_count=1, session=unit, reason=REASON))
        ops.append(SqlDelete(db=db, table="part", where={"message_id": uid}, expect_count=nparts, session=unit,
                             reason=REASON))
        ops.append(SqlDelete(db=db, table="message", where={"id": uid}, expect_count=1, session=unit, reason=REASON))
    if not turns:
        return None
    return Finding("opencode.orphan-messages", f"session {sid}: {len(turns)} prompt(s) of failed runs with an empty "
                   "answer; OpenCode sends them again, merged into the next request", path=db, count=len(turns),
                   fix="histmig doctor --repair (deletes those rows; histmig undo puts them back)", repair=ops,
                   data={"session": sid, "messages": turns})


def channel_dbs(homes: Homes, used: Path) -> list[Finding]:
    """Other channels' databases in the data folder that hold sessions (the module's docstring)."""
    folder = Path(homes.opencode)
    if not folder.is_dir():
        return []
    from histmig.core.diagnostics import HistmigInputError
    from histmig.tools.opencode.dbrows import open_db
    out = []
    for path in sorted(folder.glob("opencode*.db")):
        if path.name != "opencode.db" and not CHANNEL_RE.match(path.name) or path.resolve() == used.resolve():
            continue
        try:
            con = open_db(path)
        except HistmigInputError:
            continue
        if con is None:
            continue
        with closing(con):
            n = con.execute("SELECT count(*) FROM session").fetchone()[0]
        if not n:
            continue
        channel = CHANNEL_RE.match(path.name).group(1) if CHANNEL_RE.match(path.name) else "latest"
        out.append(Finding("opencode.channel-db", f"{n} session(s) in {path.name}, the database of OpenCode's "
                           f"'{channel}' channel builds; release builds and histmig read {used.name}",
                           path=str(path), count=n,
                           fix=f"OPENCODE_DB={path} histmig scan --tool opencode (and move, doctor, convert); "
                           f"OPENCODE_DB={path} opencode session list",
                           data={"db": str(path), "channel": channel, "sessions": n, "in_use": str(used)}))
    return out
