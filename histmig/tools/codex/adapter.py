"""Codex CLI rollouts: ``sessions/YYYY/MM/DD/rollout-*.jsonl[.zst]`` and ``archived_sessions/`` (listed by ``walk``).

Every line becomes one Record whose ``raw`` is the exact source bytes, so ``serialize(read(f))`` is
the file byte for byte: unknown line types (``token_usage_record``, ...) and damaged lines pass
through untouched. Listing (``discover``, ``make_ref``) parses only the lines it shows something from
(``listread``): line 1, the head's title and cwd, the 64 KB tail's latest ``turn_context.cwd`` (what
``codex exec resume --last`` matches on, docs/specs/codex.md §13) and the message lines it counts.
"""
from __future__ import annotations

import bisect
import io
import os
import re
from array import array
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

import orjson

from histmig.core.diagnostics import HistmigError, HistmigInputError
from histmig.core.valueclass import FACTORY, value
from histmig.tools.base import FunctionAdapter
from histmig.tools.codex import walk
from histmig.tools.codex.lines import (first_line, is_injected, line_type, message_text, meta_of, payload,
                                       prompt_title, user_prompt)
from histmig.jsonio.jsonl import Line, is_zst, iter_lines, open_regular_fd, open_stream, read_lines

# histmig.core.model (value classes: ~1 ms of its own, ~12 ms with what it pulls in on a bare interpreter)
# is imported by the functions that build sessions, not here: a flip dry run walks and reads line 1
# through this module and never builds one.
if TYPE_CHECKING:
    from histmig.core.model import Record, Session, SessionRef, ToolCall

NAME = "codex"
ROLLOUT_RE = re.compile(r"^rollout-(\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2})-(.+)\.jsonl(\.zst)?$")
TOOL_CALLS = {"function_call", "custom_tool_call", "local_shell_call", "tool_search_call", "web_search_call",
              "image_generation_call"}
TOOL_RESULTS = {"function_call_output", "custom_tool_call_output", "tool_search_output"}


# ---- file names and discovery ------------------------------------------------------------------

def parse_name(name: str) -> tuple[str, str, str | None] | None:
    """``(timestamp, thread_id, rollout_id)`` from a rollout file name, or None (docs/specs/codex.md §2)."""
    m = ROLLOUT_RE.match(name)
    if not m:
        return None
    ids = m.group(2).split("_", 1)
    return m.group(1), ids[0], ids[1] if len(ids) > 1 else None


def _ref_extra(meta: dict, names) -> dict:
    extra: dict[str, Any] = {}
    if meta.get("history_mode"):
        extra["history_mode"] = meta["history_mode"]
    if isinstance(meta.get("history_base"), dict):
        extra["history_base"] = meta["history_base"]
    if meta.get("forked_from_id"):
        extra["forked_from_id"] = meta["forked_from_id"]
    if names and names[2]:
        extra["rollout_id"] = names[2]
    if "model_provider" not in meta:
        extra["provider_missing"] = True
    return extra


def _states(ref: SessionRef, first: Any, broken: int, shadowed: Path | None, meta) -> list[str]:
    state = []
    if ref.archived:
        state.append("archived")
    if ref.compressed:
        state.append("compressed")
    if meta is not None and "payload" not in (first or {}):
        state.append("legacy pre-envelope (Codex cannot read it)")
    if shadowed is not None:
        state.append("shadows a .zst copy (Codex reads this plain file)")
        ref.extra["shadowed_zst"] = str(shadowed)
    if broken:
        state.append(f"{broken} broken line{'s' if broken > 1 else ''}")
    return state


