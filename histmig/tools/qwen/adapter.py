"""Qwen Code sessions: ``<runtime>/projects/<slug>/chats/<uuid>.jsonl`` (docs/qwen.md).

``<runtime>`` is ``$QWEN_RUNTIME_DIR``, else ``$QWEN_HOME``, else ``~/.qwen``; ``<slug>`` is the project
root with every character outside ``[A-Za-z0-9]`` replaced by ``-`` (no length cut). One record per
line, Claude-style envelope around Gemini ``Content``: ``uuid``, ``parentUuid``, ``sessionId``,
``timestamp``, ``type`` (``user`` / ``assistant`` / ``tool_result`` / ``system``), ``cwd``, ``version``,
``message: {role: "user"|"model", parts: [...]}``; assistant records add ``model`` and
``usageMetadata``; ``tool_result`` records add ``toolCallResult``; ``system`` records ``subtype`` and
``systemPayload``. Parts: ``text`` (``thought: true`` = reasoning, with a ``thoughtSignature``),
``functionCall {id, name, args}``, ``functionResponse {id, name, response}``, ``inlineData``.
Every line is kept byte for byte; a line that does not parse is kept and counted.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Iterable, Iterator

import orjson

from histmig.toolkit.usage import usage_totals as sum_usage
from histmig.core.diagnostics import HistmigError
from histmig.core.model import (Attachment, Opaque, Part, Reasoning, Record, RecordStream, Session, SessionRef, Text,
                                ToolCall, ToolResult)
from histmig.jsonio.jsonl import Line, read_lines, record_lines
from histmig.tools.base import FunctionAdapter
from histmig.tools.claude_family.blocks import (broken_warnings, first_timestamp, first_value, record_bytes,
                                                records_per_line, str_or_none)
from histmig.tools.claude_family.listing import (HEAD_TAIL, UUID_RE, broken_lines_state, broken_state, list_ends,
                                                mark_unreadable, subdirs)

NAME = "qwen"
NAMED_KEYS = frozenset({"uuid", "parentUuid", "timestamp", "type", "message", "usageMetadata"})
ROLE = {"user": "user", "assistant": "assistant", "tool_result": "tool"}


def qwen_slug(path: str) -> str:
    """Qwen's ``sanitizeCwd`` on POSIX: every JavaScript string unit outside [A-Za-z0-9] becomes '-'."""
    return "".join(ch if ch.isascii() and ch.isalnum() else "-" * (2 if ord(ch) > 0xFFFF else 1) for ch in path)


# ---- parts ----------------------------------------------------------------------------------

def part_of(p: Any, tool_status: str | None) -> Part:
    """One Gemini ``Part`` of a Qwen message as a model part (anything unknown is kept opaque)."""
    if not isinstance(p, dict):
        return Opaque(p, "not an object")
    if isinstance(p.get("text"), str):
        if p.get("thought") is True:
            return Reasoning(text=p["text"], signature=str_or_none(p.get("thoughtSignature")))
        return Text(p["text"])
    call = p.get("functionCall")
    if isinstance(call, dict):
        return ToolCall(str(call.get("id") or ""), str(call.get("name") or ""), call.get("args") or {})
    resp = p.get("functionResponse")
    if isinstance(resp, dict):
        body = resp.get("response")
        output = body.get("output", body) if isinstance(body, dict) and set(body) <= {"output"} else body
        return ToolResult(str(resp.get("id") or ""), output, is_error=tool_status == "error",
                          structured={"name": resp.get("name")})
    data = p.get("inlineData") or p.get("fileData")
    if isinstance(data, dict):
        return Attachment(str_or_none(data.get("mimeType")), data)
    return Opaque(p, "part")


def parts_of(message: Any, tool_status: str | None = None) -> list[Part]:
    parts = message.get("parts") if isinstance(message, dict) else None
    return [part_of(p, tool_status) for p in parts] if isinstance(parts, list) else []


def kind_for(t: Any, parts: list[Part]) -> str:
    if t == "tool_result":
        return "tool_result"
    if t == "assistant" and parts and all(isinstance(p, ToolCall) for p in parts):
        return "tool_call"
    if t == "assistant" and parts and all(isinstance(p, Reasoning) for p in parts):
        return "reasoning"
    return "message" if t in ("user", "assistant") else "event"


# ---- lines -> records -------------------------------------------------------------------------

