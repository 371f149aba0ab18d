"""Gemini CLI session records into the common model (docs/specs/gemini.md §2).

A ``.jsonl`` session is an append-only log with a small patch language: a metadata line
(``sessionId``, ``startTime``, ``lastUpdated``, ``kind``), message records keyed by ``id`` (a later
record with the same id replaces the earlier one in place: a Map, last wins), ``{"$set": {...}}`` (merges
metadata; ``messages`` replaces the whole list) and ``{"$rewindTo": id}`` (truncates from that id).

Every line becomes one Record that keeps its bytes (``raw``); the conversation the client would
rebuild becomes Records of source type ``resolved`` after them, with empty ``raw`` (they add no
bytes to the native round trip).
"""
from __future__ import annotations

from dataclasses import field
from typing import Any, Callable, Iterable, Iterator

from histmig.core.model import Attachment, Opaque, Reasoning, Record, Text, ToolCall, ToolResult
from histmig.core.valueclass import FACTORY, value
from histmig.jsonio.jsonl import Line
from histmig.tools.claude_family.blocks import unparsed_record

RESOLVED = "resolved"
CONTEXT_TAGS = ("<session_context>", "<hook_context>")     # injected: Gemini ignores them for listing (§3)
META_KEYS = ("sessionId", "startTime")


# ---- one message -> records -------------------------------------------------------------------

def as_list(value: Any) -> list:
    """``value`` when it is a list, else []: a broken file may hold ``"thoughts": 7``."""
    return value if isinstance(value, list) else []


def part_of(p: Any) -> Any:
    if not isinstance(p, dict):
        return Text(p) if isinstance(p, str) else Opaque(p, "not a part")
    if "functionCall" in p and isinstance(p["functionCall"], dict):
        fc = p["functionCall"]
        return ToolCall(str(fc.get("id") or ""), str(fc.get("name") or ""), fc.get("args") or {})
    if "functionResponse" in p and isinstance(p["functionResponse"], dict):
        fr = p["functionResponse"]
        return ToolResult(str(fr.get("id") or ""), response_output(fr.get("response")), structured=fr)
    if "inlineData" in p and isinstance(p["inlineData"], dict):
        return Attachment(p["inlineData"].get("mimeType"), p["inlineData"])
    if isinstance(p.get("text"), str):
        if p.get("thought"):
            return Reasoning(text=p["text"], signature=p.get("thoughtSignature"))
        return Text(p["text"], injected=p["text"].lstrip().startswith(CONTEXT_TAGS))
    return Opaque(p, "gemini part")


def response_output(response: Any) -> Any:
    """A functionResponse's ``response`` as result text: ``output`` (or ``error``) when that is all, else JSON."""
    if isinstance(response, dict):
        for key in ("output", "error"):
            if isinstance(response.get(key), str) and set(response) <= {"output", "error"}:
                return response[key]
    import orjson
    return orjson.dumps(response).decode() if response is not None else ""


def content_parts(content: Any) -> list[Any]:
    if isinstance(content, str):
        return [Text(content)] if content else []
    if isinstance(content, list):
        return [part_of(p) for p in content]
    return []