def make_ref(path: Path, *, archived: bool = False, shadowed: Path | None = None,
             index: Any = None, count: bool = True) -> SessionRef:
    """A listing entry for one rollout; a broken file gives a ref with ``error``, never an exception.

    ``listread.read`` parses only what the listing shows: line 1, the head's title and cwd, the 64 KB
    tail's cwd, and the lines holding the message marker (the count, by a byte search of the whole
    file). ``index`` (a ``ScanIndex``) answers for an unchanged file and resumes the count of one that
    only grew. ``count=False`` (``search``, which shows no counts): no count past the head read,
    ``messages`` None then, nothing stored in the index (a ``.zst`` is not decompressed to its end)."""
    from histmig.core.model import SessionRef
    from histmig.tools.codex import listread
    try:
        st = path.stat()
        key = os.fspath(path)
        ctx = _index_ctx(archived, shadowed)
        fields = index.hit(key, st, ctx, _FIELDS) if index is not None else None
        if fields is not None:
            return _cached_ref(path, st, fields, archived)
        grown = index.grown(key, st, ctx) if index is not None and count and not is_zst(path) else None
        listed = listread.read(path, st.st_size, count=count, grown=grown)
    except (HistmigError, OSError) as e:
        names = parse_name(path.name)
        return SessionRef(format=NAME, id=names[1] if names else path.stem, path=path, archived=archived,
                          compressed=is_zst(path), error=str(e), state=["unreadable"])
    if listed is None:
        return SessionRef(format=NAME, id=(parse_name(path.name) or ("", path.stem))[1], path=path,
                          archived=archived, compressed=is_zst(path), error="empty file", size=st.st_size)
    ref = _ref_of(path, listed, archived, shadowed)
    ref.size, ref.updated = st.st_size, st.st_mtime
    if index is not None and count and ref.error is None:
        keep = listed.resume if not ref.compressed else None
        index.store(key, st, _ref_fields(ref), ctx=ctx, resume=keep, first=listed.head if keep else None)
    return ref


# Stored with every index record of a rollout: a record written under an older listing rule (the
# head parsed whole, its broken lines counted) is read again, not trusted.
LISTING_RULE = 2


def _index_ctx(archived: bool, shadowed: Path | None) -> list:
    """What an index record of a rollout is stored and looked up with, beside the file's stat."""
    return [archived, None if shadowed is None else os.fspath(shadowed), LISTING_RULE]


def _ref_of(path: Path, listed: Any, archived: bool, shadowed: Path | None) -> SessionRef:
    """The ref of a file from what ``listread.read`` found in it."""
    from histmig.core.model import SessionRef
    names = parse_name(path.name)
    ref = SessionRef(format=NAME, id=names[1] if names else path.stem, path=path,
                     archived=archived, compressed=is_zst(path))
    meta = listed.meta
    if meta is not None:
        ref.id = meta.get("id") if isinstance(meta.get("id"), str) else ref.id
        ref.provider = meta.get("model_provider") if isinstance(meta.get("model_provider"), str) else None
        ref.created = meta.get("timestamp")
        ref.extra = _ref_extra(meta, names)
    else:
        ref.error = listed.meta_error
    ref.cwd, ref.title, ref.messages = listed.cwd, listed.title, listed.messages
    ref.state = _states(ref, listed.first, listed.broken, shadowed, meta)
    return ref


_FIELDS = ("id", "cwd", "provider", "created", "title", "messages", "state", "error", "extra")


def _ref_fields(ref: SessionRef) -> dict:
    from histmig.core.scanindex import fields_of
    return fields_of(ref, _FIELDS)


def _cached_ref(path: Path, st, fields: dict, archived: bool) -> SessionRef:
    from histmig.core.model import stored_ref
    return stored_ref(fields, format=NAME, path=path, archived=archived, compressed=is_zst(path),
                      size=st.st_size, updated=st.st_mtime)


# ---- reading a whole session ---------------------------------------------------------------

def _parts(t: str | None, obj: Any) -> tuple[str, str | None, list]:
    """``(kind, role, parts)`` of one line."""
    Reasoning, Text, ToolResult = _M.Reasoning, _M.Text, _M.ToolResult
    item = payload(obj) if t == "response_item" else (obj if t and t.startswith("legacy:") else None)
    if t == "event_msg":
        return "event", None, []
    if t == "compacted":
        msg = payload(obj).get("message")
        return "summary", None, [Text(msg)] if isinstance(msg, str) and msg else []
    if not isinstance(item, dict):
        return "other", None, []
    it = item.get("type")
    if it == "message":
        role = item.get("role") if item.get("role") in ("user", "assistant", "developer", "system") else None
        text = message_text(item)
        injected = role in ("developer", "system") or (role == "user" and is_injected(text))
        return "message", role, [Text(text, injected=injected)]
    if it == "reasoning":
        summary = "\n".join(s.get("text", "") for s in item.get("summary") or [] if isinstance(s, dict))
        content = item.get("content")
        text = "\n".join(c.get("text", "") for c in content if isinstance(c, dict)) if isinstance(content, list) else ""
        return "reasoning", "assistant", [Reasoning(summary=summary, text=text, encrypted=item.get("encrypted_content"))]
    if it in TOOL_CALLS:
        return "tool_call", "assistant", [_tool_call(item)]
    if it in TOOL_RESULTS:
        return "tool_result", "tool", [ToolResult(call_id=str(item.get("call_id") or ""), output=item.get("output"))]
    return "other", None, []