def record_from_obj(line: Line, obj: dict) -> Record:
    t = obj.get("type")
    status = obj.get("toolCallResult", {}).get("status") if isinstance(obj.get("toolCallResult"), dict) else None
    parts = parts_of(obj.get("message"), status) if t in ROLE else []
    usage = obj.get("usageMetadata")
    extra = {k: v for k, v in obj.items() if k not in NAMED_KEYS}
    if isinstance(obj.get("message"), dict):
        extra["message"] = {k: v for k, v in obj["message"].items() if k != "parts"}
    return Record(id=str_or_none(obj.get("uuid")), parent_id=str_or_none(obj.get("parentUuid")),
                  kind=kind_for(t, parts), role=ROLE.get(t) if isinstance(t, str) else None,
                  timestamp=str_or_none(obj.get("timestamp")), parts=parts,
                  usage=usage if isinstance(usage, dict) else None, extra=extra, raw=line.raw,
                  line=line.number, source_type=t if isinstance(t, str) else None)


def records_from_lines(lines: Iterable[Line]) -> Iterator[Record]:
    return records_per_line(lines, record_from_obj)


# ---- records -> bytes ---------------------------------------------------------------------------

def part_to_json(p: Part) -> Any:
    if isinstance(p, Text):
        return {"text": p.text}
    if isinstance(p, Reasoning):
        out = {"text": p.text or p.summary, "thought": True}
        return out | ({"thoughtSignature": p.signature} if p.signature else {})
    if isinstance(p, ToolCall):
        return {"functionCall": {"id": p.call_id, "name": p.name, "args": p.arguments}}
    if isinstance(p, ToolResult):
        name = p.structured.get("name") if isinstance(p.structured, dict) else None
        body = p.output if isinstance(p.output, dict) else {"output": p.output}
        return {"functionResponse": {"id": p.call_id, "name": name or "", "response": body}}
    if isinstance(p, Attachment):
        return {"inlineData": p.data} if isinstance(p.data, dict) and "data" in p.data else p.data
    return p.data


def encode_record(rec: Record) -> bytes:
    """A changed or new record in Qwen's key order (compact JSON, as ``JSON.stringify`` writes it)."""
    extra = dict(rec.extra)
    obj: dict[str, Any] = {"uuid": rec.id, "parentUuid": rec.parent_id}
    for key in ("sessionId",):
        if key in extra:
            obj[key] = extra.pop(key)
    obj["timestamp"] = rec.timestamp
    obj["type"] = rec.source_type
    for key in ("provenance", "cwd", "version", "model"):
        if key in extra:
            obj[key] = extra.pop(key)
    skeleton = extra.pop("message", None)
    if rec.source_type in ROLE:
        obj["message"] = dict(skeleton or {"role": "model" if rec.role == "assistant" else "user"})
        obj["message"]["parts"] = [part_to_json(p) for p in rec.parts]
    elif skeleton is not None:
        obj["message"] = skeleton
    if rec.usage is not None:
        obj["usageMetadata"] = rec.usage
    obj.update(extra)
    return orjson.dumps(obj) + b"\n"


def serialize(session: Session) -> bytes:
    return b"".join(record_bytes(r, session.path, encode_record) for r in session.records)


# ---- reading --------------------------------------------------------------------------------

def _fill(session: Session, records: Iterable[Record], path: Path) -> Session:
    session.cwd = first_value(records, "cwd")
    session.created = first_timestamp(records)
    session.updated = path.stat().st_mtime
    session.title = first_prompt(records)
    model = None
    for r in records:
        if r.role == "assistant" and isinstance(r.extra.get("model"), str):
            model = r.extra["model"]
    session.model = model
    session.meta = {"usage": usage_totals(records)}
    session.warnings = broken_warnings(records, path)
    return session


def read(src: Any) -> Session:
    path = Path(src.path) if isinstance(src, SessionRef) else Path(src)
    records = list(records_from_lines(read_lines(path)))
    return _fill(Session(id=path.stem, format=NAME, path=path, records=records), records, path)


def stream(src: Any) -> Session:
    """:func:`read` with the records read again from the file on each pass (bounded memory)."""
    path = Path(src.path) if isinstance(src, SessionRef) else Path(src)
    records = RecordStream(lambda: records_from_lines(record_lines(path)))
    return _fill(Session(id=path.stem, format=NAME, path=path, records=records), records, path)


def first_prompt(records: Iterable[Record]) -> str | None:
    """The first user text (Qwen's picker shows the first user message as the title)."""
    for r in records:
        if r.source_type == "user" and not r.opaque:
            for p in r.parts:
                if isinstance(p, Text) and p.text.strip():
                    return p.text.strip()
    return None


def usage_totals(records: Iterable[Record]) -> dict[str, int]:
    """Summed ``usageMetadata`` of assistant records, and how many carried it."""
    return sum_usage(records, ("promptTokenCount", "candidatesTokenCount"))


# ---- detect and discover ------------------------------------------------------------------------

def projects_root(homes: Any) -> Path:
    return Path(homes.qwen) / "projects"


def chat_files(folder: Path) -> list[Path]:
    """``chats/<uuid>.jsonl`` and archived ``chats/archive/<uuid>.jsonl`` of one project folder."""
    return [Path(p) for p in chat_paths(folder)]


