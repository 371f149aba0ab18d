"""Cline CLI sessions: ``<data>/sessions/<sid>/<sid>.json`` + ``<sid>.messages.json`` (docs/cline.md).

``<data>`` is ``$CLINE_DATA_DIR``, else ``$CLINE_DIR/data``, else ``~/.cline/data``. The session id is
``<epoch ms>_<5 [a-z0-9]>``. ``<sid>.json`` is the manifest (cwd, provider, model, status, title in
``metadata``, ``messages_path`` as an absolute path); ``<sid>.messages.json`` holds
``{version, updated_at, agent, sessionId, origin, messages: [...], system_prompt}`` with Anthropic-style
blocks whatever the wire API: ``text``, ``tool_use {id,name,input}``, ``tool_result {tool_use_id, name,
content}`` (``content``: a list ``[{query, result, success}]`` or a string), ``thinking``, ``image``.
User text is stored wrapped as ``<user_input mode="act">...</user_input>``: the reader unwraps it and
keeps the mode in the record's ``source_type`` (``user/act``) so a re-encoded record wraps it again.

Both files are whole-file JSON. The messages file is the session's main file: ``serialize`` returns its
exact bytes while no record changed, else the document re-encoded as ``JSON.stringify(doc, null, 2)``
writes it (Cline's own shape). Listings read the manifest and count messages by a byte search of the
messages file, never parsing it (docs/cline.md). ``stream`` (show, convert) and doctor read the messages
one at a time (histmig/jsonio/jsonpull.py), never the whole document.
"""
from __future__ import annotations

import json
import os
import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator

import orjson

from histmig.core.diagnostics import HistmigError, HistmigInputError
from histmig.core.model import (Attachment, Opaque, Part, Reasoning, Record, RecordStream, Session, SessionRef, Text,
                                ToolCall, ToolResult)
from histmig.jsonio.jsonl import RECORD_MAX_BYTES, record_too_big
from histmig.jsonio.jsonpull import PullError, pieces
from histmig.jsonio.marks import prefix_string
from histmig.jsonio.regular import open_regular, read_regular
from histmig.tools.base import FunctionAdapter
from histmig.tools.claude_family.listing import mark_unreadable

NAME = "cline"
SID_RE = re.compile(r"^\d{10,16}_[a-z0-9]{3,12}$")
WRAP_RE = re.compile(r'\A<user_input mode="([A-Za-z_-]+)">(.*)</user_input>\Z', re.S)
NAMED_KEYS = frozenset({"id", "role", "content"})   # ``metrics`` stays in extra (its place varies)
COUNT_CHUNK = 1 << 20
MAX_DOC = 1 << 30     # a whole-file JSON read past this is refused (named), not attempted


# ---- paths --------------------------------------------------------------------------------------

def data_dir(homes: Any) -> Path:
    return Path(homes.cline_data) if getattr(homes, "cline_data", None) else Path(homes.cline) / "data"


def sessions_root(homes: Any) -> Path:
    return data_dir(homes) / "sessions"


def messages_path(path: Path) -> Path:
    """The messages file of a session named by either of its two files or its folder."""
    path = Path(path)
    if path.is_dir():
        return path / f"{path.name}.messages.json"
    if path.name.endswith(".messages.json"):
        return path
    return path.with_name(path.name[:-len(".json")] + ".messages.json")


def manifest_path(path: Path) -> Path:
    mp = messages_path(path)
    return mp.with_name(mp.name[:-len(".messages.json")] + ".json")


def session_id(path: Path) -> str:
    return messages_path(path).name[:-len(".messages.json")]


def detect(path: Any) -> bool:
    p = Path(path)
    name = p.name
    stem = name[:-len(".messages.json")] if name.endswith(".messages.json") else name[:-5] if name.endswith(
        ".json") else ""
    return bool(SID_RE.match(stem)) and p.parent.name == stem


# ---- parts --------------------------------------------------------------------------------------