def _tool_call(item: dict) -> ToolCall:
    ToolCall = _M.ToolCall
    it = item.get("type")
    if it == "function_call":
        args: Any = item.get("arguments")
        if isinstance(args, str):
            try:
                args = orjson.loads(args)
            except orjson.JSONDecodeError:
                pass
        return ToolCall(str(item.get("call_id") or ""), str(item.get("name") or ""), args, item.get("namespace"))
    if it == "custom_tool_call":
        return ToolCall(str(item.get("call_id") or ""), str(item.get("name") or ""), item.get("input"),
                        item.get("namespace"))
    return ToolCall(str(item.get("call_id") or item.get("id") or ""), it, item.get("action"))


class _Model:
    """``histmig.core.model``'s classes, imported on the first record (not with this module: see
    the note on its imports) and then one attribute away, not one import statement per record."""

    def __getattr__(self, name: str) -> Any:
        from histmig.core import model
        for cls in ("Record", "Reasoning", "Text", "ToolCall", "ToolResult"):
            setattr(self, cls, getattr(model, cls))
        return getattr(model, name)


_M = _Model()


def _record(ln: Line) -> Record:
    if ln.raw is None or ln.opaque or ln.blank:
        reason = ln.error if not ln.blank else "blank line"
        return _M.Record(raw=ln.raw, line=ln.number, opaque_reason=reason,
                         extra={"offset": ln.offset, "length": ln.length})
    return _record_of(ln.obj, ln.raw, ln.number, ln.offset)


def _record_of(obj: Any, raw: bytes, number: int, offset: int) -> Record:
    """The Record of a line that parsed (``obj``), its exact bytes ``raw`` at ``offset``."""
    t = line_type(obj)
    kind, role, parts = _parts(t, obj)
    sub = payload(obj).get("type") if t in ("response_item", "event_msg") else None
    item = payload(obj) if t == "response_item" else {}
    return _M.Record(id=item.get("id") if isinstance(item.get("id"), str) else None, kind=kind, role=role,
                     timestamp=obj.get("timestamp") if isinstance(obj, dict) else None, parts=parts,
                     raw=raw, line=number, source_type=f"{t}/{sub}" if sub else t,
                     extra={"offset": offset, "envelope": obj})


def _whole_records(data: bytes) -> Iterator[Record]:
    """The Records of a file read whole: a file whose every line is the compact encoding of its
    value (what Codex writes) is parsed in one ``orjson`` call (``jsonl.canonical_values``) and
    split with ``bytes.find``, with the Records ``_record`` gives its lines; any other file line by
    line (``iter_lines``)."""
    from histmig.jsonio.jsonl import canonical_values
    values = canonical_values(data)
    if values is None:
        yield from map(_record, iter_lines(io.BytesIO(data)))
        return
    find, offset, size = data.find, 0, len(data)
    for number, obj in enumerate(values, 1):
        end = find(b"\n", offset) + 1 or size
        yield _record_of(obj, data[offset:end], number, offset)
        offset = end


def records_from_lines(lines: Iterator[Line]) -> Iterator[Record]:
    """One Record per line (``histmig search`` parses only the lines that hold its phrase)."""
    return map(_record, lines)


def read(path_or_ref: Any) -> Session:
    """The whole session: one Record per line, every line kept (opaque ones too)."""
    from histmig.core.model import Session, SessionRef
    path = Path(path_or_ref.path if isinstance(path_or_ref, SessionRef) else path_or_ref)
    names = parse_name(path.name)
    session = Session(id=names[1] if names else path.stem, format=NAME, path=path)
    _describe(session, path, map(_record, read_lines(path)), session.records)
    return session


