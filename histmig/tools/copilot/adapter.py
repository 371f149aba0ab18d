"""GitHub Copilot CLI sessions: ``<home>/session-state/<uuid>/events.jsonl`` beside ``workspace.yaml``
(docs/copilot.md). ``<home>`` is ``$COPILOT_HOME``, else ``~/.copilot``.

One event per line: ``{type, data, id, timestamp, parentId}``, chained by ``parentId``. The conversation
is in ``user.message {content}``, ``assistant.message {content, toolRequests, reasoningText,
reasoningOpaque, reasoningBlocks}`` and ``tool.execution_complete {toolCallId, success, result}``; every
other event (session.start/resume/shutdown, system.message, turn marks, usage records) is kept as an
event. Every line is kept byte for byte; a line that does not parse is kept and counted.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Iterator

import orjson

from histmig.core.diagnostics import HistmigError
from histmig.core.model import Opaque, Part, Reasoning, Record, RecordStream, Session, SessionRef, Text, ToolCall, ToolResult
from histmig.jsonio.jsonl import Line, read_lines, record_lines
from histmig.tools.base import FunctionAdapter
from histmig.tools.claude_family.blocks import broken_warnings, record_bytes, records_per_line, str_or_none
from histmig.tools.claude_family.listing import UUID_RE, mark_unreadable
from histmig.tools.copilot import workspace

NAME = "copilot"
ENVELOPE = frozenset({"type", "data", "id", "timestamp", "parentId"})
ROLE = {"user.message": "user", "assistant.message": "assistant", "tool.execution_complete": "tool"}
MESSAGE_TYPES = (b'"type":"user.message"', b'"type":"assistant.message"')
COUNT_CHUNK = 1 << 20
HEAD = 40                  # bytes of a line's start that name its type


# ---- events -> parts ------------------------------------------------------------------------

def reasoning_of(data: dict) -> list[Part]:
    """``reasoningBlocks`` (provider-bound thinking with signatures) as they are, else ``reasoningText``."""
    blocks = data.get("reasoningBlocks")
    out: list[Part] = []
    if isinstance(blocks, dict) and isinstance(blocks.get("blocks"), list):
        for b in blocks["blocks"]:
            if isinstance(b, dict) and b.get("type") == "thinking":
                out.append(Reasoning(text=str(b.get("thinking") or ""), signature=str_or_none(b.get("signature"))))
            elif isinstance(b, dict) and b.get("type") == "redacted_thinking":
                out.append(Reasoning(encrypted=str_or_none(b.get("data")), redacted=True))
    if not out and isinstance(data.get("reasoningText"), str) and data["reasoningText"]:
        out.append(Reasoning(text=data["reasoningText"], encrypted=str_or_none(data.get("reasoningOpaque"))))
    return out


def parts_of(t: str, data: dict) -> list[Part]:
    if t == "user.message":
        return [Text(data["content"])] if isinstance(data.get("content"), str) else []
    if t == "assistant.message":
        parts = reasoning_of(data)
        if isinstance(data.get("content"), str) and data["content"]:
            parts.append(Text(data["content"]))
        for req in data.get("toolRequests") or []:
            if isinstance(req, dict):
                parts.append(ToolCall(str(req.get("toolCallId") or ""), str(req.get("name") or ""),
                                      req.get("arguments") if req.get("arguments") is not None else {}))
            else:
                parts.append(Opaque(req, "tool request"))
        return parts
    if t == "tool.execution_complete":
        result = data.get("result")
        output = result.get("content") if isinstance(result, dict) and "content" in result else result
        if output is None and isinstance(data.get("error"), dict):
            output = data["error"].get("message")
        return [ToolResult(str(data.get("toolCallId") or ""), output if output is not None else "",
                           is_error=data.get("success") is False,
                           structured={k: v for k, v in data.items() if k in ("shellExecution", "error")} or None)]
    return []


def kind_for(t: str, parts: list[Part]) -> str:
    if t == "tool.execution_complete":
        return "tool_result"
    if t == "assistant.message" and parts and all(isinstance(p, ToolCall) for p in parts):
        return "tool_call"
    if t == "assistant.message" and parts and all(isinstance(p, Reasoning) for p in parts):
        return "reasoning"
    return "message" if t in ROLE else "event"


def record_from_obj(line: Line, obj: dict) -> Record:
    t = obj.get("type") if isinstance(obj.get("type"), str) else None
    data = obj.get("data") if isinstance(obj.get("data"), dict) else {}
    parts = parts_of(t, data) if t in ROLE else []
    usage = data.get("usage") if t == "session.usage_record" and isinstance(data.get("usage"), dict) else None
    extra = {k: v for k, v in obj.items() if k not in ENVELOPE - {"data"}}
    if t == "session.start" and isinstance(data.get("context"), dict):
        extra["cwd"] = data["context"].get("cwd")
    if t == "assistant.message" and isinstance(data.get("model"), str):
        extra["model"] = data["model"]
    return Record(id=str_or_none(obj.get("id")), parent_id=str_or_none(obj.get("parentId")),
                  kind=kind_for(t or "", parts), role=ROLE.get(t or ""), timestamp=str_or_none(obj.get("timestamp")),
                  parts=parts, usage=usage, extra=extra, raw=line.raw, line=line.number, source_type=t)


def records_from_lines(lines: Iterable[Line]) -> Iterator[Record]:
    return records_per_line(lines, record_from_obj)


# ---- records -> bytes -------------------------------------------------------------------------

def data_with_parts(rec: Record) -> dict:
    """The record's ``data`` with what its parts say put back (a converted or edited record)."""
    data = dict(rec.extra.get("data") or {})
    texts = [p.text for p in rec.parts if isinstance(p, Text)]
    if rec.source_type == "user.message":
        data["content"] = "\n".join(texts)
    elif rec.source_type == "assistant.message":
        data["content"] = "\n".join(texts)
        # a request the record already had keeps its other fields (intentionSummary, toolTitle)
        before = {r.get("toolCallId"): r for r in data.get("toolRequests") or [] if isinstance(r, dict)}
        data["toolRequests"] = [before.get(p.call_id, {}) | {"toolCallId": p.call_id, "name": p.name,
                                                              "arguments": p.arguments, "type": "function"}
                                for p in rec.parts if isinstance(p, ToolCall)]
    elif rec.source_type == "tool.execution_complete":
        res = next((p for p in rec.parts if isinstance(p, ToolResult)), None)
        if res is not None:
            data["toolCallId"], data["success"] = res.call_id, not res.is_error
            data["result"] = {"content": res.output if isinstance(res.output, str) else orjson.dumps(res.output).decode()}
    return data