def result_text(content: Any) -> Any:
    """A tool result's readable output: Cline's ``[{query, result, success}]`` entries joined, text
    blocks joined, a string as is; anything else unchanged."""
    if isinstance(content, list) and all(isinstance(c, dict) for c in content):
        if all("result" in c for c in content):
            return "\n".join(c["result"] if isinstance(c["result"], str) else json.dumps(c["result"])
                             for c in content)
        if all(c.get("type") == "text" for c in content):
            return "\n".join(str(c.get("text", "")) for c in content)
    return content


def failed(content: Any, block: dict) -> bool:
    if block.get("is_error") is True:
        return True
    return isinstance(content, list) and any(isinstance(c, dict) and c.get("success") is False for c in content)


def part_of(block: Any) -> Part:
    """One content block as a model part (anything unknown is kept opaque)."""
    if not isinstance(block, dict):
        return Text(block) if isinstance(block, str) else Opaque(block, "not an object")
    t = block.get("type")
    if t == "text" and isinstance(block.get("text"), str):
        return Text(block["text"])
    if t == "tool_use":
        return ToolCall(str(block.get("id") or ""), str(block.get("name") or ""), block.get("input"))
    if t == "tool_result":
        content = block.get("content")
        return ToolResult(str(block.get("tool_use_id") or ""), result_text(content), is_error=failed(content, block),
                          structured={"name": block.get("name"), "content": content})
    if t == "thinking":
        return Reasoning(text=str(block.get("thinking") or ""), signature=block.get("signature") or None)
    if t == "redacted_thinking":
        return Reasoning(encrypted=block.get("data"), redacted=True)
    if t == "image":
        src = block.get("source")
        return Attachment(src.get("media_type") if isinstance(src, dict) else None, block)
    return Opaque(block, "block")


def kind_for(role: Any, parts: list[Part]) -> str:
    if parts and all(isinstance(p, ToolResult) for p in parts):
        return "tool_result"
    if role == "assistant" and parts and all(isinstance(p, ToolCall) for p in parts):
        return "tool_call"
    if role == "assistant" and parts and all(isinstance(p, Reasoning) for p in parts):
        return "reasoning"
    return "message" if role in ("user", "assistant") else "event"


def iso(ms: Any) -> str | None:
    if not isinstance(ms, (int, float)) or isinstance(ms, bool):
        return None
    try:
        at = datetime.fromtimestamp(ms / 1000, timezone.utc)
    except (OverflowError, ValueError, OSError):    # a corrupt ts (1e300, NaN) is no time, not a crash
        return None
    return at.strftime("%Y-%m-%dT%H:%M:%S.") + f"{int(ms) % 1000:03d}Z"


def wrapped_mode(role: str, blocks: list) -> str | None:
    """The mode when every text block of a user message is exactly one ``<user_input>`` wrap of one mode."""
    texts = [b for b in blocks if isinstance(b, dict) and b.get("type") == "text"]
    if role != "user" or not texts or any(set(b) != {"type", "text"} or not isinstance(b["text"], str) for b in texts):
        return None
    modes = {m.group(1) if m else None for m in (WRAP_RE.match(b["text"]) for b in texts)}
    return modes.pop() if len(modes) == 1 and None not in modes else None


