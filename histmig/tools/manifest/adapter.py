"""The "manifest" layout (docs/specs/manifest-layout.md): ``<claude home>/projects/<hash>/sessions/<id>/``
with ``transcript.jsonl`` (``{ts, role, payload}`` per line), ``meta.json`` and
``checkpoints/cp-NNNN.json``.

``read`` puts the parsed ``meta.json`` and the checkpoints in ``Session.meta`` next to their exact
bytes; ``serialize`` returns the transcript bytes and ``serialize_meta`` the meta.json bytes (the
original bytes when nothing changed, a surgical edit when only values changed). Health checks
mirror the design's ``isSessionHealthy`` and are evaluated read-only.
"""
from __future__ import annotations

import json
import os
import re
from datetime import datetime
from pathlib import Path
from typing import Any, Iterable, Iterator

import orjson

from histmig.core.diagnostics import HistmigError
from histmig.tools.base import FunctionAdapter
from histmig.tools.claude_family.blocks import (NOT_PROMPT_RE, broken_warnings, content_parts, first_prompt, kind_of,
                                       parts_to_content, record_bytes, records_per_line, str_or_none,
                                       unparsed_record)
from histmig.tools.claude_family.listing import broken_state, mark_unreadable, subdirs
from histmig.jsonio.marks import prefix_string
from histmig.jsonio.jsonl import (DEFAULT_MAX_LINE_BYTES, RECORD_MAX_BYTES, Line, iter_lines, open_regular, parse_json,
                                  read_lines)
from histmig.core.model import Opaque, Part, Record, Session, SessionRef, Text, ToolResult

NAME = "manifest"
CHECKPOINT_RE = re.compile(r"^cp-(\d+)\.json$")
_CALL_ID_KEYS = ("toolUseId", "tool_use_id", "callId", "call_id", "invocationId", "id")


# ---- transcript lines → records ---------------------------------------------------------------

def payload_parts(role: Any, payload: Any) -> list[Part]:
    """Parts of a ``payload``: an Anthropic ``message`` (histmig's own conversions), plain
    ``content``/``text``, or a tool event with an invocation id; anything else stays Opaque."""
    if not isinstance(payload, dict):
        return [Opaque(payload, "payload is not an object")]
    injected = role == "system"
    if isinstance(payload.get("message"), dict):
        return content_parts(payload["message"].get("content"), injected=injected)
    if role == "tool":
        call_id = next((payload[k] for k in _CALL_ID_KEYS if isinstance(payload.get(k), str)), None)
        output = next((payload[k] for k in ("output", "result", "content", "text") if k in payload), None)
        if call_id is not None:
            return [ToolResult(call_id, output, is_error=bool(payload.get("isError") or payload.get("is_error")))]
    if "content" in payload:
        return content_parts(payload["content"], injected=injected)
    if isinstance(payload.get("text"), str):
        return [Text(payload["text"], injected=injected)]
    return [Opaque(payload, "payload without text")]


def record_from_obj(line: Line, obj: dict) -> Record:
    role = obj.get("role")
    parts = payload_parts(role, obj.get("payload"))
    extra = {k: v for k, v in obj.items() if k not in ("ts", "role")}
    kind = {"tool": "tool_result", "system": "message"}.get(role) or kind_of(role, parts)
    return Record(kind=kind, role=role if role in ("user", "assistant", "tool", "system") else None,
                  timestamp=str_or_none(obj.get("ts")), parts=parts,
                  extra=extra, raw=line.raw, line=line.number,
                  source_type=role if isinstance(role, str) else None)


def records_from_lines(lines: Iterable[Line]) -> Iterator[Record]:
    return records_per_line(lines, record_from_obj)


def encode_record(rec: Record) -> bytes:
    """``JSON.stringify({ts, role, payload})``; the payload's ``message`` is rebuilt from the parts."""
    payload = dict(rec.extra.get("payload") or {})
    if rec.parts and not all(isinstance(p, Opaque) for p in rec.parts):
        role = "user" if rec.role == "tool" else rec.role
        payload["message"] = {"role": role, "content": parts_to_content(rec.parts, as_string=False)}
    obj = {"ts": rec.timestamp, "role": rec.role, "payload": payload}
    obj.update({k: v for k, v in rec.extra.items() if k != "payload"})
    return orjson.dumps(obj) + b"\n"


