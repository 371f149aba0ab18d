"""The common record model every adapter reads into and writes from.

Session → Records → Parts. A Record keeps the exact source bytes (``raw``) of the line(s) it came
from and the fields the model does not name (``extra``, in source order). Writers emit ``raw``
untouched whenever it is set; ``record.evolve(...)`` returns a changed copy with ``raw`` cleared.
That single rule is how an edit of one field leaves every other byte identical.
"""
from __future__ import annotations

import dataclasses
import os
from dataclasses import field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Literal

from histmig.core.valueclass import FACTORY, value

Kind = Literal["message", "tool_call", "tool_result", "reasoning", "summary", "event", "other"]
Role = Literal["user", "assistant", "system", "developer", "tool", None]


# ---- parts -----------------------------------------------------------------------------------

@value(frozen=True)
class Text:
    """Visible text of a message."""

    text: str
    injected: bool = False   # context the client injected (environment_context, AGENTS.md, reminders)
    kind: str = "text"

    def __init__(self, text: str, injected: bool = False, kind: str = "text") -> None:
        self.__dict__.update(text=text, injected=injected, kind=kind)


@value(frozen=True)
class Reasoning:
    """Model reasoning. ``summary`` is readable text; ``encrypted`` (Codex) and ``signature``
    (Claude thinking) bind it to the provider that issued it and cannot be carried elsewhere."""

    summary: str = ""
    text: str = ""
    encrypted: str | None = None
    signature: str | None = None
    redacted: bool = False
    kind: str = "reasoning"

    def __init__(self, summary: str = "", text: str = "", encrypted: str | None = None, signature: str | None = None,
                 redacted: bool = False, kind: str = "reasoning") -> None:
        self.__dict__.update(summary=summary, text=text, encrypted=encrypted, signature=signature, redacted=redacted,
                             kind=kind)


@value(frozen=True)
class ToolCall:
    """A tool invocation. ``arguments`` is a dict for JSON tools, a str for free-form tools
    (Codex ``custom_tool_call`` such as apply_patch)."""

    call_id: str
    name: str
    arguments: Any
    namespace: str | None = None
    kind: str = "tool_call"

    def __init__(self, call_id: str, name: str, arguments: Any, namespace: str | None = None,
                 kind: str = "tool_call") -> None:
        self.__dict__.update(call_id=call_id, name=name, arguments=arguments, namespace=namespace, kind=kind)


@value(frozen=True)
class ToolResult:
    """What a tool call returned."""

    call_id: str
    output: Any                # str, or a list of content blocks
    is_error: bool = False
    structured: Any = None     # Claude ``toolUseResult`` and similar
    kind: str = "tool_result"

    def __init__(self, call_id: str, output: Any, is_error: bool = False, structured: Any = None,
                 kind: str = "tool_result") -> None:
        self.__dict__.update(call_id=call_id, output=output, is_error=is_error, structured=structured, kind=kind)


@value(frozen=True)
class Attachment:
    """An image or file a message carried."""

    media_type: str | None = None
    data: Any = None           # url, base64, or the source block
    kind: str = "attachment"

    def __init__(self, media_type: str | None = None, data: Any = None, kind: str = "attachment") -> None:
        self.__dict__.update(media_type=media_type, data=data, kind=kind)


@value(frozen=True)
class Opaque:
    """Something the model does not understand, kept for the native dump."""

    data: Any = None
    note: str = ""
    kind: str = "opaque"

    def __init__(self, data: Any = None, note: str = "", kind: str = "opaque") -> None:
        self.__dict__.update(data=data, note=note, kind=kind)


Part = Text | Reasoning | ToolCall | ToolResult | Attachment | Opaque


# ---- records and sessions --------------------------------------------------------------------

@value
class Record:
    """One logical record. For Claude Code, adjacent assistant lines that share ``message.id``
    form one Record whose ``raw`` is the concatenation of those lines (``lines`` says how many)."""

    id: str | None = None
    parent_id: str | None = None
    kind: Kind = "other"
    role: Role = None
    timestamp: str | None = None
    parts: list[Part] = field(default_factory=list)
    usage: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    raw: bytes | None = None
    line: int | None = None          # 1-based number of the first source line
    lines: int = 1
    source_type: str | None = None   # the format's own type tag (e.g. "response_item/function_call")
    opaque_reason: str | None = None  # set when the line did not parse

    def __init__(self, id: str | None = None, parent_id: str | None = None, kind: Kind = "other", role: Role = None,
                 timestamp: str | None = None, parts: list[Part] = FACTORY, usage: dict[str, Any] | None = None,
                 extra: dict[str, Any] = FACTORY, raw: bytes | None = None, line: int | None = None, lines: int = 1,
                 source_type: str | None = None, opaque_reason: str | None = None) -> None:
        self.id = id
        self.parent_id = parent_id
        self.kind = kind
        self.role = role
        self.timestamp = timestamp
        self.parts = [] if parts is FACTORY else parts
        self.usage = usage
        self.extra = {} if extra is FACTORY else extra
        self.raw = raw
        self.line = line
        self.lines = lines
        self.source_type = source_type
        self.opaque_reason = opaque_reason

    def evolve(self, **changes: Any) -> "Record":
        """A changed copy; ``raw`` is cleared so writers re-encode it."""
        changes.setdefault("raw", None)
        return dataclasses.replace(self, **changes)

    @property
    def opaque(self) -> bool:
        return self.opaque_reason is not None

    def text(self, *, include_injected: bool = False) -> str:
        return "\n".join(p.text for p in self.parts
                         if isinstance(p, Text) and (include_injected or not p.injected))