def record_of(n: int, msg: Any) -> Record:
    """One element of ``messages`` (``line`` is its 1-based position in the array)."""
    if not isinstance(msg, dict) or msg.get("role") not in ("user", "assistant"):
        return Record(kind="other", extra={"value": msg}, raw=dump(msg), line=n, opaque_reason="not a message")
    content = msg.get("content")
    blocks = content if isinstance(content, list) else [content] if isinstance(content, str) else []
    mode, parts = wrapped_mode(msg["role"], blocks), []
    for b in blocks:
        m = WRAP_RE.match(b["text"]) if mode and isinstance(b, dict) and b.get("type") == "text" else None
        parts.append(Text(m.group(2)) if m else part_of(b))
    extra = {k: v for k, v in msg.items() if k not in NAMED_KEYS}
    if isinstance(content, str):
        extra["contentString"] = True
    metrics = msg.get("metrics")
    return Record(id=str(msg["id"]) if msg.get("id") is not None else None, kind=kind_for(msg["role"], parts),
                  role="tool" if kind_for(msg["role"], parts) == "tool_result" else msg["role"],
                  timestamp=iso(msg.get("ts")), parts=parts, usage=metrics if isinstance(metrics, dict) else None,
                  extra=extra, raw=dump(msg), line=n,
                  source_type=f"{msg['role']}/{mode}" if mode else msg["role"])


# ---- records -> JSON ------------------------------------------------------------------------------

def dump(value: Any) -> bytes:
    """``json.dumps(value, ensure_ascii=False, indent=2)`` as Cline writes it: by ``orjson`` (``OPT_INDENT_2``
    writes the same bytes for every value that ``json`` loads, tests/test_cline_format.py) unless a float
    would be spelled otherwise (``repr``'s ``1e-05``, orjson's ``0.00001``; NaN, Infinity) or orjson
    refuses the value (an integer past 64 bits); ``json``'s pure-Python indenting encoder costs ~17 us
    a message."""
    if _floats_as_repr(value):
        try:
            return orjson.dumps(value, option=orjson.OPT_INDENT_2)
        except orjson.JSONEncodeError:
            pass
    # a lone surrogate (an emoji cut in half) is written as its escape, as Node's JSON.stringify does
    return json.dumps(value, ensure_ascii=False, indent=2).encode("utf-8", "backslashreplace")


def _floats_as_repr(value: Any) -> bool:
    """Whether every float in ``value`` is spelled by orjson as ``json`` spells it (``float.__repr__``)."""
    t = type(value)
    if t is dict:
        value = value.values()
    elif t is not list:
        return t is not float or repr(value) == orjson.dumps(value).decode()
    for v in value:
        if not _floats_as_repr(v):
            return False
    return True


def block_of(p: Part, mode: str | None) -> Any:
    if isinstance(p, Text):
        return {"type": "text", "text": f'<user_input mode="{mode}">{p.text}</user_input>' if mode else p.text}
    if isinstance(p, ToolCall):
        return {"type": "tool_use", "id": p.call_id, "name": p.name, "input": p.arguments}
    if isinstance(p, ToolResult):
        s = p.structured if isinstance(p.structured, dict) else {}
        content = s["content"] if "content" in s and result_text(s["content"]) == p.output else p.output
        name = {"name": s["name"]} if s.get("name") is not None else {}
        return {"type": "tool_result", "tool_use_id": p.call_id, **name, "content": content}
    if isinstance(p, Reasoning):
        if p.redacted:
            return {"type": "redacted_thinking", "data": p.encrypted}
        return {"type": "thinking", "thinking": p.text or p.summary} | ({"signature": p.signature} if p.signature else {})
    if isinstance(p, Attachment):
        return p.data
    return p.data


def message_of(rec: Record) -> Any:
    """A record back as one element of ``messages``, in Cline's key order."""
    if rec.opaque:
        return rec.extra.get("value")
    extra = dict(rec.extra)
    role = (rec.source_type or rec.role or "user").split("/")[0]
    mode = rec.source_type.split("/", 1)[1] if rec.source_type and "/" in rec.source_type else None
    blocks = [block_of(p, mode) for p in rec.parts]
    string = extra.pop("contentString", False) and len(blocks) == 1 and isinstance(blocks[0], str)
    obj: dict[str, Any] = {"id": rec.id, "role": role, "content": blocks[0] if string else blocks}
    obj.update(extra)
    if rec.usage is not None and obj.get("metrics") != rec.usage:
        obj["metrics"] = rec.usage
    return obj