# A plain rollout up to this size is read once and its records kept (a few MB of objects at most);
# a larger one streams, its records read again from the file on each pass.
SMALL_FILE = 1 << 20


def stream(path_or_ref: Any) -> Session:
    """:func:`read` with ``records`` read again from the file on each iteration, one at a time
    (bounded memory for ``show`` and ``convert``); a line over the record limit is refused. A file
    of at most ``SMALL_FILE`` bytes is read once instead (convert passes over the records twice, and
    parsing each line again cost more than the rest of a small session's conversion)."""
    from histmig.jsonio.jsonl import record_lines
    from histmig.core.model import RecordStream, Session, SessionRef
    path = path_or_ref.path if isinstance(path_or_ref, SessionRef) else path_or_ref
    path = path if isinstance(path, Path) else Path(path)
    names = parse_name(path.name)
    sid = names[1] if names else path.stem
    small = None if is_zst(path) else _small(path)
    if small is not None:
        session = Session(id=sid, format=NAME, path=path)
        _describe(session, path, _whole_records(small[0]), session.records, small[1])
        return session
    session = Session(id=sid, format=NAME, path=path, records=RecordStream(lambda: map(_record, record_lines(path))))
    _describe(session, path, record_lines(path), None)
    return session


def _small(path: Path) -> tuple[bytes, float] | None:
    """The file's bytes and mtime when it holds at most ``SMALL_FILE`` (read with one bounded read,
    so a file growing meanwhile never costs more memory), else None."""
    fd = open_regular_fd(path)
    try:
        st = os.fstat(fd)
        if st.st_size > SMALL_FILE:
            return None
        parts, got = [], 0
        while got <= SMALL_FILE and (chunk := os.read(fd, SMALL_FILE + 1 - got)):
            parts.append(chunk)
            got += len(chunk)
    finally:
        os.close(fd)
    return (b"".join(parts), st.st_mtime) if got <= SMALL_FILE else None


def _may_matter(raw: bytes, want_title: bool) -> bool:
    """Whether a line after the session_meta can be a turn_context, or the first prompt. serde_json
    never escapes these ASCII words, so a line without them cannot be either."""
    return b"turn_context" in raw or (want_title and b"user" in raw)


def _describe(session: Session, path: Path, lines: Iterator[Any], keep: list | None,
              mtime: float | None = None) -> None:
    """One pass over the lines for the session's header fields; ``keep`` collects the records
    (``lines`` are then Records, else Lines); ``mtime``: the file's, when the reader has it."""
    meta_seen, turn_cwd, model = None, None, None
    for ln in lines:
        if keep is not None:
            rec = ln
            keep.append(rec)
            obj = rec.extra.get("envelope")
        elif ln.raw is None or (meta_seen is not None and not _may_matter(ln.raw, session.title is None)):
            continue       # streaming: parse only what can change a header field (3M lines in seconds)
        else:
            obj = None if ln.opaque or ln.blank else ln.obj
        t = line_type(obj)
        if meta_seen is None and t in ("session_meta", "legacy:session_meta"):
            meta_seen = meta_of(obj)
        elif t == "turn_context":
            turn_cwd = payload(obj).get("cwd") or turn_cwd
            model = payload(obj).get("model") or model
        if session.title is None and obj is not None:
            session.title = prompt_title(user_prompt(obj))
    if meta_seen:
        session.id = meta_seen.get("id") or session.id
        session.provider = meta_seen.get("model_provider")
        session.created = meta_seen.get("timestamp")
        session.parent_id = meta_seen.get("forked_from_id")
        session.meta = {"session_meta": meta_seen, "history_mode": meta_seen.get("history_mode") or "legacy"}
    session.cwd = turn_cwd or (meta_seen or {}).get("cwd")
    session.model = model
    session.updated = path.stat().st_mtime if mtime is None else mtime
    session.meta["compressed"] = is_zst(path)


def serialize(session: Session) -> bytes:
    """The decompressed file bytes: ``raw`` of every record; an over-limit line is copied from the
    source by offset; a record without ``raw`` (a changed one) is re-encoded compactly."""
    out = bytearray()
    for rec in session.records:
        if rec.raw is not None:
            out += rec.raw
        elif rec.opaque and rec.extra.get("length") is not None and session.path is not None:
            out += _copy_range(session.path, rec.extra["offset"], rec.extra["length"])
        elif "envelope" in rec.extra:
            out += orjson.dumps(rec.extra["envelope"]) + b"\n"
        else:
            raise HistmigInputError("record has neither raw bytes nor an envelope", line=rec.line)
    return bytes(out)


