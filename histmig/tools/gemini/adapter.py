"""Gemini CLI sessions (docs/specs/gemini.md): ``<gemini>/tmp/<slug>/chats/session-<minute>-<id8>.jsonl``, and
the older whole-file ``.json`` (``{sessionId, startTime, lastUpdated, messages: [...]}``).

``read`` keeps every line byte for byte (serialize(read(f)) == f) and adds the conversation the client
rebuilds from the log (records.py); ``stream`` gives the same records with bounded memory: a first pass
keeps where each message of the final list is (on disk past ``records.SPILL_AT`` messages), the second
reads each from its line through one open file; a legacy ``.json`` is read one message at a time (legacy.py).
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Iterator

import orjson

from histmig.core.diagnostics import HistmigError
from histmig.core.model import Record, RecordStream, Session, SessionRef, Text
from histmig.jsonio.jsonl import RECORD_MAX_BYTES, head_lines, read_lines, record_lines, record_too_big, tail_lines
from histmig.jsonio.regular import open_or_stat
from histmig.tools.base import FunctionAdapter
from histmig.tools.claude_family.blocks import broken_warnings
from histmig.tools.claude_family.listing import HEAD_TAIL, broken_state, mark_unreadable
from histmig.tools.gemini import files, legacy
from histmig.tools.gemini.records import (RESOLVED, Resolved, as_list, line_kind, line_record, message_records, messages,
                                          resolve)

NAME = "gemini"


def _path(src: Any) -> Path:
    return Path(src.path) if isinstance(src, SessionRef) else Path(src)


def is_legacy(path: Path) -> bool:
    return path.name.endswith(".json")


# ---- reading ----------------------------------------------------------------------------------

def read(src: Any) -> Session:
    path = _path(src)
    if is_legacy(path):
        return _read_legacy(path, stream=False)
    lines = list(read_lines(path))
    res = resolve(lines)
    records = [line_record(ln) for ln in lines]
    records += list(messages(res, lambda n, _offset, _length: lines[n - 1].obj))
    return _session(path, records, res)


def stream(src: Any) -> Session:
    """:func:`read` with the records produced again on each iteration (bounded memory for show/convert)."""
    path = _path(src)
    if is_legacy(path):
        return _read_legacy(path, stream=True)
    res = resolve(record_lines(path))

    def produce() -> Iterator[Record]:
        yield from (line_record(ln) for ln in record_lines(path))
        fetch = _Fetch(path)
        try:
            yield from messages(res, fetch)
        finally:
            fetch.close()
    return _session(path, RecordStream(produce), res)


class _Fetch:
    """One line's object by its number, offset and length, through one open file: read in windows of
    ``WINDOW`` bytes, so a list in file order costs a read per window, not per message; the last
    object parsed is kept (a ``$set`` line holds many)."""

    WINDOW = 1 << 20

    def __init__(self, path: Path):
        self.fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        self.start, self.buf = 0, b""
        self.last: tuple[int, Any] = (0, None)

    def __call__(self, number: int, offset: int, length: int) -> Any:
        if self.last[0] != number:
            at = offset - self.start
            if at < 0 or at + length > len(self.buf):
                self.buf = os.pread(self.fd, max(length, self.WINDOW), offset)
                self.start, at = offset, 0
            with memoryview(self.buf) as view:
                self.last = (number, orjson.loads(view[at:at + length]))
        return self.last[1]

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd, self.buf = -1, b""


def _read_legacy(path: Path, *, stream: bool) -> Session:
    """The whole-file ``.json``, message by message (legacy.py); whole when the pull reader refuses it."""
    try:
        meta, first = legacy.survey(path)
    except legacy.TooBig as e:
        raise record_too_big(path, e.number, e.size, RECORD_MAX_BYTES) from None
    except legacy.Unstreamable:
        return _read_legacy_whole(path)
    records: Any = RecordStream(lambda: legacy.records(path, meta, first))
    return _session(path, records if stream else list(records), Resolved(meta=meta, metas=1))


def _read_legacy_whole(path: Path) -> Session:
    raw = path.read_bytes()
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError as e:
        rec = Record(raw=raw, line=1, opaque_reason=f"not JSON: {e}")
        return _session(path, [rec], Resolved())
    if not isinstance(obj, dict):
        return _session(path, [Record(raw=raw, line=1, opaque_reason="not a JSON object")], Resolved())
    meta = {k: v for k, v in obj.items() if k != "messages"}
    records = [Record(kind="event", raw=raw, line=1, extra=meta, source_type="legacy-json")]
    answered: set[str] = set()
    for m in as_list(obj.get("messages")):
        if isinstance(m, dict):
            records += message_records(m, None, answered)
    return _session(path, records, Resolved(meta=meta, metas=1))


def _session(path: Path, records: Any, res: Resolved) -> Session:
    meta = res.meta
    sid = meta.get("sessionId") if isinstance(meta.get("sessionId"), str) else path.stem
    session = Session(id=sid, format=NAME, path=path, records=records)
    session.cwd = files.project_root(path.parent.parent)
    session.created = meta.get("startTime") if isinstance(meta.get("startTime"), str) else None
    session.updated = path.stat().st_mtime
    model, title = None, None
    opaque = []                 # one pass (a stream reads its file again on each)
    for r in records:
        if r.opaque:
            opaque.append(r)
        if r.source_type != RESOLVED:
            continue
        if r.role == "assistant" and isinstance(r.extra.get("model"), str):
            model = r.extra["model"]
        if title is None and r.role == "user":
            title = _prompt(r)
    session.title = meta.get("summary") if isinstance(meta.get("summary"), str) else title
    session.model = model
    session.meta = {"lastUpdated": meta.get("lastUpdated"), "kind": meta.get("kind"),
                    "summary": meta.get("summary"), "metadata_lines": res.metas}
    session.warnings = broken_warnings(opaque, path)
    return session


def _prompt(rec: Record) -> str | None:
    """What Gemini counts as a resumable prompt: user text not starting with ``/``, ``?`` or the context block."""
    for p in rec.parts:
        if isinstance(p, Text) and p.text.strip() and not p.injected and p.text.lstrip()[:1] not in ("/", "?"):
            return p.text.strip()
    return None


# ---- serializing ------------------------------------------------------------------------------

def encode_record(rec: Record) -> bytes:
    """A changed line: metadata lines re-encoded from their fields (the only lines kept as fields)."""
    return orjson.dumps(rec.extra) + b"\n"


def serialize(session: Session) -> bytes:
    out = []
    for r in session.records:      # a legacy .json message's bytes ride on its first resolved record
        if r.raw:
            out.append(r.raw)
        elif r.raw is None and r.source_type not in (RESOLVED, "repeated-function-response"):
            out.append(encode_record(r))
    return b"".join(out)


# ---- detect and discover ----------------------------------------------------------------------

def detect(path: Any) -> bool:
    p = Path(path)
    return bool(files.SESSION_RE.match(p.name)) and p.parent.name == "chats" and p.parent.parent.parent.name == "tmp"


def discover(homes: Any, index: Any = None) -> Iterator[SessionRef]:
    """Every session; ``index``: a ``ScanIndex`` (histmig/core/scanindex.py) that answers for unchanged files.
    The files to read are shared out to every CPU (histmig/toolkit/forklist.py: a batch under 32 MB is
    read here)."""
    from histmig.toolkit.forklist import list_files
    yield from list_files(_sessions(homes), index, _index_hit, lambda entry, index: ref_for(*entry, index=index),
                          path_of=lambda entry: entry[0])


def _sessions(homes: Any) -> Iterator[tuple[str, str | None]]:
    """``(chat file, project root)`` of every session, folder by folder (the file as text: a warm
    listing's ref keeps its path so, histmig/core/model.py)."""
    gdir = files.gemini_dir(homes)
    registry = files.read_registry(gdir)
    for slug_dir in files.slug_dirs(gdir):
        cwd = files.project_root(slug_dir, registry)
        for path in files.chat_paths(slug_dir):
            yield path, cwd


def _index_hit(entry: tuple[str, str | None], index: Any) -> SessionRef | None:
    """The ref of an unchanged file from the scan index (``ref_for``'s first step), or None."""
    return _indexed(*entry, index)[0]


def _indexed(path: str | Path, cwd: str | None, index: Any) -> tuple[SessionRef | None, os.stat_result | None]:
    """``scanindex.indexed`` for a Gemini session (its record kept per file and cwd): ``(ref or None, stat)``."""
    from histmig.core.scanindex import indexed
    from histmig.core.model import stored_ref
    return indexed(index, path, cwd, FIELDS, lambda st, fields: stored_ref(
        fields, format=NAME, path=path, cwd=cwd, size=st.st_size, updated=st.st_mtime))


FIELDS = ("id", "created", "title", "messages", "state", "error", "extra")


def ref_for(path: str | Path, cwd: str | None = None, *, index: Any = None) -> SessionRef:
    """One session from its two ends (a small file: whole); the index keeps it per file and cwd (a move
    changes the cwd through the markers, not the file)."""
    path, st = Path(path), None
    if index is not None:
        ref, st = _indexed(path, cwd, index)
        if ref is not None:
            return ref
    ref = SessionRef(format=NAME, id=path.stem, path=path, cwd=cwd)
    fd = None
    try:       # without an index to ask, a small file's stat is the fstat of its open (one syscall less)
        fd, st = open_or_stat(path) if index is None and not is_legacy(path) else (None, st or path.stat())
    except OSError as e:
        return mark_unreadable(ref, e)
    ref.size, ref.updated = st.st_size, st.st_mtime
    _summarize(ref, path, st, fd)
    if index is not None:
        from histmig.core.scanindex import fields_of
        index.store(str(path), st, fields_of(ref, FIELDS), ctx=cwd)
    return ref


def _summarize(ref: SessionRef, path: Path, st: Any, fd: int | None = None) -> None:
    """``fd``: the file opened by ``ref_for`` (closed here)."""
    from histmig.tools.gemini.listing import WHOLE_READ
    if fd is not None and st.st_size > WHOLE_READ:
        os.close(fd)              # large: its ends are read by path
        fd = None
    if not is_legacy(path) and st.st_size <= WHOLE_READ and _summarize_bytes(ref, path, st, fd):
        return
    try:
        if is_legacy(path):
            meta, head, opaque, ref.messages = _legacy_listing(path)
        elif st.st_size <= WHOLE_READ:      # small (it grew past its stat): every line once, counted as resolved
            lines = list(read_lines(path))
            meta, head, opaque = _head_facts(lines)
            res = resolve(lines)
            ref.messages = res.counted()
        else:
            head_l = head_lines(path, max_lines=10**6, max_bytes=HEAD_TAIL)
            tail_l = tail_lines(path, max_bytes=HEAD_TAIL)
            meta, head, opaque = _head_facts(head_l + tail_l)
    except (HistmigError, OSError) as e:
        mark_unreadable(ref, e)
        return
    prompt = next((p for p in (_prompt(r) for r in head if r.role == "user") if p), None)
    # what the client's listing and cleanup call resumable: a prompt, or a model message with content
    resumable = prompt is not None or any(r.role == "assistant" and r.parts for r in head)
    _row(ref, meta, prompt, resumable, sum(1 for r in opaque if r.opaque))


def _summarize_bytes(ref: SessionRef, path: Path, st: Any, fd: int | None = None) -> bool:
    """A small ``.jsonl`` from its bytes (listing.py: the same row, no Line or Record); False when the
    file grew past its stat meanwhile (the Line reader then reads it as it is)."""
    from histmig.tools.gemini.listing import small_facts
    try:
        facts = small_facts(path, st.st_size, fd)
    except (HistmigError, OSError) as e:
        mark_unreadable(ref, e)
        return True
    if facts is None:
        return False
    ref.messages = facts.messages
    # a JSONL head holds user records only: resumable means a prompt
    _row(ref, facts.meta, facts.prompt, facts.prompt is not None, facts.broken)
    return True


def _row(ref: SessionRef, meta: dict, prompt: str | None, resumable: bool, broken: int) -> None:
    if isinstance(meta.get("sessionId"), str):
        ref.id = meta["sessionId"]
    ref.created = meta.get("startTime") if isinstance(meta.get("startTime"), str) else None
    ref.title = meta.get("summary") if isinstance(meta.get("summary"), str) else prompt
    ref.extra = {"lastUpdated": meta.get("lastUpdated"), "resumable": resumable}
    if not resumable:
        ref.state.append("no prompt (Gemini deletes it at its next start)")
    ref.state += broken_state(broken)


def _legacy_listing(path: Path) -> tuple[dict, list[Record], list[Record], int]:
    """:func:`_legacy_facts` of a legacy ``.json`` read once, a message at a time, messages over
    ``legacy.LIST_MAX`` not parsed (legacy.py ``listing``); a document that pass refuses is read as
    ``show`` reads it."""
    facts = _Facts()
    try:
        meta = legacy.listing(path, facts.take)
    except legacy.Unstreamable:
        return _legacy_facts(stream(path))
    sid = meta.get("sessionId") if isinstance(meta.get("sessionId"), str) else path.stem
    shown = {"sessionId": sid, "startTime": meta.get("startTime") if isinstance(meta.get("startTime"), str) else None}
    shown.update({k: meta[k] for k in ("lastUpdated", "summary") if meta.get(k) is not None})
    return shown, facts.head, facts.opaque, facts.count


class _Facts:
    """What a listing keeps of a session's records: user records up to the first prompt, the first
    assistant record with content, broken records, the message count."""

    def __init__(self) -> None:
        self.head: list[Record] = []
        self.opaque: list[Record] = []
        self.count = 0

    def take(self, r: Record) -> None:
        head = self.head
        if r.opaque:
            self.opaque.append(r)
        if r.source_type != RESOLVED:
            return
        self.count += r.role in ("user", "assistant") and _visible(r)
        if r.role == "user" and not any(_prompt(h) for h in head if h.role == "user"):
            head.append(r)
        elif r.role == "assistant" and r.parts and not any(h.role == "assistant" for h in head):
            head.append(r)


def _legacy_facts(s: Session) -> tuple[dict, list[Record], list[Record], int]:
    """What a listing shows of a legacy ``.json``, in one pass holding only the records it needs."""
    facts = _Facts()
    for r in s.records:
        facts.take(r)
    return _meta_of(s), facts.head, facts.opaque, facts.count


def _meta_of(s: Session) -> dict[str, Any]:
    meta = {"sessionId": s.id, "startTime": s.created}
    meta.update({k: v for k, v in s.meta.items() if k in ("lastUpdated", "summary") and v is not None})
    return meta


def _visible(r: Record) -> bool:
    return any(not (isinstance(p, Text) and p.injected) for p in r.parts)


def _head_facts(lines: list) -> tuple[dict, list[Record], list[Record]]:
    """Metadata merged from the first and last lines, the user records seen there, broken lines."""
    meta: dict[str, Any] = {}
    head: list[Record] = []
    opaque: list[Record] = []
    answered: set[str] = set()
    prompted = False           # past the first prompt, user records change nothing a listing shows
    for ln in lines:
        if ln.opaque or ln.oversize:
            opaque.append(line_record(ln))
            continue
        obj = ln.obj
        if not isinstance(obj, dict):
            continue
        kind = line_kind(obj)
        if kind == "meta":
            meta.update(obj)
        elif kind == "$set" and isinstance(obj["$set"], dict):
            meta.update({k: v for k, v in obj["$set"].items() if k != "messages"})
            for m in as_list(obj["$set"].get("messages")):
                if isinstance(m, dict) and m.get("type") == "user" and not prompted:
                    head += message_records(m, ln.number, answered)
                    prompted = any(_prompt(r) for r in head if r.role == "user")
        elif kind == "message" and obj.get("type") == "user" and not prompted:
            head += message_records(obj, ln.number, answered)
            prompted = any(_prompt(r) for r in head if r.role == "user")
    return meta, head, opaque


ADAPTER = FunctionAdapter(NAME, frozenset({"text", "reasoning", "tool_call", "tool_result", "attachment"}),
                          detect=detect, discover=discover, read=read, stream=stream, serialize=serialize,
                          encode_record=encode_record)
ADAPTER.indexed = True
