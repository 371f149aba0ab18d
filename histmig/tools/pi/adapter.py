"""Pi sessions: ``<agent dir>/sessions/--<slug>--/<ISO ts>_<uuidv7>.jsonl``, or a flat session dir
(histmig/tools/pi/layout.py, docs/pi.md). A JSONL tree of entries under a ``session`` header; every
line is kept byte for byte, broken lines are counted and kept."""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Container, Iterable, Iterator

from histmig.toolkit.usage import add_usage
from histmig.core.diagnostics import HistmigError
from histmig.core.model import Record, RecordStream, Session, SessionRef, Text
from histmig.jsonio.jsonl import Line, head_lines, read_lines, record_lines, tail_lines
from histmig.jsonio.regular import open_or_stat
from histmig.tools.base import FunctionAdapter
from histmig.tools.claude_family.listing import broken_state
from histmig.tools.pi.entries import broken_warnings, encode_record, records_from_lines
from histmig.tools.pi.fastrow import row_of_bytes
from histmig.tools.pi.layout import all_session_files

NAME = "pi"
HEAD_TAIL = 64 * 1024      # a listing reads at most this much at each end of a file
WHOLE_READ = 1 << 20       # a file up to this size is read whole and its row taken from its bytes (fastrow.py)


def header_of(records: Iterable[Record]) -> Record | None:
    """The ``session`` header (line 1 in every file Pi writes)."""
    for r in records:
        if r.source_type == "blank":
            continue
        return r if r.source_type == "session" else None
    return None


def first_prompt(records: Iterable[Record]) -> str | None:
    for r in records:
        if r.role == "user" and r.kind == "message":
            for p in r.parts:
                if isinstance(p, Text) and p.text.strip():
                    return p.text.strip()
    return None


def last_assistant(records: Iterable[Record]) -> tuple[str | None, str | None]:
    """(provider, model) of the last assistant message: what a continued session is bound to."""
    provider = model = None
    for r in records:
        if r.role == "assistant":
            msg = r.extra.get("message") or {}
            provider = msg.get("provider") if isinstance(msg.get("provider"), str) else provider
            model = msg.get("model") if isinstance(msg.get("model"), str) else model
    return provider, model


def id_from_name(path: Path) -> str:
    """``<ts>_<uuid>.jsonl`` -> uuid; any other name -> its stem."""
    stem = path.name[:-6] if path.name.endswith(".jsonl") else path.stem
    return stem.rsplit("_", 1)[-1]


# ---- reading ----------------------------------------------------------------------------------

def _fill(session: Session, records: Any) -> Session:
    """The session's header facts and title (both near the start), then one pass for the rest."""
    head = header_of(records)
    if head is not None:
        session.id = head.id or session.id
        session.cwd = head.extra.get("cwd") if isinstance(head.extra.get("cwd"), str) else None
        session.created = head.timestamp
        parent = head.extra.get("parentSession")
        session.parent_id = parent if isinstance(parent, str) else None
    session.title = first_prompt(records)
    total = {"input": 0, "output": 0, "requests": 0}
    provider = model = None
    broken = []
    for r in records:
        if r.opaque:
            broken.append(r)
        elif r.role == "assistant":
            provider, model = (last_assistant([r])[0] or provider), (last_assistant([r])[1] or model)
            add_usage(total, r, ("input", "output"))
    session.provider, session.model = provider, model
    session.meta = {"usage": total}
    session.warnings = broken_warnings(broken, session.path)
    return session


def read(src: Any) -> Session:
    path = Path(src.path) if isinstance(src, SessionRef) else Path(src)
    records = list(records_from_lines(read_lines(path)))
    session = Session(id=id_from_name(path), format=NAME, path=path, records=records)
    session.updated = path.stat().st_mtime
    return _fill(session, records)


def active_path(path: Path) -> Container[str] | None:
    """The entry ids from the leaf (the last entry) back to the root, or None when the file is one straight
    chain (each entry the child of the one before: every session Pi writes until the user branches with
    ``/tree``; then the earlier branch's entries stay in the file). A branched file's id pairs go to disk
    past a bound (histmig/core/treepath.py), so memory stays flat whatever its entry count."""
    prev, linear = None, True
    for rid, parent in _entry_ids(path):
        if parent != prev:
            linear = False
            break
        prev = rid
    if linear:
        return None
    from histmig.core.treepath import branch_ids     # (SQLite: only for a branched file, not on every start)
    return branch_ids(_entry_ids(path))


def _entry_ids(path: Path) -> Iterator[tuple[str, str | None]]:
    """``(id, parentId)`` of each entry that has an id, as ``records_from_lines`` reads them (blank, broken
    and non-object lines and the session header left out), without building its Record: the
    linearity check runs before every stream, over the whole file."""
    for line in record_lines(path):
        if line.blank or line.error is not None:
            continue
        obj = line.obj
        if isinstance(obj, dict) and obj.get("type") != "session" and isinstance(obj.get("id"), str):
            parent = obj.get("parentId")
            yield obj["id"], parent if isinstance(parent, str) else None