def _copy_range(path: Path, offset: int, length: int) -> bytes:
    with open_stream(path) as fh:
        remaining = offset
        while remaining:
            skipped = fh.read(min(remaining, 1 << 20))
            if not skipped:
                break
            remaining -= len(skipped)
        return fh.read(length)


# ---- what Codex's databases derive from a rollout ------------------------------------------

@value
class ThreadFacts:
    """The ``threads`` row values Codex would extract from a rollout, next to what its listing
    reads. Enveloped lines only: Codex does not extract pre-envelope rollouts."""
    id: str | None = None
    provider: Any = None         # the first session_meta's model_provider: what listing filters on
    row_provider: Any = None     # what a re-extraction stores: later same-id values win
    meta_cwd: Any = None         # what a re-extraction stores in threads.cwd
    resume_cwd: str | None = None   # the latest turn_context.cwd
    git_url: Any = None
    providers: set = field(default_factory=set)   # every provider string a re-extraction reads
    history_base: Any = None     # a fork's pointer into its parent rollout (thread id, end offset)

    def __init__(self, id: str | None = None, provider: Any = None, row_provider: Any = None, meta_cwd: Any = None,
                 resume_cwd: str | None = None, git_url: Any = None, providers: set = FACTORY,
                 history_base: Any = None) -> None:
        self.id, self.provider, self.row_provider, self.meta_cwd = id, provider, row_provider, meta_cwd
        self.resume_cwd, self.git_url, self.history_base = resume_cwd, git_url, history_base
        self.providers = set() if providers is FACTORY else providers

    @property
    def cwd(self) -> Any:
        """What ``resume --last`` matches: the latest turn_context cwd, else the stored one."""
        return self.resume_cwd or self.meta_cwd

    def note(self, obj: dict) -> None:
        kind, p = obj.get("type"), obj.get("payload")
        if not isinstance(p, dict):
            return
        if kind == "session_meta":
            self._session_meta(p)
        elif kind == "turn_context" and isinstance(p.get("cwd"), str):
            self.resume_cwd = p["cwd"]
        elif kind == "event_msg" and p.get("type") == "thread_settings_applied":
            self._settings(p.get("thread_settings"))

    def _session_meta(self, p: dict) -> None:
        if self.id is None:
            self.id = p.get("id") if isinstance(p.get("id"), str) else None
            self.provider = self.row_provider = p.get("model_provider")
            self.meta_cwd = p.get("cwd")
            self.history_base = p.get("history_base")
            self._seen(p.get("model_provider"))
            git = p.get("git") if isinstance(p.get("git"), dict) else {}
            self.git_url = git.get("repository_url")
        elif p.get("id") == self.id:   # a later same-id session_meta overrides (copied parents do not)
            self.row_provider = p.get("model_provider", self.row_provider)
            self.meta_cwd = p.get("cwd", self.meta_cwd)
            self._seen(p.get("model_provider"))

    def _seen(self, provider: Any) -> None:
        if isinstance(provider, str) and provider:
            self.providers.add(provider)

    def _settings(self, ts: Any) -> None:
        if not isinstance(ts, dict):
            return
        if isinstance(ts.get("model_provider_id"), str):
            self.row_provider = ts["model_provider_id"]
            self._seen(ts["model_provider_id"])
        if isinstance(ts.get("cwd"), str):
            self.meta_cwd = ts["cwd"]


class _Offsets:
    """Ascending byte offsets in an array: 8 bytes each, where a set of ints costs about 70, so a
    3-million-line rollout's line starts take 24 MB. ``in`` is a binary search."""

    def __init__(self) -> None:
        self._a = array("q")

    def add(self, offset: int) -> None:
        if not self._a or offset > self._a[-1]:
            self._a.append(offset)
        elif offset not in self:
            bisect.insort(self._a, offset)

    def __contains__(self, offset: object) -> bool:
        if not isinstance(offset, int) or not -2**63 <= offset < 2**63:
            return False
        i = bisect.bisect_left(self._a, offset)
        return i < len(self._a) and self._a[i] == offset