def serialize(session: Session) -> bytes:
    """The transcript's bytes."""
    return b"".join(record_bytes(r, session.path, encode_record) for r in session.records)


# ---- meta.json and checkpoints ---------------------------------------------------------------

def read_json_file(path: Path) -> tuple[bytes | None, Any, str | None]:
    """``(raw, value, error)``; a missing or broken file is reported, never raised. A file over the
    record limit (``jsonl.RECORD_MAX_BYTES``, as one JSONL line) is named, not read."""
    try:
        with open_regular(path) as fh:
            size = os.fstat(fh.fileno()).st_size
            if size > RECORD_MAX_BYTES:
                return None, None, f"is over the {RECORD_MAX_BYTES >> 20} MiB limit for reading one record ({size} bytes)"
            raw = fh.read()
    except (HistmigError, OSError) as e:
        return None, None, "missing" if not path.exists() else str(e)
    value, err = parse_json(raw[3:] if raw.startswith(b"\xef\xbb\xbf") else raw)
    if err is None and not isinstance(value, dict):
        return raw, None, "not a JSON object"
    return raw, value, err


def read_checkpoints(folder: Path) -> list[dict[str, Any]]:
    """Every ``cp-NNNN.json``, ordered by number (the highest is the latest)."""
    found = []
    try:
        names = [p.name for p in folder.iterdir() if CHECKPOINT_RE.match(p.name)]
    except OSError:
        return []
    for name in sorted(names, key=lambda n: int(CHECKPOINT_RE.match(n).group(1))):
        raw, data, err = read_json_file(folder / name)
        found.append({"name": name, "raw": raw, "data": data, "error": err})
    return found


def serialize_meta(session: Session) -> bytes:
    """meta.json bytes: unchanged when ``meta`` still equals what was read; values changed in
    place when only values changed (key order, indentation and unknown keys kept); otherwise a
    fresh dump with the file's indentation."""
    raw, data = session.meta.get("meta_raw"), session.meta.get("meta")
    if raw is not None:
        old, err = parse_json(raw)
        if err is not None or old == data:
            return raw
        if isinstance(old, dict) and isinstance(data, dict) and list(old) == list(data):
            edits = [((k,), data[k]) for k in data if data[k] != old[k]]
            # (the line editor, and the plan model under it, only when meta.json is written: not for scan)
            from histmig.jsonio.lineedit import EditError, replace_values
            try:
                return replace_values(raw, edits)
            except EditError:
                pass
    if data is None:
        raise HistmigError("session has no meta.json to write", path=session.meta.get("session_dir"))
    text = json.dumps(data, ensure_ascii=False, indent=_indent_of(raw))
    return text.encode("utf-8") + (b"\n" if raw is None or raw.endswith(b"\n") else b"")


def _indent_of(raw: bytes | None) -> int | None:
    if raw is None:
        return 2
    m = re.search(rb"\n( +)\"", raw)
    return len(m.group(1)) if m else None


def latest_checkpoint(session: Session) -> dict[str, Any] | None:
    cps = [c for c in session.meta.get("checkpoints", []) if c["data"] is not None]
    return cps[-1] if cps else None


# ---- reading ----------------------------------------------------------------------------------

def session_dir(src: Any) -> Path:
    p = Path(src.path) if isinstance(src, SessionRef) else Path(src)
    return p if p.is_dir() else p.parent


def read(src: Any) -> Session:
    d = session_dir(src)
    transcript = d / "transcript.jsonl"
    records = list(records_from_lines(read_lines(transcript))) if transcript.exists() else []
    return _session(d, transcript, records)