class RecordStream:
    """A session's records read again from its file on every iteration, one at a time.

    What ``adapter.stream()`` puts in ``Session.records``, so ``show`` and ``convert`` hold one
    record (one line, or one assistant turn's lines) at a time, never the file: memory stays bounded
    by the record limit (``jsonl.RECORD_MAX_BYTES``) whatever the file's size or line count."""

    def __init__(self, produce: Callable[[], Iterable["Record"]]):
        self._produce = produce

    def __iter__(self) -> Iterator["Record"]:
        return iter(self._produce())

    def __len__(self) -> int:
        return sum(1 for _ in self)


@value
class Session:
    """A session read whole: its listing fields and its records."""

    id: str
    format: str
    path: Path | None = None
    cwd: str | None = None
    created: str | None = None
    updated: float | None = None          # file mtime, seconds
    title: str | None = None
    provider: str | None = None
    model: str | None = None
    parent_id: str | None = None
    records: list[Record] | RecordStream = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)
    subagents: list["Session"] = field(default_factory=list)
    warnings: list[Any] = field(default_factory=list)

    def __init__(self, id: str, format: str, path: Path | None = None, cwd: str | None = None,
                 created: str | None = None, updated: float | None = None, title: str | None = None,
                 provider: str | None = None, model: str | None = None, parent_id: str | None = None,
                 records: list[Record] | RecordStream = FACTORY, meta: dict[str, Any] = FACTORY,
                 subagents: list["Session"] = FACTORY, warnings: list[Any] = FACTORY) -> None:
        self.id = id
        self.format = format
        self.path = path
        self.cwd = cwd
        self.created = created
        self.updated = updated
        self.title = title
        self.provider = provider
        self.model = model
        self.parent_id = parent_id
        self.records = [] if records is FACTORY else records
        self.meta = {} if meta is FACTORY else meta
        self.subagents = [] if subagents is FACTORY else subagents
        self.warnings = [] if warnings is FACTORY else warnings

    @property
    def opaque_count(self) -> int:
        return sum(1 for r in self.records if r.opaque)

    def messages(self) -> Iterator[Record]:
        """Records that belong to the conversation (not events, not opaque lines)."""
        for r in self.records:
            if r.kind in ("message", "tool_call", "tool_result", "reasoning", "summary") and not r.opaque:
                yield r


@value
class SessionRef:
    """What ``discover`` yields: enough to list a session without reading it whole."""

    format: str
    id: str
    path: Path
    cwd: str | None = None
    provider: str | None = None
    updated: float | None = None
    created: str | None = None
    title: str | None = None
    messages: int | None = None
    size: int = 0
    state: list[str] = field(default_factory=list)   # "ok", "archived", "compressed", "shadowed", "N broken lines", ...
    error: str | None = None
    archived: bool = False
    compressed: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    def __init__(self, format: str, id: str, path: Path, cwd: str | None = None, provider: str | None = None,
                 updated: float | None = None, created: str | None = None, title: str | None = None,
                 messages: int | None = None, size: int = 0, state: list[str] = FACTORY, error: str | None = None,
                 archived: bool = False, compressed: bool = False, extra: dict[str, Any] = FACTORY) -> None:
        self.format = format
        self.id = id
        self.path = path
        self.cwd = cwd
        self.provider = provider
        self.updated = updated
        self.created = created
        self.title = title
        self.messages = messages
        self.size = size
        self.state = [] if state is FACTORY else state
        self.error = error
        self.archived = archived
        self.compressed = compressed
        self.extra = {} if extra is FACTORY else extra

    def to_dict(self) -> dict[str, Any]:
        # every field is in __dict__ (``title`` and ``path`` too, behind their properties): one look-up
        # each, no property call (scan --json: every row)
        own = self.__dict__
        d = {"tool": own["format"], "id": own["id"], "path": os.fspath(own["path"]), "cwd": own["cwd"],
             "provider": own["provider"], "updated": own["updated"], "created": own["created"],
             "title": own["title"], "messages": own["messages"], "size": own["size"], "state": self.state_text(),
             "archived": own["archived"], "compressed": own["compressed"], "error": own["error"]}
        extra = own["extra"]
        if extra:
            d["extra"] = extra
        return d

    def state_text(self) -> str:
        return ", ".join(self.state) if self.state else ("error" if self.error else "ok")