class _OrdinalSpans:
    """``ordinal -> (start, end)`` like a dict (a later line with the same ordinal wins), kept in
    three arrays while ordinals ascend, as Codex writes them; an out-of-order one goes to a dict."""

    def __init__(self) -> None:
        self._keys, self._starts, self._ends = array("q"), array("q"), array("q")
        self._other: dict[int, tuple[int, int]] = {}

    def __setitem__(self, ordinal: int, span: tuple[int, int]) -> None:
        if (not self._keys or ordinal > self._keys[-1]) and -2**63 <= ordinal < 2**63:
            self._keys.append(ordinal)
            self._starts.append(span[0])
            self._ends.append(span[1])
        else:
            self._other[ordinal] = span

    def get(self, ordinal: Any, default: Any = None) -> Any:
        if ordinal in self._other:
            return self._other[ordinal]
        if isinstance(ordinal, int) and not isinstance(ordinal, bool) and -2**63 <= ordinal < 2**63:
            i = bisect.bisect_left(self._keys, ordinal)
            if i < len(self._keys) and self._keys[i] == ordinal:
                return self._starts[i], self._ends[i]
        return default

    def __contains__(self, ordinal: object) -> bool:
        return self.get(ordinal) is not None

    def __getitem__(self, ordinal: int) -> tuple[int, int]:
        span = self.get(ordinal)
        if span is None:
            raise KeyError(ordinal)
        return span


@value
class LineSpans:
    """Where a rollout's lines lie. thread_history_1.sqlite stores byte offsets of the lines that
    carry an ``ordinal``, so checking them needs each ordinal's span and every line start (kept in
    arrays: doctor holds these for every rollout at once)."""
    by_ordinal: _OrdinalSpans = field(default_factory=_OrdinalSpans)   # ordinal -> (start, end)
    starts: _Offsets = field(default_factory=_Offsets)                 # every line start, and EOF

    def __init__(self, by_ordinal: _OrdinalSpans = FACTORY, starts: _Offsets = FACTORY) -> None:
        self.by_ordinal = _OrdinalSpans() if by_ordinal is FACTORY else by_ordinal
        self.starts = _Offsets() if starts is FACTORY else starts

    def note(self, line: Line) -> None:
        self.starts.add(line.offset)
        if b'"ordinal"' not in (line.raw or b""):
            return          # serde_json writes the key as is: a line without it has no ordinal
        obj = line.obj
        if isinstance(obj, dict) and isinstance(obj.get("ordinal"), int):
            self.by_ordinal[obj["ordinal"]] = (line.offset, line.offset + (line.length or 0))


def scan_thread(path: Path) -> tuple[ThreadFacts, LineSpans]:
    """Every line of a rollout once, for the checks of its database rows; raises like ``read``."""
    facts, spans, end = ThreadFacts(), LineSpans(), 0
    for line in read_lines(path):
        spans.note(line)
        end = line.offset + (line.length or 0)
        raw = line.raw or b""   # parse only the line types ThreadFacts reads (serde_json never escapes them)
        if (b"session_meta" in raw or b"turn_context" in raw or b"thread_settings_applied" in raw) \
                and isinstance(line.obj, dict):
            facts.note(line.obj)
    spans.starts.add(end)
    return facts, spans


def detect(path: str | os.PathLike) -> bool:
    """Cheap: a rollout file name, or a first line that is an enveloped Codex session_meta."""
    from histmig.jsonio.jsonl import parse_json
    p = Path(path)
    if parse_name(p.name):
        return True
    if not p.name.endswith((".jsonl", ".jsonl.zst")):
        return False
    try:
        obj, err = parse_json(first_line(p, limit=1 << 20).rstrip(b"\r\n"))
    except (HistmigError, OSError):
        return False
    return err is None and line_type(obj) == "session_meta"


def discover(homes: Any, *, archived: bool = True, index: Any = None) -> Iterator[SessionRef]:
    """Every rollout ``walk.rollouts`` lists (the one walker: scan sees what flip, move and doctor see);
    ``index``: a ``ScanIndex`` that answers for unchanged files (histmig.core.scanindex). Files are
    listed in batches on every CPU (histmig/toolkit/forklist.py: a batch under 32 MB runs here), in
    walk order."""
    from histmig.toolkit.forklist import list_files
    # the walk's strings as they are: an index hit's ref keeps its path as text (core/model.py)
    entries = walk.rollouts(homes.codex, archived=archived)
    yield from list_files(entries, index, index_hit, _entry_ref, path_of=lambda entry: entry[0])