def message_records(msg: dict, line: int | None, answered: set[str]) -> list[Record]:
    """One message as Records: a ``user`` or ``gemini`` message; a ``gemini`` message's ``toolCalls`` give
    ToolCall parts and a second record with their results. ``answered`` collects call ids whose
    result was given, so a later ``user`` record repeating it (the client writes both) is no message."""
    kind = msg.get("type")
    ts = msg.get("timestamp") if isinstance(msg.get("timestamp"), str) else None
    mid = str(msg.get("id")) if msg.get("id") is not None else None
    extra = {k: v for k, v in msg.items() if k not in ("content", "thoughts", "toolCalls", "tokens")}
    if kind == "gemini":
        parts: list[Any] = [Reasoning(summary=str(t.get("subject") or ""), text=str(t.get("description") or ""))
                            for t in as_list(msg.get("thoughts")) if isinstance(t, dict)]
        parts += content_parts(msg.get("content"))
        results: list[Any] = []
        for call in as_list(msg.get("toolCalls")):
            if not isinstance(call, dict):
                continue
            cid = str(call.get("id") or "")
            parts.append(ToolCall(cid, str(call.get("name") or ""), call.get("args") or {}))
            for r in as_list(call.get("result")):
                res = part_of(r)
                if isinstance(res, ToolResult):
                    results.append(ToolResult(res.call_id or cid, res.output, call.get("status") == "error",
                                              res.structured))
                    answered.add(res.call_id or cid)
        tokens = msg.get("tokens") if isinstance(msg.get("tokens"), dict) else None
        out = [Record(id=mid, kind=_kind(parts), role="assistant", timestamp=ts, parts=parts,
                      usage=_usage(tokens), extra=extra, raw=b"", line=line, source_type=RESOLVED)]
        if results:
            out.append(Record(id=f"{mid}:results", kind="tool_result", role="tool", timestamp=ts, parts=results,
                              raw=b"", line=line, source_type=RESOLVED))
        return out
    parts = content_parts(msg.get("content"))
    if kind == "user":
        res_ids = {p.call_id for p in parts if isinstance(p, ToolResult)}
        if res_ids and res_ids <= answered and all(isinstance(p, ToolResult) for p in parts):
            return [Record(id=mid, kind="event", role=None, timestamp=ts, parts=parts, extra=extra, raw=b"",
                           line=line, source_type="repeated-function-response")]
        kind_ = "tool_result" if parts and all(isinstance(p, ToolResult) for p in parts) else _kind(parts)
        answered.update(res_ids)
        return [Record(id=mid, kind=kind_, role="tool" if kind_ == "tool_result" else "user", timestamp=ts,
                       parts=parts, extra=extra, raw=b"", line=line, source_type=RESOLVED)]
    return [Record(id=mid, kind="event", timestamp=ts, parts=parts, extra=extra, raw=b"", line=line,
                   source_type=str(kind) if kind else RESOLVED)]


def _kind(parts: list[Any]) -> str:
    if parts and all(isinstance(p, ToolCall) for p in parts):
        return "tool_call"
    if parts and all(isinstance(p, Reasoning) for p in parts):
        return "reasoning"
    return "message"


def _usage(tokens: dict | None) -> dict | None:
    """Gemini's ``tokens`` in the canonical shape flatten reads (``input_tokens`` uncached ...)."""
    if not tokens:
        return None
    def i(k: str) -> int:
        v = tokens.get(k)
        return v if isinstance(v, int) and v >= 0 else 0
    return {"input_tokens": max(i("input") - i("cached"), 0), "cache_read_input_tokens": i("cached"),
            "output_tokens": i("output") + i("thoughts"), "gemini_tokens": tokens}


# ---- the log -> the list the client rebuilds ----------------------------------------------------

SPILL_AT = 50_000
"""Messages of the list kept in memory (a few hundred bytes each: ~15 MB at most); past it the list
goes to an on-disk store (:class:`Spill`), so memory stays bounded whatever the line count."""


@value
class Resolved:
    """Where each message of the final list is, in order, and the merged metadata. Holds ids and
    numbers only, never message bodies: ``order`` (ids) and ``where`` (id -> its position in ``order``,
    line number, index inside a ``$set`` list or None, the line's offset and length, whether scan
    counts it) while the list is short; past :data:`SPILL_AT` messages both are empty and ``store``
    (a :class:`Spill`) holds them. Read it with :meth:`entries`."""

    order: list[str] = field(default_factory=list)
    where: dict[str, tuple[int, int, int | None, int, int, bool]] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)
    metas: int = 0          # metadata lines (a resumed session gets one more per resume)
    store: Any = None       # the list on disk (Spill) past SPILL_AT, else None

    def __init__(self, order: list[str] = FACTORY,
                 where: dict[str, tuple[int, int, int | None, int, int, bool]] = FACTORY,
                 meta: dict[str, Any] = FACTORY, metas: int = 0, store: Any = None) -> None:
        self.order = [] if order is FACTORY else order
        self.where = {} if where is FACTORY else where
        self.meta = {} if meta is FACTORY else meta
        self.metas = metas
        self.store = store

    def entries(self) -> Iterator[tuple[str, int, int | None, int, int, bool]]:
        """``(id, line number, index or None, offset, length, counted)`` of each message, in order."""
        if self.store is not None:
            yield from self.store.entries()
            return
        where = self.where
        for mid in self.order:
            yield (mid, *where[mid][1:])

    def counted(self) -> int:
        """How many messages of the list scan counts (:func:`counts`)."""
        if self.store is not None:
            return self.store.counted()
        return sum(1 for mid in self.order if self.where[mid][5])


