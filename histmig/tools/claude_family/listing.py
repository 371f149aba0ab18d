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
    """What Claude lists in a project folder: ``<uuid>.jsonl`` files (§5.1)."""
    return [folder / name for name in folder_entries(folder)[0]]


def folder_entries(folder: str | Path) -> tuple[list[str], frozenset[str]]:
    """The names of the ``<uuid>.jsonl`` files Claude lists in ``folder`` (§5.1), sorted, and the names
    of every entry there, from one ``scandir`` (the folder entry says whether a name is a folder,
    without a ``stat`` per file: a repeat scan is a walk and one ``stat`` per session)."""
    try:
        with os.scandir(folder) as it:
            entries = list(it)
    except OSError:
        return [], frozenset()
    return (sorted(e.name for e in entries if e.name.endswith(".jsonl") and UUID_RE.match(e.name[:-6])
                   and not _is_dir(e)), frozenset(e.name for e in entries))


def _is_dir(entry: os.DirEntry) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False


class Ends:
    """What a listing reads of a file: the Records of its head and tail (each ~64 KB), whether that was
    the whole file, and the lines they were read from (``lines``, each parsed once: the message count
    takes their values, ``MessageCount.line``)."""
    __slots__ = ("head", "tail", "whole", "head_lines", "tail_lines")

    def __init__(self, head: list, tail: list, whole: bool, head_l: list[Line], tail_l: list[Line]):
        self.head, self.tail, self.whole, self.head_lines, self.tail_lines = head, tail, whole, head_l, tail_l