# A listing's title is a label: a first prompt can be megabytes (a pasted file), and a listing holds every
# session's ref, the scan index stores the title and ``scan`` renders it (docs/scan-show.md). So a ref keeps
# its first TITLE_MAX characters; ``show`` has the session's own. A property on this one field (set after
# the class is made, so ``dataclasses.fields`` still sees a plain field; the value stays in the instance's
# ``__dict__`` under its own name, where the scan index fills it: core/scanindex.py) costs the other fields
# nothing.
TITLE_MAX = 200


def _get_title(ref: SessionRef) -> str | None:
    return ref.__dict__.get("title")


def _set_title(ref: SessionRef, title: str | None) -> None:
    ref.__dict__["title"] = title[:TITLE_MAX] if title.__class__ is str and len(title) > TITLE_MAX else title


SessionRef.title = property(_get_title, _set_title)  # type: ignore[assignment]


# A ref's ``path`` may be given as the walk's string: a warm listing of thousands of files reads each
# ref's path only as text (its JSON, the index's key), and a ``Path`` made per file was a tenth of
# its time (docs/scan-show.md, "The scan index"). Asked for, the path is a ``Path`` (made once, then kept).
def _get_path(ref: SessionRef) -> Path:
    path = ref.__dict__["path"]
    if path.__class__ is str:
        path = ref.__dict__["path"] = Path(path)
    return path


def _set_path(ref: SessionRef, path: Path | str) -> None:
    ref.__dict__["path"] = path


SessionRef.path = property(_get_path, _set_path)  # type: ignore[assignment]


# Every field of a ref with its default, in field order, from the class itself (the three it requires:
# ""; ``state`` and ``extra``, made by a factory: None here, a fresh list and dict in each ref made by
# :func:`stored_ref`).
_REF_DEFAULTS = {f.name: None if f.default_factory is not dataclasses.MISSING
                 else "" if f.default is dataclasses.MISSING else f.default
                 for f in dataclasses.fields(SessionRef)}
_new_ref = SessionRef.__new__


def stored_ref(fields: dict[str, Any], **walk: Any) -> SessionRef:
    """The ref a warm listing makes of an unchanged file: what its walk knows (``walk``: ``format``,
    ``path``, ``size``, ``updated``, ...) and the listing fields the scan index stored, which win
    (histmig/core/scanindex.py). The same ref as ``SessionRef(**walk)`` filled with them, made
    without ``__init__``: three dict updates instead of fifteen assignments in Python (a warm scan of
    8,000 Codex sessions: 3.9 µs a ref that way, 1.2 µs this way; docs/bench.md, the run 23 paragraph).
    ``walk`` names fields of a ref (nothing checks them here, as ``__init__`` would).
    ``state`` and ``extra`` are copied: the index keeps its own."""
    ref = _new_ref(SessionRef)
    own = ref.__dict__
    own.update(_REF_DEFAULTS)
    own.update(walk)
    own.update(fields)
    state, extra = own["state"], own["extra"]
    own["state"] = [] if state is None else list(state)
    own["extra"] = {} if extra is None else dict(extra)
    return ref


def given_path(ref: SessionRef) -> str | os.PathLike:
    """The ref's path as it was given (the walk's text, or a ``Path``): for a reader that opens it."""
    return ref.__dict__["path"]


class PathRef(SessionRef):
    """A session's file as a listing's walk finds it, nothing read (an adapter's ``paths``): its
    format, the id its name gives, its path. ``convert`` reads each session whole anyway and asks the
    adapter's ``listed`` for the listing's own ref of the file only where the read leaves something
    the listing decides: an error, a cwd (histmig/verbs/convert/__init__.py)."""


# ---- the core of a conversation ------------------------------------------------------------

def core(session: Session) -> list[tuple]:
    """Roles, visible text, tool calls and results, in order: what must survive a conversion.

    Adjacent text parts of the same role are joined, so formats that split a message into several
    records compare equal to formats that keep one record per message.
    """
    out: list[tuple] = []
    for rec in session.messages():
        for p in rec.parts:
            if isinstance(p, Text) and not p.injected and p.text.strip():
                item = ("text", rec.role, p.text.strip())
                if out and out[-1][0] == "text" and out[-1][1] == rec.role:
                    out[-1] = ("text", rec.role, out[-1][2] + "\n" + item[2])
                else:
                    out.append(item)
            elif isinstance(p, ToolCall):
                out.append(("tool_call", p.name, _canon(p.arguments)))
            elif isinstance(p, ToolResult):
                out.append(("tool_result", _result_text(p.output), p.is_error))
    return out


def _canon(value: Any) -> str:
    import orjson
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode() if not isinstance(value, str) else value


def _result_text(output: Any) -> str:
    if isinstance(output, str):
        return output
    if isinstance(output, list):
        return "\n".join(b.get("text", "") for b in output if isinstance(b, dict))
    return "" if output is None else str(output)