def counts(msg: dict) -> bool:
    """Whether scan counts a message: a model message, or a user message with something not injected
    (tool results alone are part of the call they answer)."""
    if msg.get("type") == "gemini":
        return True
    if msg.get("type") != "user":
        return False
    content = msg.get("content")
    if isinstance(content, str):
        return bool(content.strip()) and not content.lstrip().startswith(CONTEXT_TAGS)
    return any(isinstance(p, dict) and ("inlineData" in p or (isinstance(p.get("text"), str) and p["text"].strip()
               and not p["text"].lstrip().startswith(CONTEXT_TAGS))) for p in as_list(content))


def line_kind(obj: dict) -> str:
    if "$set" in obj:
        return "$set"
    if "$rewindTo" in obj:
        return "$rewindTo"
    if "id" in obj:
        return "message"
    return "meta"


def resolve(lines: Iterable[Line], spill_at: int | None = None) -> Resolved:
    """Replay the log (§2): Map last-wins by id keeping first position, ``$set`` merge/replace,
    ``$rewindTo`` truncation. Broken lines are skipped, as the client skips them.

    The list only grows at its end and a rewind cuts a tail, so each message keeps its position
    from its first record until a rewind or a ``$set`` list drops it: a rewind is a lookup and the
    cut, never a search. Past ``spill_at`` (:data:`SPILL_AT`) messages the list moves to disk."""
    r = Resolved()
    listed = _Listed(SPILL_AT if spill_at is None else spill_at)
    for line in lines:
        obj = None if line.blank or line.oversize else line.obj
        if not isinstance(obj, dict):
            continue
        kind = line_kind(obj)
        if kind == "message":
            listed.define(str(obj["id"]), line.number, None, line.offset, line.length or 0, counts(obj))
        elif kind == "$set" and isinstance(obj["$set"], dict):
            sets = obj["$set"]
            r.meta.update({k: v for k, v in sets.items() if k != "messages"})
            if isinstance(sets.get("messages"), list):
                listed.reset()
                offset, length = line.offset, line.length or 0
                for i, m in enumerate(sets["messages"]):
                    if isinstance(m, dict) and "id" in m:
                        listed.define(str(m["id"]), line.number, i, offset, length, counts(m))
        elif kind == "$rewindTo":
            listed.rewind(str(obj["$rewindTo"]))
        else:
            r.metas += 1
            r.meta.update(obj)
    if listed.store is not None:
        listed.store.flush()
    r.order, r.where, r.store = listed.order, listed.where, listed.store
    return r


class _Listed:
    """:func:`resolve`'s list as it goes: ``order`` and ``where`` (the layout of :class:`Resolved`) in
    memory, moved to a :class:`Spill` once it holds more than ``spill_at`` messages."""

    def __init__(self, spill_at: int) -> None:
        self.spill_at = spill_at
        self.order: list[str] = []
        self.where: dict[str, tuple[int, int, int | None, int, int, bool]] = {}
        self.store: Spill | None = None

    def define(self, mid: str, line: int, index: int | None, offset: int, length: int, counted: bool) -> None:
        """A message's record: a new id goes to the end of the list, a known one keeps its place."""
        if self.store is not None:
            self.store.define(mid, line, index, offset, length, counted)
            return
        old = self.where.get(mid)
        if old is not None:
            self.where[mid] = (old[0], line, index, offset, length, counted)
            return
        self.where[mid] = (len(self.order), line, index, offset, length, counted)
        self.order.append(mid)
        if len(self.order) > self.spill_at:
            self.store = Spill(self.order, self.where)
            self.order, self.where = [], {}

    def rewind(self, target: str) -> None:
        """The list cut from ``target`` on (nothing when it is not in the list)."""
        if self.store is not None:
            self.store.rewind(target)
            return
        hit = self.where.get(target)
        if hit is not None:
            for mid in self.order[hit[0]:]:
                del self.where[mid]
            del self.order[hit[0]:]

    def reset(self) -> None:
        """A ``$set`` of the whole list: empty again, and back in memory until it grows past the bound."""
        if self.store is not None:
            self.store.close()
            self.store = None
        self.order, self.where = [], {}


