"""Claude Code transcripts: ``<config>/projects/<slug>/<uuid>.jsonl`` (docs/specs/claude-code.md §1-§6).

Reading keeps every line's bytes (``claude_records``); listing reads only each file's two ends
(``claude_listing``); the block ↔ Part mapping is shared with mini-cc and manifest (``anthropic``).
This module is the format's face: whole-session reads, detection and the adapter.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Iterator

from histmig.tools.base import FunctionAdapter
from histmig.tools.claude_family.blocks import broken_warnings, first_prompt, first_timestamp, first_value, last_model
from histmig.tools.claude_code.listing import (discover, is_agent_file, listed, paths, project_dirs,
                                            projects_root, ref_for, sessions_for_cwd, subagent_files)
from histmig.tools.claude_code.records import (count_messages, encode_record, records_from_lines, serialize, title_of,
                                              type_name)
from histmig.tools.claude_family.listing import HEAD_TAIL, UUID_RE
from histmig.jsonio.jsonl import RECORD_MAX_BYTES, read_lines, record_lines, record_too_big
from histmig.core.model import Record, RecordStream, Session, SessionRef

# the format's public face: what other modules and tests use (the rest stays in the submodules)
__all__ = ["ADAPTER", "HEAD_TAIL", "NAME", "UUID_RE", "count_messages", "detect", "discover", "encode_record",
           "project_dirs", "projects_root", "read", "read_file", "stream", "ref_for", "serialize", "sessions_for_cwd",
           "subagent_files"]

NAME = "claude-code"
META_KEYS = ("entrypoint", "version", "gitBranch")


def read_file(path: Path) -> Session:
    """One transcript file as a Session, without sub-agents."""
    records = list(records_from_lines(read_lines(path)))
    session = _session(path, records)
    session.cwd = first_value(records, "cwd")
    session.created = first_timestamp(records)
    session.title = title_of(records)
    session.model = last_model(records)
    if is_agent_file(path):
        session.parent_id = first_value(records, "sessionId")
    session.meta = {k: v for k in META_KEYS if (v := first_value(records, k)) is not None}
    session.warnings = broken_warnings(records, path)
    return session


def _session(path: Path, records: Any) -> Session:
    return Session(id=path.stem if path.name.endswith(".jsonl") else path.name, format=NAME,
                   path=path, records=records, updated=path.stat().st_mtime)


def read(src: Any) -> Session:
    """The session with every line kept; sub-agent transcripts attached as ``subagents``."""
    return _with_subagents(src, read_file)


def stream(src: Any) -> Session:
    """:func:`read` with every file's records read again on each iteration, one at a time
    (bounded memory for ``show`` and ``convert``); a record over the limit is refused."""
    return _with_subagents(src, stream_file)


def _with_subagents(src: Any, read_one) -> Session:
    path = Path(src.path) if isinstance(src, SessionRef) else Path(src)
    session = read_one(path)
    if not is_agent_file(path):
        session.subagents = [read_one(p) for p in subagent_files(path)]
    return session


def stream_file(path: Path) -> Session:
    """:func:`read_file` in one pass that keeps the header fields, not the records."""
    produce = lambda: bounded_records(path)  # noqa: E731
    session = _session(path, RecordStream(produce))
    head = Header(path)
    for rec in produce():
        head.note(rec)
    session.cwd, session.created, session.model = head.values["cwd"], head.created, head.model
    session.title = head.custom or head.ai or head.prompt or head.last_prompt
    if is_agent_file(path):
        session.parent_id = head.values["sessionId"]
    session.meta = {k: v for k in META_KEYS if (v := head.values[k]) is not None}
    session.warnings = head.warnings
    return session


def bounded_records(path: Path) -> Iterator[Record]:
    """Records of one file; a line, or an assistant turn's lines, over the record limit is refused."""
    for rec in records_from_lines(record_lines(path)):
        if rec.raw is not None and len(rec.raw) > RECORD_MAX_BYTES:
            raise record_too_big(path, rec.line, len(rec.raw), RECORD_MAX_BYTES)
        yield rec


class Header:
    """What :func:`read_file` derives from all records, folded one record at a time (same rules:
    first string value per key, first timestamp, last titles and model, every broken line)."""

    def __init__(self, path: Path):
        self.path = path
        self.values: dict[str, Any] = dict.fromkeys(("cwd", "sessionId", *META_KEYS))
        self.created = self.model = self.custom = self.ai = self.prompt = self.last_prompt = None
        self.warnings: list = []

    def note(self, rec: Record) -> None:
        for key, have in self.values.items():
            if have is None:
                self.values[key] = first_value((rec,), key)
        self.created = self.created or first_timestamp((rec,))
        self.model = last_model([rec]) or self.model
        self.prompt = self.prompt or first_prompt((rec,))
        if rec.source_type == "last-prompt" and isinstance(rec.extra.get("lastPrompt"), str):
            self.last_prompt = rec.extra["lastPrompt"]
        if rec.source_type == "custom-title" and isinstance(rec.extra.get("customTitle"), str):
            self.custom = rec.extra["customTitle"]
        elif rec.source_type == "ai-title" and isinstance(rec.extra.get("aiTitle"), str):
            self.ai = rec.extra["aiTitle"]
        self.warnings += broken_warnings((rec,), self.path)


def detect(path: str | os.PathLike) -> bool:
    """A Claude transcript: ``projects/<slug>/<uuid>.jsonl`` whose records are not mini-cc's, or
    a sub-agent file. Manifest transcripts (``sessions/<id>/transcript.jsonl``) never match."""
    p = Path(path)
    if not p.name.endswith(".jsonl") or p.name == "transcript.jsonl":
        return False
    if is_agent_file(p):
        return True
    if not UUID_RE.match(p.stem) or p.parent.parent.name != "projects":
        return False
    from histmig.tools.mini_cc.adapter import looks_like_mini_cc
    return not looks_like_mini_cc(p)


ADAPTER = FunctionAdapter(NAME, frozenset({"text", "tool_call", "tool_result", "attachment"}),
                          detect=detect, discover=discover, read=read, stream=stream, serialize=serialize,
                          encode_record=encode_record, project_dirs=project_dirs,
                          type_name=type_name, paths=paths, listed=listed)
# discover takes ``index=`` (the scan index, histmig.core.scanindex)
ADAPTER.indexed = True