def serialize(session: Session) -> bytes:
    """The messages file: its own bytes while every record is unchanged, else re-encoded."""
    native = session.meta.get("native")
    if native is None and session.meta.get("native_file"):
        native = _native_again(session.meta["native_file"])
    records = list(session.records)
    if native is not None and len(records) == session.meta.get("count") and all(r.raw is not None for r in records):
        return native
    doc = dict(session.meta.get("envelope") or {"version": 1, "agent": "lead", "sessionId": session.id})
    doc["messages"] = [message_of(r) for r in records]
    order = session.meta.get("order")
    if order:
        doc = {k: doc[k] for k in order if k in doc} | {k: v for k, v in doc.items() if k not in order}
    return dump(doc) + b"\n"


# ---- reading --------------------------------------------------------------------------------------

def load_json(path: Path) -> tuple[bytes, Any]:
    try:
        data = read_regular(path, MAX_DOC)       # a FIFO named like a session file would block
    except OSError as e:
        raise HistmigInputError(f"cannot read: {e.strerror}", path=path) from e
    try:
        return data, json.loads(data)
    except (ValueError, RecursionError) as e:          # RecursionError: "[" * 100000
        line = getattr(e, "lineno", None)
        raise HistmigInputError(f"not a Cline session file: {e}", path=path, line=line) from e


def read_manifest(path: Path) -> dict:
    mp = manifest_path(path)
    if not mp.exists():
        return {}
    obj = load_json(mp)[1]
    return obj if isinstance(obj, dict) else {}


LIST_MAX = 1 << 20        # a listing reads a manifest up to this whole; past it, member by member
PREFIX = 64 * 1024


def listing_manifest(path: Path) -> dict:
    """The manifest as a listing reads it: whole when it is small (as always), else a member at a time,
    a member over :data:`LIST_MAX` (a prompt of tens of MB, and its copy as the title) not read: a string
    stands in as its first few KB, ``metadata`` as its ``title``'s."""
    mp = manifest_path(path)
    try:
        if mp.stat().st_size <= LIST_MAX:
            return read_manifest(path)
    except OSError:
        return read_manifest(path)
    out: dict[str, Any] = {}
    try:
        with open_regular(mp) as fh:
            fd = fh.fileno()
            for p in pieces(fh, "\0", limit=LIST_MAX):
                if not p.oversize:
                    out[p.key] = orjson.loads(p.raw)
                    continue
                head = os.pread(fd, PREFIX, p.start)
                if head[:1] == b'"':
                    out[p.key] = prefix_string(head)
                elif p.key == "metadata":
                    out[p.key] = {"title": prefix_string(head, ("title",))}
    except (PullError, orjson.JSONDecodeError):
        return read_manifest(path)             # (its error, or what json reads of it)
    return out


def read(src: Any) -> Session:
    path = messages_path(Path(src.path) if isinstance(src, SessionRef) else Path(src))
    native, doc = load_json(path)
    if not isinstance(doc, dict) or not isinstance(doc.get("messages"), list):
        raise HistmigInputError("not a Cline messages file (no 'messages' list)", path=path)
    records = [record_of(n, m) if _utf8_clean(m) else _not_utf8(n, m) for n, m in enumerate(doc["messages"], 1)]
    manifest = read_manifest(path)
    meta = manifest.get("metadata") if isinstance(manifest.get("metadata"), dict) else {}
    envelope = {k: v for k, v in doc.items() if k != "messages"}
    session = Session(id=session_id(path), format=NAME, path=path, records=records,
                      cwd=manifest.get("cwd") if isinstance(manifest.get("cwd"), str) else None,
                      created=manifest.get("started_at"), updated=path.stat().st_mtime,
                      title=meta.get("title") or first_prompt(records), provider=manifest.get("provider"),
                      model=manifest.get("model"))
    session.meta = {"native": native, "count": len(records), "envelope": envelope, "order": list(doc),
                    "manifest": manifest, "usage": meta.get("usage")}
    session.warnings = [r.opaque_reason for r in records if r.opaque]
    return session


