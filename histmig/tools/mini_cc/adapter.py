"""mini-cc sessions: ``<MINI_CC_HOME>/projects/<slug>/<uuid>.jsonl`` (docs/specs/mini-cc.md).

One line per message: ``type`` (= role), ``uuid``, ``parentUuid``, ``sessionId``, ``timestamp``
(``+00:00``), ``cwd``, ``message`` (Anthropic Messages form, verbatim), and ``usage`` at the top
level of assistant records. The Node build writes compact JSON, the Python build ``json.dumps``
with ``", "``/``": "`` separators; both are read, and every line is kept byte for byte.
mini-cc's own ``project_slug()`` is not published, so folders are located by listing them and
reading the ``cwd`` recorded inside, never by computing a name.
"""
from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any, Iterable, Iterator

import orjson

from histmig.toolkit.usage import usage_totals as sum_usage
from histmig.core.diagnostics import HistmigError
from histmig.tools.base import FunctionAdapter
from histmig.tools.claude_family.blocks import (broken_warnings, build_message, content_parts, first_prompt,
                                       first_timestamp, first_value, kind_of, last_model,
                                       message_skeleton, record_bytes, records_per_line, str_or_none)
from histmig.tools.claude_family.listing import (UUID_RE, broken_lines_state, head_value, list_ends,
                                                 mark_unreadable, session_files, subdirs)
from histmig.jsonio.jsonl import Line, head_lines, read_lines
from histmig.core.model import Record, Session, SessionRef
from histmig.core.paths import claude_slug

NAME = "mini-cc"
MINI_KEYS = ("type", "uuid", "parentUuid", "sessionId", "timestamp", "cwd", "message", "usage")
NAMED_KEYS = frozenset({"type", "uuid", "parentUuid", "timestamp", "message", "usage"})


# ---- lines → records --------------------------------------------------------------------------

def record_from_obj(line: Line, obj: dict) -> Record:
    t = obj.get("type")
    msg = obj.get("message") if isinstance(obj.get("message"), dict) else None
    role = t if t in ("user", "assistant") else None
    parts = content_parts(msg.get("content")) if msg is not None and role else []
    extra = {k: v for k, v in obj.items() if k not in NAMED_KEYS}
    if msg is not None:
        extra["message"] = message_skeleton(msg)
    usage = obj.get("usage")
    return Record(id=str_or_none(obj.get("uuid")), parent_id=str_or_none(obj.get("parentUuid")),
                  kind=kind_of(role, parts) if role else "event", role=role,
                  timestamp=str_or_none(obj.get("timestamp")), parts=parts,
                  usage=usage if isinstance(usage, dict) else None, extra=extra, raw=line.raw,
                  line=line.number, source_type=t if isinstance(t, str) else None)


def records_from_lines(lines: Iterable[Line]) -> Iterator[Record]:
    return records_per_line(lines, record_from_obj)


def style_of(lines: Iterable[Line]) -> str:
    """"spaced" (Python ``json.dumps``) or "compact" (Node ``JSON.stringify``)."""
    for line in lines:
        if line.raw is not None and not line.blank and line.error is None:
            return "spaced" if line.body.startswith(b'{"type": ') else "compact"
    return "compact"


# ---- records → bytes --------------------------------------------------------------------------

def encode_record(rec: Record, *, style: str = "compact") -> bytes:
    """A changed or new record in the writer's key order, in the file's own style."""
    extra = dict(rec.extra)
    obj: dict[str, Any] = {"type": rec.source_type or rec.role, "uuid": rec.id, "parentUuid": rec.parent_id}
    for key in ("sessionId",):
        if key in extra:
            obj[key] = extra.pop(key)
    obj["timestamp"] = rec.timestamp
    if "cwd" in extra:
        obj["cwd"] = extra.pop("cwd")
    skeleton = extra.pop("message", None)
    if rec.role in ("user", "assistant"):
        obj["message"] = build_message(skeleton, rec)
    elif skeleton is not None:
        obj["message"] = skeleton
    if rec.usage is not None:
        obj["usage"] = rec.usage
    obj.update(extra)
    if style == "spaced":
        return json.dumps(obj, ensure_ascii=False).encode("utf-8") + b"\n"
    return orjson.dumps(obj) + b"\n"


def serialize(session: Session) -> bytes:
    encode = functools.partial(encode_record, style=session.meta.get("style", "compact"))
    return b"".join(record_bytes(r, session.path, encode) for r in session.records)


# ---- reading ----------------------------------------------------------------------------------

def read(src: Any) -> Session:
    path = Path(src.path) if isinstance(src, SessionRef) else Path(src)
    lines = list(read_lines(path))
    records = list(records_from_lines(lines))
    session = Session(id=path.stem, format=NAME, path=path, records=records)
    session.cwd = first_value(records, "cwd")
    session.created = first_timestamp(records)
    session.updated = path.stat().st_mtime
    session.title = first_prompt(records)
    session.model = last_model(records)
    session.meta = {"style": style_of(lines), "usage": usage_totals(records)}
    session.warnings = broken_warnings(records, path)
    return session


