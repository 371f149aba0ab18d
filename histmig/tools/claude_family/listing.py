"""Cheap listing of Claude-style project folders (``projects/<folder>/<uuid>.jsonl``, used by Claude
Code and mini-cc), and the ref states every format reports the same way.

A listing reads at most the first and last 64 KB of a file, as Claude's own lite listing does, so
scanning thousands of sessions never reads them whole.
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Callable, Iterable

from histmig.core.diagnostics import HistmigError
from histmig.jsonio.jsonl import Line, head_lines, lenient, read_lines, tail_lines
from histmig.core.model import Record, SessionRef

UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", re.I)
HEAD_TAIL = 64 * 1024                      # Claude's lite listing reads 64 KB at each end (Tr=65536)
Parse = Callable[[Iterable[Line]], Iterable[Record]]


def subdirs(root: Path) -> list[Path]:
    """Real folders directly below ``root`` (symlinked ones are not entered), sorted."""
    try:
        return sorted(d for d in root.iterdir() if d.is_dir() and not d.is_symlink())
    except OSError:
        return []


def session_files(folder: Path) -> list[Path]:
    """What Claude lists in a project folder: ``<uuid>.jsonl`` files (§5.1). (``scandir``: the folder
    entry says whether a name is a folder, without a ``stat`` per file; a repeat scan is a walk and
    one ``stat`` per session.)"""
    try:
        with os.scandir(folder) as it:
            names = sorted(e.name for e in it
                           if e.name.endswith(".jsonl") and UUID_RE.match(e.name[:-6]) and not _is_dir(e))
    except OSError:
        return []
    return [folder / name for name in names]


def _is_dir(entry: os.DirEntry) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False


def scan_ends(path: Path, size: int, parse: Parse) -> tuple[list[Record], list[Record], bool]:
    """Records of the head and the tail (each ~64 KB) and whether that was the whole file; a
    small file is read once, whole. Lines are parsed leniently (``jsonl.lenient``: a listing's
    broken line is one orjson cannot parse, docs/scan-show.md)."""
    if size <= 2 * HEAD_TAIL:
        return list(parse(lenient(read_lines(path)))), [], True
    head_l = head_lines(path, max_lines=10**6, max_bytes=HEAD_TAIL)
    end = max((ln.offset + (ln.length or 0) for ln in head_l), default=0)
    tail_l = [ln for ln in tail_lines(path, max_bytes=HEAD_TAIL) if ln.offset >= end]
    return list(parse(lenient(head_l))), list(parse(lenient(tail_l))), False


def head_value(path: Path, key: str, parse: Parse, *, max_lines: int = 10**6) -> Any:
    """The first top-level string ``key`` in the first 64 KB of a file, or None (also when unreadable)."""
    from histmig.tools.claude_family.blocks import first_value
    try:
        return first_value(parse(head_lines(path, max_lines=max_lines, max_bytes=HEAD_TAIL)), key)
    except (HistmigError, OSError):
        return None


# ---- message counts past the ends (issue 15) --------------------------------------------------

# Every line that is a user or assistant record holds its ``"type":"user|assistant"``, compact or spaced
# (a nested one, in a progress record, is a false match the parse drops): only those lines are parsed.
MESSAGE_MARK = re.compile(rb'"type"\s*:\s*"(?:user|assistant)"')


def list_ends(ref: SessionRef, path: Path, st: Any, parse: Parse, summarize: Callable[..., None], *,
              index: Any = None, fields: tuple[str, ...], grouped: bool = True) -> None:
    """Fill ``ref`` from the scan index (``index``, histmig.core.scanindex) when the file is unchanged,
    else from its two ends (``summarize(ref, head, tail, whole)``) and, past 128 KB, a byte search for
    the message count, resumed where it stopped when the file only grew. Raises what reading raises."""
    from histmig.core.scanindex import fields_of, fill, head_hash
    key = str(path)
    hit = index.hit(key, st, None, fields) if index is not None else None
    if hit is not None:
        fill(ref, hit)
        return
    head, tail, whole = scan_ends(path, st.st_size, parse)
    summarize(ref, head, tail, whole)
    del head, tail                 # a first prompt may be tens of MB: not held through the count
    resume = first = None
    if not whole:
        first = first_bytes(path)
        grown = index.grown(key, st) if index is not None else None
        start = grown[0] if grown is not None and grown[1] == head_hash(first) else {}
        try:
            ref.messages, resume = count_messages_from(path, **start, grouped=grouped)
        except (HistmigError, OSError):
            ref.messages = None        # (read a moment ago: the file went away meanwhile)
    if index is not None:
        index.store(key, st, fields_of(ref, fields), resume=resume, first=first)


def count_messages_from(path: Path, end: int = 0, msgs: int = 0, mid: str | None = None, *,
                        grouped: bool = True) -> tuple[int, dict]:
    """The user and assistant records of the whole file, by a byte search: ``msgs`` counted before
    offset ``end`` (a line boundary), ``mid`` the ``message.id`` of the assistant line just before it.
    ``grouped`` (Claude Code): adjacent assistant lines sharing ``message.id`` are one message, as its
    ``records_from_lines`` groups them; mini-cc has one record per line. Returns the count and where a
    later count resumes."""
    from histmig.jsonio.jsonl import open_regular
    from histmig.jsonio.marks import MarkedLines, ends_line, parse_line
    total, at = msgs, end if mid is not None else -1      # ``mid`` continues a group only at ``at``
    resume = None
    with open_regular(path) as fh:
        fh.seek(end)
        lines = MarkedLines(fh, MESSAGE_MARK, start=end)
        for offset, raw in lines:
            if not ends_line(raw):
                resume = {"end": offset, "msgs": total, "mid": mid if at == offset else None}
            obj = parse_line(offset, raw)[0]
            t = obj.get("type") if isinstance(obj, dict) else None
            msg = obj.get("message") if t == "assistant" else None
            new_mid = msg["id"] if grouped and isinstance(msg, dict) and isinstance(msg.get("id"), str) else None
            if t in ("user", "assistant") and not (new_mid is not None and new_mid == mid and at == offset):
                total += 1
            mid, at = new_mid, offset + len(raw)
    if resume is None:
        resume = {"end": lines.end, "msgs": total, "mid": mid if at == lines.end else None}
    return total, resume


def first_bytes(path: Path) -> bytes:
    from histmig.jsonio.jsonl import open_regular
    with open_regular(path) as fh:
        return fh.read(4096)              # (the scan index's grow check)


# ---- ref states -------------------------------------------------------------------------------

def mark_unreadable(ref: SessionRef, e: Exception) -> SessionRef:
    """A file that cannot be listed stays in the listing, with why."""
    ref.error = e.describe() if isinstance(e, HistmigError) else (getattr(e, "strerror", None) or str(e))
    ref.state.append("unreadable")
    return ref


def broken_lines_state(records: Iterable[Record]) -> list[str]:
    """``["N broken line(s)"]`` for the opaque records, or [] when every line parsed."""
    return broken_state(sum(1 for r in records if r.opaque))


def broken_state(broken: int) -> list[str]:
    """``["N broken line(s)"]`` for ``broken`` lines that did not parse, or [] for none."""
    return [f"{broken} broken line" + ("s" if broken != 1 else "")] if broken else []