def _utf8_clean(value: Any) -> bool:
    """No lone surrogate (``"\\ud800"``, an emoji cut in half) in ``value``: only this fallback path's
    ``json.loads`` lets one through, and no writer or printer can encode it."""
    try:
        orjson.dumps(value)
    except orjson.JSONEncodeError as e:
        return "surrogate" not in str(e)
    return True


def _not_utf8(n: int, msg: Any) -> Record:
    """A message holding a lone surrogate: opaque, kept as its bytes, as a JSONL line with one is."""
    return Record(kind="other", raw=dump(msg), line=n, opaque_reason="invalid UTF-8 (lone surrogate)")


def stream(src: Any) -> Session:
    """:func:`read` with the records parsed again from the file on each iteration, one message at a time
    (histmig/jsonio/jsonpull.py), so show/convert/doctor hold one message, never the document. The file's
    bytes are not kept: ``serialize`` reads them again (``native_file``) while the file is unchanged. A
    file the pull reader or ``orjson`` refuses is read whole (:func:`read`, its error)."""
    path = messages_path(Path(src.path) if isinstance(src, SessionRef) else Path(src))
    try:
        st = path.stat()
        envelope, order, count, warnings, prompt = _survey(path)
    except _TooBig as e:
        raise record_too_big(path, e.number, e.size, RECORD_MAX_BYTES) from None
    except (OSError, PullError, orjson.JSONDecodeError, _Unstreamable):
        return read(src)
    manifest = read_manifest(path)
    meta = manifest.get("metadata") if isinstance(manifest.get("metadata"), dict) else {}
    records = RecordStream(lambda: _records(path))
    session = Session(id=session_id(path), format=NAME, path=path, records=records,
                      cwd=manifest.get("cwd") if isinstance(manifest.get("cwd"), str) else None,
                      created=manifest.get("started_at"), updated=st.st_mtime,
                      title=meta.get("title") or prompt, provider=manifest.get("provider"),
                      model=manifest.get("model"))
    session.meta = {"native_file": [str(path), st.st_size, st.st_mtime_ns], "count": count, "envelope": envelope,
                    "order": order, "manifest": manifest, "usage": meta.get("usage")}
    session.warnings = warnings
    return session


def _records(path: Path) -> Iterator[Record]:
    n = 0
    for msg in _messages(path):
        n += 1
        rec = record_of(n, msg)
        del msg                   # (the record holds what it needs of the message)
        yield rec


class _Unstreamable(Exception):
    pass


class _TooBig(Exception):
    """A message (``number``, 1-based) or envelope member (``number`` None) over the record limit."""

    def __init__(self, number: int | None, size: int):
        super().__init__(number, size)
        self.number, self.size = number, size


def _survey(path: Path) -> tuple[dict, list[str], int, list[str], str | None]:
    """One pass: the envelope (every member but ``messages``) and its key order, the message count, the
    broken records' reasons and the first prompt; every message parsed once, none kept."""
    envelope: dict[str, Any] = {}
    order: list[str] = []
    count, warnings, prompt = 0, [], None
    with open(path, "rb") as fh:
        for p in pieces(fh, "messages", limit=RECORD_MAX_BYTES):
            if p.key not in order:
                order.append(p.key)
            if p.oversize and not (p.key == "messages" and not p.item):
                raise _TooBig(count + 1 if p.item else None, p.size)
            if not p.item:
                if p.key == "messages":
                    raise _Unstreamable("messages is not a list")
                envelope[p.key] = orjson.loads(p.raw)
                continue
            count += 1
            msg = orjson.loads(p.raw)
            p = None                     # (its bytes are not held while the message is looked at)
            if not isinstance(msg, dict) or msg.get("role") not in ("user", "assistant"):
                warnings.append(record_of(count, msg).opaque_reason)
            elif prompt is None and msg["role"] == "user":
                prompt = first_prompt([record_of(count, msg)])
    if "messages" not in order:
        raise _Unstreamable("no messages list")
    return envelope, order, count, warnings, prompt