def scan_ends(path: Path, size: int, parse: Parse) -> Ends:
    """The head and the tail of a file; a small file is read once, whole. Lines are parsed leniently
    (``jsonl.lenient``: a listing's broken line is one orjson cannot parse, docs/scan-show.md)."""
    if size <= 2 * HEAD_TAIL:
        return Ends(list(parse(lenient(read_lines(path)))), [], True, [], [])
    head_l = list(lenient(head_lines(path, max_lines=10**6, max_bytes=HEAD_TAIL)))
    end = max((ln.offset + (ln.length or 0) for ln in head_l), default=0)
    tail_l = list(lenient(ln for ln in tail_lines(path, max_bytes=HEAD_TAIL) if ln.offset >= end))
    return Ends(list(parse(head_l)), list(parse(tail_l)), False, head_l, tail_l)


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
    else from its two ends (``summarize(ref, head, tail, whole)``) and, past 128 KB, the message count:
    the lines of the two ends as they were parsed for ``summarize``, a byte search between them (each
    line parsed once), resumed where it stopped when the file only grew. Raises what reading raises."""
    from histmig.core.scanindex import fields_of, fill, head_hash
    key = str(path)
    hit = index.hit(key, st, None, fields) if index is not None else None
    if hit is not None:
        fill(ref, hit)
        return
    ends = scan_ends(path, st.st_size, parse)
    summarize(ref, ends.head, ends.tail, ends.whole)
    if ends.whole:
        if index is not None:
            index.store(key, st, fields_of(ref, fields))
        return
    first = first_bytes(path)
    grown = index.grown(key, st) if index is not None else None
    start = grown[0] if grown is not None and grown[1] == head_hash(first) else None
    count = None if start is not None else counted(MessageCount(grouped=grouped), ends.head_lines)
    tail = ends.tail_lines
    del ends                       # a first prompt may be tens of MB: not held through the count
    try:
        if count is not None and count.resume is None and tail:
            ref.messages, resume = count_past_head(path, count, tail)
        else:                      # grown; or the head reached the end of the file: one pass, as it is now
            ref.messages, resume = count_messages_from(path, **(start or {}), grouped=grouped)
    except (HistmigError, OSError):
        ref.messages, resume = None, None     # (read a moment ago: the file went away meanwhile)
    if index is not None:
        index.store(key, st, fields_of(ref, fields), resume=resume, first=first)


def counted(count: MessageCount, lines: list[Line]) -> MessageCount:
    """``count`` fed ``lines``, already parsed."""
    for line in lines:
        count.line(line.offset, line.length, line.obj, line.complete)
    return count


def count_past_head(path: Path, count: MessageCount, tail: list[Line]) -> tuple[int, dict]:
    """``count`` (the head's complete lines counted) on to the end of the file: the lines between the
    two ends by a byte search, then the ``tail``'s lines (at least one), already parsed."""
    search_messages(path, count, stop=tail[0].offset)
    return counted(count, tail).done()


class MessageCount:
    """The user and assistant records of a file's lines, fed in order (``line``): a line that is no
    such record (a blank or broken line, another type) ends an assistant message; ``grouped`` (Claude
    Code): adjacent assistant lines sharing ``message.id`` are one message, as its
    ``records_from_lines`` groups them (mini-cc has one record per line). A line the byte search does
    not find need not be fed: it holds no record to count, and the line after it is not adjacent to
    the last one fed. ``done`` gives the count and where a later count resumes: before a last line
    without its newline (it may still be written), else past the last line."""

    def __init__(self, end: int = 0, msgs: int = 0, mid: str | None = None, *, grouped: bool = True):
        self.total, self.mid, self.grouped = msgs, mid, grouped
        self.at = end              # past the last line fed: ``mid`` continues a message only there
        self.end = end             # past the last complete line
        self.resume: dict | None = None

    def line(self, offset: int, length: int, obj: Any, complete: bool) -> None:
        if not complete:
            self.resume = {"end": offset, "msgs": self.total, "mid": self.mid if self.at == offset else None}
        t = obj.get("type") if isinstance(obj, dict) else None
        msg = obj.get("message") if t == "assistant" else None
        mid = msg["id"] if self.grouped and isinstance(msg, dict) and isinstance(msg.get("id"), str) else None
        if t in ("user", "assistant") and not (mid is not None and mid == self.mid and self.at == offset):
            self.total += 1
        self.mid, self.at = mid, offset + length
        if complete:
            self.end = self.at

    def done(self) -> tuple[int, dict]:
        return self.total, self.resume or {"end": self.end, "msgs": self.total,
                                           "mid": self.mid if self.at == self.end else None}


def count_messages_from(path: Path, end: int = 0, msgs: int = 0, mid: str | None = None, *,
                        grouped: bool = True) -> tuple[int, dict]:
    """The user and assistant records of the whole file, by a byte search: ``msgs`` counted before
    offset ``end`` (a line boundary), ``mid`` the ``message.id`` of the assistant line just before it
    (``MessageCount``). Returns the count and where a later count resumes."""
    count = MessageCount(end, msgs, mid, grouped=grouped)
    search_messages(path, count)
    return count.done()


def search_messages(path: Path, count: MessageCount, stop: int | None = None) -> None:
    """Feed ``count`` the lines holding :data:`MESSAGE_MARK` past the last line it was fed (a line
    boundary) to the end of the file, or to ``stop`` (a line boundary), each parsed."""
    from histmig.jsonio.jsonl import open_regular
    from histmig.jsonio.marks import MarkedLines, ends_line, parse_line
    with open_regular(path) as fh:
        fh.seek(count.at)
        lines = MarkedLines(fh if stop is None else _Upto(fh, stop - count.at), MESSAGE_MARK, start=count.at)
        for offset, raw in lines:
            count.line(offset, len(raw), parse_line(offset, raw)[0], ends_line(raw))
    count.end = max(count.end, lines.end)


class _Upto:
    """A file read up to ``left`` more bytes."""

    def __init__(self, fh: Any, left: int):
        self.fh, self.left = fh, left

    def read(self, n: int) -> bytes:
        data = self.fh.read(min(n, self.left))
        self.left -= len(data)
        return data


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