def encode_record(rec: Record) -> bytes:
    """A changed or new event in the client's key order (compact JSON, as ``JSON.stringify`` writes it)."""
    obj: dict[str, Any] = {"type": rec.source_type, "data": data_with_parts(rec), "id": rec.id,
                           "timestamp": rec.timestamp, "parentId": rec.parent_id}
    obj.update({k: v for k, v in rec.extra.items() if k not in ENVELOPE and k not in ("cwd", "model")})
    return orjson.dumps(obj) + b"\n"


def serialize(session: Session) -> bytes:
    return b"".join(record_bytes(r, session.path, encode_record) for r in session.records)


# ---- reading ------------------------------------------------------------------------------------

def events_path(src: Any) -> Path:
    p = Path(src.path) if isinstance(src, SessionRef) else Path(src)
    return p / "events.jsonl" if p.is_dir() else p


def _fill(session: Session, records: Iterable[Record], path: Path) -> Session:
    ws = workspace.read(path.parent / "workspace.yaml")
    start = next((r for r in records if r.source_type == "session.start"), None)
    session.cwd = ws.get("cwd") or (start.extra.get("cwd") if start else None)
    session.created = ws.get("created_at") or (start.timestamp if start else None)
    session.updated = path.stat().st_mtime
    session.title = ws.get("name") or first_prompt(records)
    session.model = None
    for r in records:
        if isinstance(r.extra.get("model"), str):
            session.model = r.extra["model"]
    session.provider = "copilot-byok" if any(
        isinstance(r.usage, dict) and r.usage.get("isByok") for r in records) else None
    session.meta = {"workspace": ws, "chain_breaks": chain_breaks(records)}
    session.warnings = broken_warnings(records, path)
    return session


def read(src: Any) -> Session:
    path = events_path(src)
    records = list(records_from_lines(read_lines(path)))
    return _fill(Session(id=path.parent.name, format=NAME, path=path, records=records), records, path)


def stream(src: Any) -> Session:
    """:func:`read` with the records read again from the file on each pass (bounded memory)."""
    path = events_path(src)
    records = RecordStream(lambda: records_from_lines(record_lines(path)))
    return _fill(Session(id=path.parent.name, format=NAME, path=path, records=records), records, path)


def chain_breaks(records: Iterable[Record]) -> int:
    """Events whose ``parentId`` is not the event before them (a fork or a lost line)."""
    prev, breaks = None, 0
    for r in records:
        if r.opaque or r.source_type == "blank":
            continue
        if r.parent_id != prev:
            breaks += 1
        prev = r.id
    return breaks


