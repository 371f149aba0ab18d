"""OpenCode sessions: rows of ``session``, ``message`` and ``part`` in its SQLite database (docs/opencode.md).

A session is one ``session`` row; its conversation is its ``message`` rows in id order (ids are
time-ordered: ``msg_`` + 12 hex of ms*4096+counter + 14 random), each with its ``part`` rows in id
order. ``message.data`` is JSON without id/sessionID: user ``{role, time, agent, model}``, assistant
(one row per model step) ``{parentID, role, mode, agent, path:{cwd,root}, cost, tokens, modelID,
providerID, time, finish}``. ``part.data``: ``text``, ``reasoning`` (``metadata.anthropic.signature``),
``tool`` (``callID``, ``tool``, ``state: {status, input, output, ...}``), ``step-start``/``step-finish``
and others, kept opaque.

One :class:`Record` per message row; its ``raw`` is the rows themselves as JSON (the message row and
its part rows, every column), so the native dump is row-exact: :func:`rows_of` gives the rows back.
A ``SessionRef``'s ``path`` is the database file, its ``id`` the session id.
"""
from __future__ import annotations

from contextlib import closing
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator

import orjson

from histmig.core.diagnostics import HistmigInputError, NotFoundError
from histmig.core.model import (Opaque, Part, Reasoning, Record, RecordStream, Session, SessionRef, Text, ToolCall,
                                ToolResult)
from histmig.tools.base import FunctionAdapter
from histmig.tools.opencode.dbrows import blob_json
from histmig.tools.opencode.layout import db_path

NAME = "opencode"
BOOKKEEPING = frozenset({"step-start", "step-finish", "snapshot"})   # part types that carry no conversation


MAX_SECS = 253402300799          # 9999-12-31T23:59:59Z: past it (a corrupt 1e300, inf) there is no datetime


def secs(ms: Any) -> float | None:
    """A column of epoch milliseconds as seconds; None when it is no number or no representable time."""
    if not isinstance(ms, (int, float)) or isinstance(ms, bool) or not -MAX_SECS <= ms / 1000 <= MAX_SECS:
        return None      # (NaN fails the range test too)
    return ms / 1000