def paths(homes: Any) -> Iterator[SessionRef]:
    """The rollouts ``discover`` lists, in its order, each a ``PathRef`` of its walk entry alone:
    nothing is read (``convert --all``/``--from`` reads each session once, whole, when it converts it)."""
    from histmig.core.model import PathRef
    for path, archived, shadowed in walk.rollouts(homes.codex):
        names = parse_name(os.path.basename(path))
        yield PathRef(format=NAME, id=names[1] if names else Path(path).stem, path=path, archived=archived,
                      compressed=is_zst(path), extra={} if shadowed is None else {"shadowed_zst": shadowed})


def listed(ref: SessionRef) -> SessionRef:
    """The ref ``discover`` gives the file of a ref from :func:`paths` (read again, cold)."""
    return _entry_ref((ref.path, ref.archived, ref.extra.get("shadowed_zst")), None)


def may_flag(session: Session) -> bool:
    """Whether :func:`make_ref` might flag the file of a session read whole (``stream``): it has no
    record, or its line 1 is not a session_meta as read strictly (the listing reads line 1 leniently,
    so it decides)."""
    first = next(iter(session.records), None)
    return first is None or meta_of(first.extra.get("envelope")) is None


def _entry_ref(entry: tuple, index: Any) -> SessionRef:
    path, archived, shadowed = entry
    return make_ref(Path(path), archived=archived, shadowed=None if shadowed is None else Path(shadowed), index=index)


def index_hit(entry: tuple, index: Any) -> SessionRef | None:
    """The ref of an unchanged file from the scan index (``make_ref``'s first step), or None."""
    found = _index_fields(entry, index)
    return None if found is None else _cached_ref(entry[0], found[0], found[1], entry[1])


def index_hit_shown(entry: tuple, index: Any) -> SessionRef | None:
    """``index_hit``'s look-up and check, the ref given only the stored fields a search shows or checks
    (``cwd``, ``title``, ``error``): filling all nine of every ref (lists and dicts copied) cost more
    than the look-up, before the search's fork (docs/search.md, "How it is fast")."""
    found = _index_fields(entry, index)
    if found is None:
        return None
    from histmig.core.model import SessionRef
    (st, fields), (path, archived, _shadowed) = found, entry
    return SessionRef(format=NAME, id=fields["id"], path=path, cwd=fields["cwd"], title=fields["title"],
                      error=fields["error"], archived=archived, compressed=is_zst(path),
                      size=st.st_size, updated=st.st_mtime)


def _index_fields(entry: tuple, index: Any) -> tuple[os.stat_result, dict] | None:
    """The file's stat and its stored fields when the scan index holds it unchanged, or None."""
    path, archived, shadowed = entry
    try:
        st = os.stat(path)
    except OSError:
        return None
    fields = index.hit(os.fspath(path), st, _index_ctx(archived, shadowed), _FIELDS)
    return None if fields is None else (st, fields)


def usage_of(rec: Record) -> dict | None:
    """The token usage of a ``token_count`` event (``last_token_usage``), for convert's usage items."""
    env = rec.extra.get("envelope") if isinstance(rec.extra, dict) else None
    payload = env.get("payload") if isinstance(env, dict) else None
    if isinstance(payload, dict) and payload.get("type") == "token_count":
        info = payload.get("info")
        if isinstance(info, dict) and isinstance(info.get("last_token_usage"), dict):
            return info["last_token_usage"]
    return None


ADAPTER = FunctionAdapter(NAME, frozenset({"text", "reasoning", "tool_call", "tool_result"}),
                          detect=detect, discover=discover, read=read, stream=stream, serialize=serialize,
                          usage_of=usage_of, paths=paths, listed=listed, may_flag=may_flag)
# a Codex session's model names a model a converted session can record (convert's Target.model)
ADAPTER.lends_model = True
# discover takes ``index=`` (the scan index, histmig.core.scanindex)
ADAPTER.indexed = True