def _messages(path: Path) -> Iterator[Any]:
    """Each message parsed, its bytes let go before it is handed on (one message held: the caller's
    record of it). A message over the record limit is refused (the file grew one since the survey)."""
    n = 0
    with open(path, "rb") as fh:
        for p in pieces(fh, "messages", limit=RECORD_MAX_BYTES):
            if not p.item:
                continue
            n += 1
            if p.oversize:
                raise record_too_big(path, n, p.size, RECORD_MAX_BYTES)
            raw, p = p.raw, None
            msg = orjson.loads(raw)
            del raw
            yield msg


def _native_again(native_file: list) -> bytes | None:
    """The messages file's bytes when it is still the one the session was streamed from."""
    path, size, mtime_ns = native_file
    try:
        st = Path(path).stat()
        return Path(path).read_bytes() if (st.st_size, st.st_mtime_ns) == (size, mtime_ns) else None
    except OSError:
        return None


def first_prompt(records: list[Record]) -> str | None:
    for r in records:
        if r.role == "user" and not r.opaque:
            for p in r.parts:
                if isinstance(p, Text) and p.text.strip():
                    return p.text.strip()
    return None


# ---- listing --------------------------------------------------------------------------------------

def count_messages(path: Path) -> int:
    """Messages by a byte search for ``"role": "user"|"assistant"`` (inside a JSON string the quotes would
    be escaped, so only keys match; a tool input holding such a key is over-counted)."""
    pats = (b'"role": "user"', b'"role": "assistant"')
    n, tail = 0, b""
    with open(path, "rb") as f:
        while chunk := f.read(COUNT_CHUNK):
            buf = tail + chunk
            n += sum(buf.count(p) for p in pats)
            tail = buf[-(len(pats[1]) - 1):]
            n -= sum(tail.count(p) for p in pats)
    return n


def discover(homes: Any, index: Any = None) -> Iterator[SessionRef]:
    root = sessions_root(homes)
    try:
        folders = sorted(p for p in root.iterdir() if SID_RE.match(p.name) and p.is_dir() and not p.is_symlink())
    except OSError:
        return
    for folder in folders:
        if (folder / f"{folder.name}.messages.json").is_file():
            yield ref_for(folder / f"{folder.name}.messages.json")


def ref_for(path: Path) -> SessionRef:
    """One session from its manifest (small) and a byte count of its messages file."""
    ref = SessionRef(format=NAME, id=session_id(path), path=path)
    try:
        st = path.stat()
        ref.size, ref.updated = st.st_size, st.st_mtime
        manifest = listing_manifest(path)
        meta = manifest.get("metadata") if isinstance(manifest.get("metadata"), dict) else {}
        ref.cwd = manifest.get("cwd") if isinstance(manifest.get("cwd"), str) else None
        ref.provider = manifest.get("provider") if isinstance(manifest.get("provider"), str) else None
        ref.created = manifest.get("started_at") if isinstance(manifest.get("started_at"), str) else None
        title = meta.get("title") or meta.get("prompt") or manifest.get("prompt")
        ref.title = unwrap(title) if isinstance(title, str) else None
        ref.messages = count_messages(path)
        if not manifest:
            ref.state.append("no manifest")
    except (HistmigError, OSError) as e:
        return mark_unreadable(ref, e)
    return ref


def unwrap(text: str) -> str:
    m = WRAP_RE.match(text)
    return m.group(2) if m else text


ADAPTER = FunctionAdapter(NAME, frozenset({"text", "reasoning", "tool_call", "tool_result", "attachment"}),
                          detect=detect, discover=discover, read=read, stream=stream, serialize=serialize,
                          encode_record=lambda rec: dump(message_of(rec)))