def stream(src: Any) -> Session:
    """:func:`read` with the records read again from the file on each pass (bounded memory), for convert:
    only the active branch (the path Pi continues from; :func:`active_path`) of a branched session."""
    path = Path(src.path) if isinstance(src, SessionRef) else Path(src)
    keep = active_path(path)

    def produce() -> Iterable[Record]:
        for r in records_from_lines(record_lines(path)):
            if keep is None or r.id is None or r.source_type == "session" or r.opaque or r.id in keep:
                yield r
    records = RecordStream(produce)
    session = Session(id=id_from_name(path), format=NAME, path=path, records=records)
    session.updated = path.stat().st_mtime
    return _fill(session, records)


def serialize(session: Session) -> bytes:
    out = []
    for r in session.records:
        if r.raw is not None:
            out.append(r.raw)
        elif r.opaque and "offset" in r.extra:
            with open(session.path, "rb") as fh:        # an over-limit line: copied from its source
                fh.seek(r.extra["offset"])
                out.append(fh.read(r.extra["length"]))
        else:
            out.append(encode_record(r))
    return b"".join(out)


def usage_totals(records: Iterable[Record]) -> dict[str, int]:
    """Summed assistant usage (Pi's footer after a resume) and the number of assistant messages."""
    total = {"input": 0, "output": 0, "requests": 0}
    for r in records:
        if r.role == "assistant":
            add_usage(total, r, ("input", "output"))
    return total


# ---- detect and discover ----------------------------------------------------------------------

def detect(path: Any) -> bool:
    """A ``.jsonl`` whose first line is a Pi header (``{"type":"session",...,"cwd":...}``)."""
    p = Path(path)
    if not p.name.endswith(".jsonl"):
        return False
    try:
        lines = head_lines(p, max_lines=1, max_bytes=64 * 1024)
    except (HistmigError, OSError):
        return False
    obj = lines[0].obj if lines and not lines[0].blank and lines[0].error is None else None
    return isinstance(obj, dict) and obj.get("type") == "session" and "cwd" in obj and "version" in obj


def discover(homes: Any, index: Any = None) -> Iterator[SessionRef]:
    """Every session; ``index``: the scan index (histmig.core.scanindex) that answers for unchanged files.
    The files to read are shared out to every CPU (histmig/toolkit/forklist.py: a batch under 32 MB is
    read here); a file that is not Pi's gives no ref."""
    from histmig.toolkit.forklist import list_files
    for ref in list_files(all_session_files(homes), index, _index_hit, lambda path, index: ref_for(Path(path), index=index)):
        if ref is not None:
            yield ref


def _index_hit(path: Path, index: Any) -> SessionRef | None:
    """The ref of an unchanged file from the scan index (``ref_for``'s first step), or None."""
    return _indexed(path, index)[0]


def _indexed(path: Path, index: Any) -> tuple[SessionRef | None, os.stat_result | None]:
    """``scanindex.indexed`` for a Pi session: ``(ref or None, stat)``."""
    from histmig.core.scanindex import indexed
    from histmig.core.model import stored_ref
    return indexed(index, path, None, FIELDS, lambda st, fields: stored_ref(
        fields, format=NAME, path=path, size=st.st_size, updated=st.st_mtime))


def _ends(path: Path, size: int) -> tuple[list[Line], list[Line], bool]:
    if size <= 2 * HEAD_TAIL:
        return list(read_lines(path)), [], True
    head = head_lines(path, max_lines=10**6, max_bytes=HEAD_TAIL)
    end = max((ln.offset + (ln.length or 0) for ln in head), default=0)
    return head, [ln for ln in tail_lines(path, max_bytes=HEAD_TAIL) if ln.offset >= end], False


FIELDS = ("id", "cwd", "created", "title", "provider", "messages", "state", "error")
# a line that may be a user or assistant message (verified by parsing it: histmig/jsonio/marks.py)
MESSAGE_MARK = re.compile(rb'"role"\s*:\s*"(?:user|assistant)"')


