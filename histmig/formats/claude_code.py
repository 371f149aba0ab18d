"""Claude Code transcripts: ``<config>/projects/<slug>/<uuid>.jsonl`` (claude-code.md §1-§6).

Reading keeps every line's bytes (``claude_records``); listing reads only each file's two ends
(``claude_listing``); the block ↔ Part mapping is shared with mini-cc and manifest (``anthropic``).
This module is the format's face: whole-session reads, detection and the adapter.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from histmig.formats import FunctionAdapter
from histmig.formats.anthropic import broken_warnings, first_timestamp, first_value, last_model
from histmig.formats.claude_listing import (discover, is_agent_file, project_dirs, projects_root, ref_for,
                                            sessions_for_cwd, subagent_files)
from histmig.formats.claude_records import count_messages, encode_record, records_from_lines, serialize, title_of
from histmig.formats.listing import HEAD_TAIL, UUID_RE
from histmig.jsonl import read_lines
from histmig.model import Session, SessionRef

# the format's public face: what other modules and tests use (the rest stays in the submodules)
__all__ = ["ADAPTER", "HEAD_TAIL", "NAME", "UUID_RE", "count_messages", "detect", "discover", "encode_record",
           "project_dirs", "projects_root", "read", "read_file", "ref_for", "serialize", "sessions_for_cwd",
           "subagent_files"]

NAME = "claude-code"
META_KEYS = ("entrypoint", "version", "gitBranch")


def read_file(path: Path) -> Session:
    """One transcript file as a Session, without sub-agents."""
    records = list(records_from_lines(read_lines(path)))
    session = Session(id=path.stem if path.name.endswith(".jsonl") else path.name, format=NAME,
                      path=path, records=records)
    session.cwd = first_value(records, "cwd")
    session.created = first_timestamp(records)
    session.updated = path.stat().st_mtime
    session.title = title_of(records)
    session.model = last_model(records)
    if is_agent_file(path):
        session.parent_id = first_value(records, "sessionId")
    session.meta = {k: v for k in META_KEYS if (v := first_value(records, k)) is not None}
    session.warnings = broken_warnings(records, path)
    return session


def read(src: Any) -> Session:
    """The session with every line kept; sub-agent transcripts attached as ``subagents``."""
    path = Path(src.path) if isinstance(src, SessionRef) else Path(src)
    session = read_file(path)
    if not is_agent_file(path):
        session.subagents = [read_file(p) for p in subagent_files(path)]
    return session


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
    from histmig.formats.mini_cc import looks_like_mini_cc
    return not looks_like_mini_cc(p)


ADAPTER = FunctionAdapter(NAME, frozenset({"text", "tool_call", "tool_result", "attachment"}),
                          detect=detect, discover=discover, read=read, serialize=serialize,
                          encode_record=encode_record, project_dirs=project_dirs)