def stream(src: Any) -> Session:
    """:func:`read` with the records read again from the file on each iteration (bounded memory
    for ``show`` and ``convert``): the header fields take a few streamed passes, most stop early."""
    from histmig.jsonio.jsonl import record_lines
    from histmig.core.model import RecordStream
    path = Path(src.path) if isinstance(src, SessionRef) else Path(src)
    records = RecordStream(lambda: records_from_lines(record_lines(path)))
    session = Session(id=path.stem, format=NAME, path=path, records=records)
    session.cwd = first_value(records, "cwd")
    session.created = first_timestamp(records)
    session.updated = path.stat().st_mtime
    session.title = first_prompt(records)
    model = None
    for r in records:                 # last_model() reads a list backwards
        model = last_model([r]) or model
    session.model = model
    session.meta = {"style": style_of(record_lines(path)), "usage": usage_totals(records)}
    session.warnings = broken_warnings(records, path)
    return session


def usage_totals(records: Iterable[Record]) -> dict[str, int]:
    """What mini-cc's ``/status`` shows after a resume: summed assistant usage and the number
    of requests (assistant records carrying usage)."""
    return sum_usage(records, ("input_tokens", "output_tokens"))


# ---- detect and discover ----------------------------------------------------------------------

def looks_like_mini_cc(path: Path) -> bool:
    """The first record starts with ``type`` and carries only mini-cc's keys (Claude records
    start with ``parentUuid`` or carry ``isSidechain``/``userType``/``version``)."""
    try:
        lines = head_lines(path, max_lines=20, max_bytes=64 * 1024)
    except (HistmigError, OSError):
        return False
    for line in lines:
        obj = None if line.blank else line.obj
        if isinstance(obj, dict):
            keys = list(obj)
            return keys[:1] == ["type"] and set(keys) <= set(MINI_KEYS) and obj["type"] in ("user", "assistant")
    return False


def detect(path: Any) -> bool:
    p = Path(path)
    return (p.name.endswith(".jsonl") and bool(UUID_RE.match(p.name[:-6]))
            and p.parent.parent.name == "projects" and looks_like_mini_cc(p))


def projects_root(homes: Any) -> Path:
    return Path(homes.mini_cc) / "projects"


def discover(homes: Any, index: Any = None) -> Iterator[SessionRef]:
    """Every session; ``index``: a ``ScanIndex`` that answers for unchanged files."""
    for folder in subdirs(projects_root(homes)):
        for path in session_files(folder):
            yield ref_for(path, index=index)


FIELDS = ("cwd", "created", "title", "messages", "state", "error")


def ref_for(path: Path, *, index: Any = None) -> SessionRef:
    """One session from its two ends; past 128 KB the messages are counted by a byte search."""
    ref = SessionRef(format=NAME, id=path.stem, path=path)
    try:
        st = path.stat()
        ref.size, ref.updated = st.st_size, st.st_mtime
        list_ends(ref, path, st, records_from_lines, _summarize, index=index, fields=FIELDS, grouped=False)
    except (HistmigError, OSError) as e:
        return mark_unreadable(ref, e)
    return ref


def _summarize(ref: SessionRef, head: list[Record], tail: list[Record], whole: bool) -> None:
    ref.cwd = first_value(head, "cwd")
    ref.created = first_timestamp(head)
    ref.title = first_prompt(head)
    ref.messages = sum(1 for r in head if r.role in ("user", "assistant")) if whole else None
    ref.state += broken_lines_state(head + tail)


def project_dirs(root: Path, cwd: str) -> list[Path]:
    """Folders under ``root`` whose sessions record ``cwd`` (listing, not computing)."""
    out = []
    for folder in subdirs(root):
        if any(head_value(p, "cwd", records_from_lines, max_lines=20) == cwd for p in session_files(folder)):
            out.append(folder)
    return out


def folder_for(root: Path, cwd: str) -> tuple[Path, list[Path]]:
    """Where ``cwd``'s sessions go: an existing folder that records it, else the Claude-rule slug.
    The second value lists existing folders whose name disagrees with the computed slug, for the
    caller to report (never to create a second folder silently)."""
    found = project_dirs(root, cwd)
    computed = root / claude_slug(cwd)
    odd = [f for f in found if f != computed]
    return (found[0] if found else computed), odd


ADAPTER = FunctionAdapter(NAME, frozenset({"text", "reasoning", "tool_call", "tool_result", "attachment"}),
                          detect=detect, discover=discover, read=read, stream=stream, serialize=serialize,
                          encode_record=encode_record, project_dirs=project_dirs)
# discover takes ``index=`` (the scan index, histmig.core.scanindex)
ADAPTER.indexed = True