def stream(src: Any, *, strict: bool = True) -> Session:
    """:func:`read` with the transcript's records read again on each iteration (bounded memory).
    ``strict``: a line over the record limit is refused (show, convert); else it is an opaque
    record never held, as in :func:`read` (the listing)."""
    from histmig.jsonio.jsonl import record_lines
    from histmig.core.model import RecordStream
    d = session_dir(src)
    transcript = d / "transcript.jsonl"
    exists = transcript.exists()
    lines = record_lines if strict else read_lines
    return _session(d, transcript, RecordStream(lambda: records_from_lines(lines(transcript)) if exists else ()))


def _session(d: Path, transcript: Path, records: Any) -> Session:
    raw, meta, err = read_json_file(d / "meta.json")
    meta = meta or {}
    session = Session(id=str_or_none(meta.get("sessionId")) or d.name, format=NAME, path=transcript,
                      records=records)
    session.cwd = str_or_none(meta.get("cwd")) or str_or_none(meta.get("projectPath"))
    session.created = str_or_none(meta.get("createdAt")) or str_or_none(meta.get("startedAt"))
    session.model, session.parent_id = str_or_none(meta.get("model")), str_or_none(meta.get("parentSessionId"))
    session.title = first_prompt(records)
    session.updated = transcript.stat().st_mtime if transcript.exists() else None
    session.meta = {"meta": meta if raw is not None and err is None else None, "meta_raw": raw,
                    "meta_error": err, "checkpoints": read_checkpoints(d / "checkpoints"),
                    "session_dir": d, "project_hash": d.parent.parent.name,
                    "locked": (d / ".lock").exists()}
    session.warnings = broken_warnings(records, transcript)
    return session


def message_count(records: list[Record]) -> int:
    """Transcript lines that parse (every role counts: the seed leaves the base open, §2.3)."""
    return sum(1 for r in records if r.role is not None)


def health(session: Session) -> list[str]:
    """What the design's ``isSessionHealthy`` would object to, as short phrases."""
    last = None
    for r in session.records:      # the last non-blank record, without holding the others
        if r.source_type != "blank":
            last = r
    return health_of(session, last is not None and last.opaque, message_count(session.records))


def health_of(session: Session, torn_tail: bool, n: int) -> list[str]:
    """:func:`health` from what a reading found: whether the last non-blank line is broken and the
    message count (the listing counts both in its one pass, :func:`survey`)."""
    problems = []
    err = session.meta.get("meta_error")
    if err:
        problems.append(f"meta.json {err}")
    if torn_tail:
        problems.append("transcript tail is not valid JSON")
    for cp in session.meta.get("checkpoints", []):
        idx = (cp["data"] or {}).get("atMessageIndex")
        if cp["error"]:
            problems.append(f"checkpoint {cp['name']} {cp['error']}")
        elif not isinstance(idx, int) or isinstance(idx, bool) or idx < 0 or idx > n:
            problems.append(f"checkpoint {cp['name']} index {idx} > {n} messages")
    if session.meta.get("locked"):
        problems.append("locked (.lock)")
    d = session.meta.get("session_dir")
    if d is not None and not os.access(d, os.W_OK):
        problems.append("not writable")
    return problems


# ---- detect and discover ----------------------------------------------------------------------

def detect(path: Any) -> bool:
    p = Path(path)
    return p.name in ("transcript.jsonl", "meta.json") and p.parent.parent.name == "sessions"


def session_dirs(homes: Any) -> Iterator[Path]:
    """``projects/*/sessions/*/`` folders holding a meta.json or a transcript.jsonl."""
    for project in subdirs(Path(homes.manifest) / "projects"):
        for d in subdirs(project / "sessions"):
            if (d / "meta.json").exists() or (d / "transcript.jsonl").exists():
                yield d


def discover(homes: Any) -> Iterator[SessionRef]:
    for d in session_dirs(homes):
        yield ref_for(d)


def ref_for(d: Path) -> SessionRef:
    transcript = d / "transcript.jsonl"
    ref = SessionRef(format=NAME, id=d.name, path=transcript if transcript.exists() else d)
    try:
        session = _session(d, transcript, [])
        found = survey(transcript) if transcript.exists() else Survey()
        return _fill(ref, session, d, transcript, found)
    except (HistmigError, OSError) as e:
        return mark_unreadable(ref, e)