class Spill:
    """The message list of :func:`resolve` on disk, in a private temporary database
    (histmig/core/tempdb.py). A row per message: ``pos`` (a number that only grows, so the list's order
    is the rows' order and a rewind deletes the rows from its target's ``pos`` on), the id (unique),
    where its record is, whether scan counts it. Records are written in batches."""

    WHAT = "a long Gemini session's message list"
    BATCH = 4096
    UPSERT = ("INSERT INTO m VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET line = excluded.line, "
              "idx = excluded.idx, off = excluded.off, len = excluded.len, counted = excluded.counted")

    def __init__(self, order: list[str], where: dict[str, tuple[int, int, int | None, int, int, bool]]) -> None:
        from histmig.core import tempdb
        self.error = tempdb.Error
        self.con = tempdb.connect(self.WHAT)
        try:
            self.con.execute("CREATE TABLE m (pos INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, line INTEGER, "
                             "idx INTEGER, off INTEGER, len INTEGER, counted INTEGER)")
            self.con.execute("BEGIN")
            self.con.executemany("INSERT INTO m VALUES (?, ?, ?, ?, ?, ?, ?)",
                                 ((i, mid, *where[mid][1:]) for i, mid in enumerate(order)))
        except self.error as e:
            raise self._failed(e) from e
        self.next = len(order)
        self.pending: list[tuple] = []

    def define(self, mid: str, line: int, index: int | None, offset: int, length: int, counted: bool) -> None:
        """A message's record: a new id goes to the end of the list, a known one keeps its place."""
        self.pending.append((self.next, mid, line, index, offset, length, counted))
        self.next += 1
        if len(self.pending) >= self.BATCH:
            self.flush()

    def flush(self) -> None:
        if self.pending:
            try:
                self.con.executemany(self.UPSERT, self.pending)
            except self.error as e:
                raise self._failed(e) from e
            self.pending = []

    def rewind(self, target: str) -> None:
        self.flush()
        try:
            hit = self.con.execute("SELECT pos FROM m WHERE id = ?", (target,)).fetchone()
            if hit is not None:
                self.con.execute("DELETE FROM m WHERE pos >= ?", hit)
        except self.error as e:
            raise self._failed(e) from e

    def entries(self) -> Iterator[tuple[str, int, int | None, int, int, bool]]:
        self.flush()
        try:
            for mid, line, index, offset, length, counted in self.con.execute(
                    "SELECT id, line, idx, off, len, counted FROM m ORDER BY pos"):
                yield mid, line, index, offset, length, bool(counted)
        except self.error as e:
            raise self._failed(e) from e

    def counted(self) -> int:
        self.flush()
        return self.con.execute("SELECT count(*) FROM m WHERE counted").fetchone()[0]

    def close(self) -> None:
        self.pending = []
        self.con.close()

    def _failed(self, e: Exception) -> Exception:
        from histmig.core import tempdb
        return tempdb.failed(self.WHAT, e)


def line_record(line: Line) -> Record:
    """A line as bytes: metadata and patches are events; a message line is the message as written
    then (the resolved list says which version the client uses)."""
    rec = unparsed_record(line)
    if rec is not None:
        return rec
    obj = line.obj
    kind = line_kind(obj)
    extra = obj if kind == "meta" else {}
    return Record(id=str(obj["id"]) if kind == "message" else None, kind="event", raw=line.raw,
                  line=line.number, extra=extra, source_type=kind,
                  timestamp=obj.get("timestamp") if isinstance(obj.get("timestamp"), str) else None)


def messages(resolved: Resolved, fetch: Callable[[int, int, int], Any]) -> Iterator[Record]:
    """The final list as Records, each read from the line that defines it (``fetch(number, offset,
    length) -> obj``)."""
    answered: set[str] = set()
    for _mid, number, index, offset, length, _counted in resolved.entries():
        obj = fetch(number, offset, length)
        msg = obj["$set"]["messages"][index] if index is not None else obj
        yield from message_records(msg, number, answered)