def iso_ms(ms: Any) -> str | None:
    at = secs(ms)
    if at is None:
        return None
    return datetime.fromtimestamp(at, timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def text(value: Any) -> str | None:
    """A TEXT column as text: a BLOB or number stored there by something else is no cwd or title."""
    return value if isinstance(value, str) else None


def _json(text: Any) -> Any:
    try:
        return orjson.loads(text) if isinstance(text, (str, bytes)) else None
    except orjson.JSONDecodeError:
        return None


# ---- parts ----------------------------------------------------------------------------------

def parts_of(data: Any) -> list[Part]:
    """One ``part.data`` as model parts: a completed or failed tool part is a call and its result."""
    if not isinstance(data, dict):
        return [Opaque(data, "part data is not a JSON object")]
    t = data.get("type")
    if t == "text" and isinstance(data.get("text"), str):
        return [Text(data["text"], injected=bool(data.get("synthetic")))]
    if t == "reasoning" and isinstance(data.get("text"), str):
        meta = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
        sig = next((v.get("signature") for v in meta.values() if isinstance(v, dict) and v.get("signature")), None)
        return [Reasoning(text=data["text"], signature=sig)]
    if t == "tool":
        state = data.get("state") if isinstance(data.get("state"), dict) else {}
        call_id = str(data.get("callID") or "")
        out: list[Part] = [ToolCall(call_id, str(data.get("tool") or ""), state.get("input"))]
        status = state.get("status")
        if status == "completed":
            out.append(ToolResult(call_id, state.get("output"), structured=state.get("metadata")))
        elif status == "error":
            out.append(ToolResult(call_id, state.get("error"), is_error=True))
        return out
    if t in BOOKKEEPING:
        return []                 # kept in the row (raw), not conversation: no part, no loss to report
    return [Opaque(data, str(t))]


def record_of(message: dict[str, Any], parts: list[dict[str, Any]]) -> Record:
    data = _json(message.get("data"))
    role = data.get("role") if isinstance(data, dict) else None
    model_parts: list[Part] = []
    for p in parts:
        model_parts += parts_of(_json(p.get("data")))
    calls = any(isinstance(p, ToolCall) for p in model_parts)
    usage = data.get("tokens") if isinstance(data, dict) and isinstance(data.get("tokens"), dict) else None
    extra = {"data": data} if isinstance(data, dict) else {}
    raw = orjson.dumps({"message": message, "parts": parts}, default=blob_json) + b"\n"
    if role not in ("user", "assistant"):
        return Record(id=message["id"], kind="other", raw=raw, extra=extra, source_type="message",
                      opaque_reason=None if isinstance(data, dict) else "message data is not JSON")
    return Record(id=message["id"], parent_id=data.get("parentID"), role=role,
                  kind="tool_call" if calls else "message", timestamp=iso_ms(message.get("time_created")),
                  parts=model_parts, usage=usage, extra=extra, raw=raw, source_type=f"message/{role}")


# ---- reading ----------------------------------------------------------------------------------

def _db_and_id(src: Any) -> tuple[Path, str]:
    if isinstance(src, SessionRef):
        return Path(src.path), src.id
    text = str(src)
    if "#" in text:                       # ``<db>#<session id>``, how a session is named on its own
        db, sid = text.rsplit("#", 1)
        return Path(db), sid
    raise HistmigInputError("an OpenCode session is a row, not a file: name it by its id", path=text)


def messages(con: Any, sid: str) -> Iterator[Record]:
    """The session's messages in id order, each with its parts (one query per message keeps memory flat)."""
    from histmig.tools.opencode.dbrows import rows
    for m in rows(con, "SELECT * FROM message WHERE session_id = ? ORDER BY id", (sid,)):
        parts = list(rows(con, "SELECT * FROM part WHERE message_id = ? ORDER BY id", (m["id"],)))
        yield record_of(m, parts)


def _rows_of_session(db: Path, sid: str, con: Any) -> tuple[dict[str, Any], dict[str, Any] | None]:
    from histmig.tools.opencode.dbrows import rows
    srow = next(rows(con, "SELECT * FROM session WHERE id = ?", (sid,)), None)
    if srow is None:
        raise NotFoundError(f"no OpenCode session {sid} in {db}")
    return srow, next(rows(con, "SELECT * FROM project WHERE id = ?", (srow["project_id"],)), None)


def _connect(db: Path) -> Any:
    from histmig.tools.opencode.dbrows import open_db
    con = open_db(db)
    if con is None:
        raise NotFoundError(f"no OpenCode database at {db}")
    return con


def read(src: Any) -> Session:
    db, sid = _db_and_id(src)
    with closing(_connect(db)) as con:
        srow, project = _rows_of_session(db, sid, con)
        records = list(messages(con, sid))
    return _fill(Session(id=sid, format=NAME, path=db, records=records), srow, project)


def stream(src: Any) -> Session:
    """:func:`read` with the message rows queried again on each pass, one message (and its parts) at a
    time, so show, search, export and convert hold one message, never the session."""
    db, sid = _db_and_id(src)
    with closing(_connect(db)) as con:
        srow, project = _rows_of_session(db, sid, con)

    def produce() -> Iterator[Record]:
        with closing(_connect(db)) as con:
            yield from messages(con, sid)
    return _fill(Session(id=sid, format=NAME, path=db, records=RecordStream(produce)), srow, project)


def _fill(session: Session, srow: dict[str, Any], project: dict[str, Any] | None) -> Session:
    session.cwd = text(srow["directory"])
    session.created = iso_ms(srow["time_created"])
    session.updated = secs(srow["time_updated"])
    session.title = text(srow["title"])
    model = _json(srow.get("model"))
    if isinstance(model, dict):
        session.provider, session.model = model.get("providerID"), model.get("id")
    session.parent_id = srow.get("parent_id")
    session.meta = {"session_row": srow, "project_row": project}
    return session


def serialize(session: Session) -> bytes:
    """The native dump: the session row, then one line per message with its part rows (row-exact)."""
    head = orjson.dumps({"session": session.meta.get("session_row")}, default=blob_json) + b"\n"
    return head + b"".join(r.raw or b"" for r in session.records)


def rows_of(dump: bytes) -> dict[str, list[dict[str, Any]]]:
    """The rows a :func:`serialize` dump holds, by table (the round-trip check)."""
    out: dict[str, list[dict[str, Any]]] = {"session": [], "message": [], "part": []}
    for line in dump.splitlines():
        obj = orjson.loads(line)
        if "session" in obj:
            out["session"].append(obj["session"])
        else:
            out["message"].append(obj["message"])
            out["part"] += obj["parts"]
    return out


# ---- detect and discover ----------------------------------------------------------------------

def detect(path: Any) -> bool:
    return False            # no file is one OpenCode session


def discover(homes: Any) -> Iterator[SessionRef]:
    """Every session row: its summary from the session row, message counts in one grouped query."""
    db = db_path(homes)
    if not db.is_file():         # no database, no sqlite3 import (a plain ``scan`` stays light)
        return
    from histmig.tools.opencode.dbrows import open_db, rows
    try:
        con = open_db(db)
    except HistmigInputError as e:
        ref = SessionRef(format=NAME, id=db.name, path=db)
        ref.error, ref.state = str(e), ["unreadable"]
        yield ref
        return
    if con is None:
        return
    with closing(con):
        counts = dict(con.execute("SELECT session_id, count(*) FROM message GROUP BY session_id").fetchall())
        refs = [ref_of(db, s, counts.get(s["id"], 0)) for s in rows(con, "SELECT * FROM session ORDER BY id")]
    yield from refs


def ref_of(db: Path, s: dict[str, Any], count: int) -> SessionRef:
    model = _json(s.get("model"))
    ref = SessionRef(format=NAME, id=s["id"], path=db, cwd=text(s["directory"]), created=iso_ms(s["time_created"]),
                     title=text(s["title"]), messages=count,
                     provider=model.get("providerID") if isinstance(model, dict) else None)
    ref.updated = secs(s["time_updated"])
    ref.archived = s.get("time_archived") is not None
    ref.state = ["archived"] if ref.archived else ["ok"]
    ref.extra = {"project_id": s["project_id"], "parent_id": s.get("parent_id")}
    return ref


ADAPTER = FunctionAdapter(NAME, frozenset({"text", "reasoning", "tool_call", "tool_result"}),
                          detect=detect, discover=discover, read=read, stream=stream, serialize=serialize)