def chat_paths(folder: str | Path) -> list[str]:
    """``chat_files`` as text (a warm listing's ref keeps its path so: histmig/core/model.py)."""
    out: list[str] = []
    for d in (os.path.join(folder, "chats"), os.path.join(folder, "chats", "archive")):
        try:     # the entry's type says regular file (no stat and lstat per file: a warm scan stats each once)
            with os.scandir(d) as it:
                out += [os.path.join(d, n) for n in sorted(e.name for e in it if e.name.endswith(".jsonl")
                                                           and UUID_RE.match(e.name[:-6])
                                                           and e.is_file(follow_symlinks=False))]
        except OSError:
            continue
    return out


def detect(path: Any) -> bool:
    p = Path(path)
    chats = p.parent if p.parent.name == "chats" else p.parent.parent
    return (p.name.endswith(".jsonl") and bool(UUID_RE.match(p.name[:-6])) and chats.name == "chats"
            and chats.parent.parent.name == "projects")


def discover(homes: Any, index: Any = None) -> Iterator[SessionRef]:
    """Every session; ``index``: a ``ScanIndex`` that answers for unchanged files. The files to read are
    shared out to every CPU (histmig/toolkit/forklist.py: a batch under 32 MB is read here)."""
    from histmig.toolkit.forklist import list_files
    paths = (path for folder in subdirs(projects_root(homes)) for path in chat_paths(folder))
    yield from list_files(paths, index, _index_hit, lambda path, index: ref_for(path, index=index))


def _index_hit(path: str, index: Any) -> SessionRef | None:
    """The ref of an unchanged file from the scan index (``ref_for``'s first step), or None."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    key = path
    hit = index.hit(key, st, None, FIELDS)
    if hit is None:
        return None
    from histmig.core.model import stored_ref
    # (``chat_files``' names: ``<uuid>.jsonl`` under ``chats`` or ``chats/archive``; the name and folder
    # from the path's text, not two more Path objects per warm row)
    folder, _, name = key.rpartition(os.sep)
    return stored_ref(hit, format=NAME, id=name[:-6], path=path, archived=folder.rpartition(os.sep)[2] == "archive",
                      size=st.st_size, updated=st.st_mtime)


FIELDS = ("cwd", "created", "title", "messages", "state", "error")


def ref_for(path: str | Path, *, index: Any = None) -> SessionRef:
    """One session from its two ends; past 128 KB the messages are counted by a byte search (the scan
    index answers for an unchanged file: docs/scan-show.md). The lines are read as bytes and parsed into
    plain values (listing.py); a head with a line over 8 MB goes through the Record reader."""
    path = Path(path)
    ref = SessionRef(format=NAME, id=path.stem, path=path, archived=path.parent.name == "archive")
    try:
        st = path.stat()
        ref.size, ref.updated = st.st_size, st.st_mtime
        key = str(path)
        hit = index.hit(key, st, None, FIELDS) if index is not None else None
        if hit is not None:
            from histmig.core.scanindex import fill
            return fill(ref, hit)
        whole = st.st_size <= 2 * HEAD_TAIL
        from histmig.tools.qwen.listing import list_file
        got = list_file(path, st.st_size, whole, index.grown(key, st) if index is not None and not whole else None)
        if got is None:
            list_ends(ref, path, st, records_from_lines, _summarize, index=index, fields=FIELDS, grouped=False)
            return ref
    except (HistmigError, OSError) as e:
        return mark_unreadable(ref, e)
    facts, ref.messages, resume, first = got
    ref.cwd, ref.created, ref.title = facts.cwd, facts.created, facts.title
    ref.state += ["archived"] if ref.archived else []
    ref.state += broken_state(facts.broken)
    if index is not None:
        from histmig.core.scanindex import fields_of
        index.store(key, st, fields_of(ref, FIELDS), resume=resume, first=first)
    return ref


def _summarize(ref: SessionRef, head: list[Record], tail: list[Record], whole: bool) -> None:
    """The listing fields; ``messages`` counts user and assistant records (as the byte search past 128 KB
    does), not tool results or telemetry."""
    ref.state += ["archived"] if ref.archived else []
    ref.cwd = first_value(head, "cwd")
    ref.created = first_timestamp(head)
    ref.title = first_prompt(head)
    ref.messages = sum(1 for r in head if r.source_type in ("user", "assistant")) if whole else None
    ref.state += broken_lines_state(head + tail)


ADAPTER = FunctionAdapter(NAME, frozenset({"text", "reasoning", "tool_call", "tool_result", "attachment"}),
                          detect=detect, discover=discover, read=read, stream=stream, serialize=serialize,
                          encode_record=encode_record)
# discover takes ``index=`` (the scan index, histmig.core.scanindex)
ADAPTER.indexed = True