def first_prompt(records: Iterable[Record]) -> str | None:
    for r in records:
        if r.source_type == "user.message":
            for p in r.parts:
                if isinstance(p, Text) and p.text.strip():
                    return p.text.strip()
    return None


# ---- detect and discover ------------------------------------------------------------------------

def state_root(homes: Any) -> Path:
    return Path(homes.copilot) / "session-state"


def detect(path: Any) -> bool:
    p = events_path(path)
    return p.name == "events.jsonl" and bool(UUID_RE.match(p.parent.name)) and p.parent.parent.name == "session-state"


def discover(homes: Any, index: Any = None) -> Iterator[SessionRef]:
    """Every session; ``index``: a ``ScanIndex`` (histmig.core.scanindex) that answers for a session whose
    ``events.jsonl`` and ``workspace.yaml`` are unchanged (docs/scan-show.md, "The scan index")."""
    root = state_root(homes)
    try:
        dirs = sorted(d for d in root.iterdir() if UUID_RE.match(d.name) and d.is_dir() and not d.is_symlink())
    except OSError:
        return
    for d in dirs:
        if (d / "events.jsonl").is_file():
            yield ref_for(d / "events.jsonl", index=index)


def count_messages(path: Path, end: int = 0, msgs: int = 0) -> tuple[int, dict]:
    """User and assistant events from byte ``end`` on (``msgs`` counted before it), by a look at each
    line's first bytes, in chunks of :data:`COUNT_CHUNK` (a line's first :data:`HEAD` bytes kept, never the
    line); and where a later count of a grown file resumes (the end of the last complete line)."""
    from histmig.jsonio.jsonl import open_regular
    n, at, pos, head = msgs, end, end, b""
    with open_regular(path) as fh:       # unbuffered: read in chunks, never line by line (a read per byte)
        fh.seek(end)
        while chunk := fh.read(COUNT_CHUNK):
            i = 0
            while True:
                j = chunk.find(b"\n", i)
                if len(head) < HEAD:
                    head += chunk[i:min(i + HEAD - len(head), len(chunk) if j < 0 else j + 1)]
                if j < 0:
                    break
                n += head.startswith(MESSAGE_TYPES, 1)
                at, head, i = pos + j + 1, b"", j + 1
            pos += len(chunk)
    # the last line, unfinished: counted now, read again next time
    return n + (bool(head) and head.startswith(MESSAGE_TYPES, 1)), {"end": at, "msgs": n}


FIELDS = ("cwd", "title", "created", "messages")


def ref_for(path: Path, *, index: Any = None) -> SessionRef:
    """One session from ``workspace.yaml`` (cwd, title, created) and a count of its message lines; the
    scan index answers while both files are unchanged, and a grown ``events.jsonl`` is counted on from
    where the last count stopped."""
    ref = SessionRef(format=NAME, id=path.parent.name, path=path)
    try:
        st = path.stat()
        ref.size, ref.updated = st.st_size, st.st_mtime
        ws_path = path.parent / "workspace.yaml"
        try:
            from histmig.core.scanindex import key_of
            ctx = key_of(ws_path.stat())
        except OSError:
            ctx = None
        hit = index.hit(str(path), st, ctx, FIELDS) if index is not None else None
        if hit is not None:
            from histmig.core.scanindex import fill
            return fill(ref, hit)
        ws = workspace.read(ws_path)
        ref.cwd, ref.title, ref.created = ws.get("cwd"), ws.get("name"), ws.get("created_at")
        first = _first_bytes(path) if index is not None else None
        start: dict = {}
        if index is not None:
            from histmig.core.scanindex import head_hash
            grown = index.grown(str(path), st, ctx)
            start = grown[0] if grown is not None and grown[1] == head_hash(first) else {}
        ref.messages, resume = count_messages(path, **start)
        if index is not None:
            from histmig.core.scanindex import fields_of
            index.store(str(path), st, fields_of(ref, FIELDS), ctx=ctx, resume=resume, first=first)
    except (HistmigError, OSError) as e:
        return mark_unreadable(ref, e)
    return ref


def _first_bytes(path: Path) -> bytes:
    from histmig.core.scanindex import HEAD_HASH_BYTES
    with open(path, "rb") as fh:
        return fh.read(HEAD_HASH_BYTES)


ADAPTER = FunctionAdapter(NAME, frozenset({"text", "reasoning", "tool_call", "tool_result"}),
                          detect=detect, discover=discover, read=read, stream=stream, serialize=serialize,
                          encode_record=encode_record)
# discover takes ``index=`` (the scan index, histmig.core.scanindex)
ADAPTER.indexed = True