def _fill(ref: SessionRef, session: Session, d: Path, transcript: Path, found: "Survey") -> SessionRef:
    meta = session.meta["meta"] or {}
    ref.cwd, ref.created, ref.title = session.cwd, session.created, found.title
    ref.size = sum(p.stat().st_size for p in (transcript, d / "meta.json") if p.exists())
    ref.updated = _epoch(meta.get("updatedAt")) or session.updated
    ref.messages = found.messages
    ref.extra = {k: meta[k] for k in ("projectPath", "model", "updatedAt") if isinstance(meta.get(k), str)}
    ref.extra["checkpoints"] = len(session.meta["checkpoints"])
    ref.state += broken_state(found.broken)
    ref.state += health_of(session, found.torn_tail, found.messages)
    return ref


# ---- the listing's one pass -------------------------------------------------------------------

# A listing parses lines up to this size (as read and show do, so it says the same of them); a longer
# line is not read: it counts as a message when a role stands among its top-level keys before any
# nested value (``JSON.stringify({ts, role, payload})`` puts it there), its title is cut from its
# first bytes, and it is not judged broken unless it is over the readers' 64 MiB line limit.
LIST_LINE_MAX = 1 << 20
PREFIX = 64 * 1024
_TOP_ROLE = re.compile(rb'\A(?:\xef\xbb\xbf)?\s*\{(?:[^"{}\[\]]|"(?:[^"\\]|\\.)*")*?'
                       rb'"role"\s*:\s*"(user|assistant|tool|system)"')


class Survey:
    """What the listing shows of a transcript: message count, broken lines, a torn tail, the title."""

    __slots__ = ("messages", "broken", "torn_tail", "title")

    def __init__(self) -> None:
        self.messages, self.broken, self.torn_tail, self.title = 0, 0, False, None


def survey(transcript: Path) -> Survey:
    """One pass over the transcript in bounded memory (one line up to :data:`LIST_LINE_MAX` and a
    chunk): the counts :func:`message_count`, ``broken_lines_state`` and :func:`health` make of the
    records, and the first prompt, without building a record past the one that holds it."""
    found, titled = Survey(), False
    with open_regular(transcript) as fh:
        fd = fh.fileno()
        for line in iter_lines(fh, max_line_bytes=LIST_LINE_MAX):
            if line.oversize:
                size = line.length or 0
                head = os.pread(fd, PREFIX, line.offset)
                m = _TOP_ROLE.match(head)
                found.messages += m is not None
                found.broken += size > DEFAULT_MAX_LINE_BYTES
                found.torn_tail = size > DEFAULT_MAX_LINE_BYTES or not _closes(os.pread(fd, 64, line.offset + size - 64))
                if not titled and m is not None and m.group(1) == b"user":
                    found.title = _prompt_from_prefix(head)
                    titled = found.title is not None
                continue
            if line.blank:
                continue
            rec = unparsed_record(line)
            found.torn_tail = rec is not None
            if rec is not None:
                found.broken += 1
                continue
            obj = line.obj
            found.messages += obj.get("role") in ("user", "assistant", "tool", "system")
            if not titled:
                found.title = first_prompt([record_from_obj(line, obj)])
                titled = found.title is not None
    return found


def _closes(end: bytes) -> bool:
    """The last bytes of a long line end a JSON object and the line."""
    return end.endswith(b"\n") and end.rstrip().endswith(b"}")


def _prompt_from_prefix(head: bytes) -> str | None:
    """The first ``content``/``text`` string in the first bytes of a user line too long to parse,
    checked as ``first_prompt`` checks a prompt (a title keeps 200 characters)."""
    text = prefix_string(head, ("content", "text"))
    text = text.strip() if text is not None else None
    return text if text and not NOT_PROMPT_RE.match(text) else None


def _epoch(value: Any) -> float | None:
    """``Date.parse`` of an ISO date (the ordering key of ``-c``), or None."""
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


ADAPTER = FunctionAdapter(NAME, frozenset({"text", "tool_call", "tool_result"}),
                          detect=detect, discover=discover, read=read, stream=stream, serialize=serialize,
                          serialize_meta=serialize_meta, health=health)