def ref_for(path: Path, *, index: Any = None) -> SessionRef | None:
    """A listing row from the file's ends (or the scan index, for a file unchanged since); past 128 KB the
    messages are counted by a byte search, resumed where it stopped when the file only grew. A file whose
    first line is no header is not Pi's (None)."""
    st = None
    if index is not None:
        ref, st = _indexed(path, index)
        if ref is not None:
            return ref
    from histmig.core.scanindex import fields_of, head_hash
    ref = SessionRef(format=NAME, id=id_from_name(path), path=path)
    fd = None
    try:
        # without an index to ask, the file is opened first and its fstat is the stat (one syscall less)
        fd, st = open_or_stat(path) if index is None else (None, st or path.stat())
        ref.size, ref.updated = st.st_size, st.st_mtime
        data, fast = None, None
        if st.st_size <= WHOLE_READ:           # read whole: the row from its bytes (fastrow.py)
            opened, fd = fd, None                # _read_whole closes it
            data = _read_whole(path, opened, st.st_size)
            fast = row_of_bytes(data) if len(data) <= WHOLE_READ else None
        if fast is not None:
            _fast_summary(ref, fast)
            whole = True
        elif data is not None and len(data) <= 2 * HEAD_TAIL:    # small: every line judged from the bytes
            from histmig.tools.pi.rowfacts import objects_of_bytes
            if not _summarize_objs(ref, objects_of_bytes(data), [], True):
                return None
            whole = True
        else:
            head, tail, whole = _ends(path, st.st_size)
            if not _summarize(ref, head, tail, whole):
                return None
        resume = first = None
        if not whole:
            with open(path, "rb") as fh:
                first = fh.read(4096)
            grown = index.grown(str(path), st) if index is not None else None
            start = grown[0] if grown is not None and grown[1] == head_hash(first) else {}
            ref.messages, resume = count_messages_from(path, **start)
    except (HistmigError, OSError) as e:
        ref.error = e.describe() if isinstance(e, HistmigError) else (getattr(e, "strerror", None) or str(e))
        ref.state.append("unreadable")
        return ref
    finally:
        if fd is not None:      # a large file: its ends are read by path
            os.close(fd)
    if index is not None:
        index.store(str(path), st, fields_of(ref, FIELDS), resume=resume, first=first)
    return ref


def count_messages_from(path: Path, end: int = 0, msgs: int = 0) -> tuple[int, dict]:
    """User and assistant messages of the whole file by a byte search (``msgs`` counted before offset
    ``end``, a line boundary), and where a later count resumes."""
    from histmig.jsonio.jsonl import open_regular
    from histmig.jsonio.marks import MarkedLines, ends_line, parse_line
    total, resume = msgs, None
    with open_regular(path) as fh:
        fh.seek(end)
        lines = MarkedLines(fh, MESSAGE_MARK, start=end)
        for offset, raw in lines:
            if not ends_line(raw):
                resume = {"end": offset, "msgs": total}
            obj = parse_line(offset, raw)[0]
            msg = obj.get("message") if isinstance(obj, dict) and obj.get("type") == "message" else None
            if isinstance(msg, dict) and msg.get("role") in ("user", "assistant"):
                total += 1
    return total, resume or {"end": lines.end, "msgs": total}


def _read_whole(path: Path, fd: int | None = None, size: int = -1) -> bytes:
    """Every byte of a small file (``read_lines`` reads to the end too, whatever the size said), from
    ``fd`` when it is open (closed here either way). A read shorter than asked is the end of a
    regular file; one that fills ``size + 1`` means the file grew, and the reads go on to the end."""
    if fd is None:
        from histmig.jsonio.regular import open_regular_fd
        fd = open_regular_fd(path)
    try:
        want = size + 1 if size >= 0 else 1 << 20
        parts = [os.read(fd, want)]
        if len(parts[0]) == want:
            while chunk := os.read(fd, 1 << 20):
                parts.append(chunk)
        return b"".join(parts)
    finally:
        os.close(fd)


def _fast_summary(ref: SessionRef, row: Any) -> None:
    """The row of :func:`histmig.tools.pi.fastrow.row_of_bytes` (its header is a session header)."""
    header = row.header
    ref.id = (header.get("id") if isinstance(header.get("id"), str) else None) or ref.id
    ref.cwd = header.get("cwd") if isinstance(header.get("cwd"), str) else None
    ref.created = header.get("timestamp") if isinstance(header.get("timestamp"), str) else None
    ref.title, ref.provider, ref.messages = row.prompt, row.provider, row.messages
    ref.state += broken_state(row.broken)


def _summarize(ref: SessionRef, head_l: list[Line], tail_l: list[Line], whole: bool) -> bool:
    from histmig.tools.pi import rowfacts
    return _summarize_objs(ref, rowfacts.objects(head_l), rowfacts.objects(tail_l), whole)


def _summarize_objs(ref: SessionRef, head: list, tail: list, whole: bool) -> bool:
    from histmig.tools.pi import rowfacts
    header = rowfacts.header(head)
    if header is None:
        return False
    ref.id = (header.get("id") if isinstance(header.get("id"), str) else None) or ref.id
    ref.cwd = header.get("cwd") if isinstance(header.get("cwd"), str) else None
    ref.created = header.get("timestamp") if isinstance(header.get("timestamp"), str) else None
    row = rowfacts.Row(head, tail)
    ref.title, ref.provider = row.prompt, row.provider
    ref.messages = row.messages if whole else None
    ref.state += broken_state(row.broken)
    return True


ADAPTER = FunctionAdapter(NAME, frozenset({"text", "reasoning", "tool_call", "tool_result", "attachment"}),
                          detect=detect, discover=discover, read=read, stream=stream, serialize=serialize,
                          encode_record=encode_record)
ADAPTER.indexed = True      # discover takes ``index=`` (the scan index, histmig.core.scanindex)
