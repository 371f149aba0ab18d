"""Per-file facts about a Claude-style transcript (Claude Code and mini-cc share the record shape:
``type`` user/assistant, ``message`` in Anthropic form, ``uuid``/``parentUuid``, ``cwd``), and the
repair record that answers a dangling ``tool_use`` the way an interrupted client does."""
from __future__ import annotations

import json
import uuid
from dataclasses import field
from datetime import datetime
from pathlib import Path
from typing import Any

from histmig.core.diagnostics import HistmigError
from histmig.jsonio.jsonl import read_lines
from histmig.core.plan import Fingerprint, Patch, WriteFile
from histmig.core.valueclass import FACTORY, value

INTERRUPTED = "[Request interrupted by user for tool use]"


class LineNumbers:
    """The line numbers of broken lines as the checks use them (``len``, ``[0]``): every one
    counted, the first 100 kept, so a file of millions of broken lines stays small."""

    KEEP = 100

    def __init__(self) -> None:
        self.first: list[int] = []
        self.count = 0

    def append(self, number: int) -> None:
        self.count += 1
        if len(self.first) < self.KEEP:
            self.first.append(number)

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, i: int) -> int:
        return self.first[i]

    def __iter__(self):
        return iter(self.first)


@value
class Transcript:
    path: Path
    id: str
    size: int = 0
    mtime: float = 0.0
    first_cwd: str | None = None
    session_ids: set[str] = field(default_factory=set)   # sessionId values seen in records
    broken: LineNumbers = field(default_factory=LineNumbers)   # unparseable complete lines
    why: str = ""                 # why the first of them did not parse
    torn_tail: bool = False       # the last line has no newline and does not parse
    complete: bool = True         # the file ends with a newline (safe to append)
    last: dict[str, Any] | None = None        # of the last user/assistant record of the main chain: LAST_KEYS
    last_raw: bytes = b""                     # and its first STYLE_SAMPLE bytes
    dangling: list[str] = field(default_factory=list)  # tool_use ids with no tool_result after them
    error: str | None = None

    def __init__(self, path: Path, id: str, size: int = 0, mtime: float = 0.0, first_cwd: str | None = None,
                 session_ids: set[str] = FACTORY, broken: LineNumbers = FACTORY, why: str = "",
                 torn_tail: bool = False, complete: bool = True, last: dict[str, Any] | None = None,
                 last_raw: bytes = b'', dangling: list[str] = FACTORY, error: str | None = None) -> None:
        self.path = path
        self.id = id
        self.size = size
        self.mtime = mtime
        self.first_cwd = first_cwd
        self.session_ids = set() if session_ids is FACTORY else session_ids
        self.broken = LineNumbers() if broken is FACTORY else broken
        self.why = why
        self.torn_tail = torn_tail
        self.complete = complete
        self.last = last
        self.last_raw = last_raw
        self.dangling = [] if dangling is FACTORY else dangling
        self.error = error


def _blocks(rec: dict[str, Any]) -> list[dict[str, Any]]:
    msg = rec.get("message")
    content = msg.get("content") if isinstance(msg, dict) else None
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


# Of the last user/assistant record, a transcript keeps what the repair record copies (claude_record,
# mini_cc_record) and the first bytes that show its JSON style (encode_like): doctor holds a transcript
# per session, and a last record can be megabytes (a long answer, a pasted file).
LAST_KEYS = ("type", "uuid", "userType", "cwd", "sessionId", "version", "gitBranch", "entrypoint")
STYLE_SAMPLE = 4096


def read_transcript(path: Path) -> Transcript:
    t = Transcript(path, path.name[:-len(".jsonl")])
    pending: dict[str, None] = {}      # unanswered tool_use ids, in order
    try:
        st = path.stat()
        t.mtime = st.st_mtime
        for line in read_lines(path):
            t.size = line.offset + (line.length or 0)
            t.complete = line.complete
            if line.blank:
                continue
            obj = line.obj
            if not isinstance(obj, dict):
                if not line.complete:
                    t.torn_tail = True
                    continue
                t.broken.append(line.number)
                t.why = t.why or (line.error or "not an object")
                continue
            _note(t, obj, line.raw or b"", pending)
    except (HistmigError, OSError) as e:
        t.error = str(e)
    t.dangling = list(pending) if t.last and t.last.get("type") == "assistant" else []
    return t


def _note(t: Transcript, obj: dict[str, Any], raw: bytes, pending: dict[str, None]) -> None:
    if isinstance(obj.get("cwd"), str) and t.first_cwd is None:
        t.first_cwd = obj["cwd"]
    if isinstance(obj.get("sessionId"), str):
        t.session_ids.add(obj["sessionId"])
    kind = obj.get("type")
    if kind not in ("user", "assistant") or obj.get("isSidechain") is True:
        return
    t.last, t.last_raw = {k: obj[k] for k in LAST_KEYS if k in obj}, raw[:STYLE_SAMPLE]
    for b in _blocks(obj):
        if kind == "assistant" and b.get("type") == "tool_use" and isinstance(b.get("id"), str):
            pending[b["id"]] = None
        elif kind == "user" and b.get("type") == "tool_result":
            pending.pop(b.get("tool_use_id"), None)
    if kind == "user" and not any(b.get("type") == "tool_result" for b in _blocks(obj)):
        pending.clear()   # a new user turn: older unanswered calls were dropped by the client already


# ---- the repair record -----------------------------------------------------------------------

def _results(ids: list[str]) -> list[dict[str, Any]]:
    return [{"type": "tool_result", "content": INTERRUPTED, "is_error": True, "tool_use_id": i} for i in ids]


def claude_record(t: Transcript, now: datetime) -> dict[str, Any]:
    """Key order as Claude writes it: parentUuid first, "uuid" then "timestamp" adjacent (the >5 MB
    fast path of the loader depends on both)."""
    last = t.last or {}
    rec: dict[str, Any] = {"parentUuid": last.get("uuid"), "isSidechain": False}
    for key in ("userType", "cwd", "sessionId", "version", "gitBranch", "entrypoint"):
        if key in last:
            rec[key] = last[key]
    rec.setdefault("sessionId", t.id)
    rec.update({"type": "user", "message": {"role": "user", "content": _results(t.dangling)},
                "uuid": str(uuid.uuid4()), "timestamp": now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"})
    return rec


def mini_cc_record(t: Transcript, now: datetime) -> dict[str, Any]:
    last = t.last or {}
    ts = now.isoformat(timespec="milliseconds")
    return {"type": "user", "uuid": str(uuid.uuid4()), "parentUuid": last.get("uuid"),
            "sessionId": last.get("sessionId", t.id), "timestamp": ts, "cwd": last.get("cwd"),
            "message": {"role": "user", "content": _results(t.dangling)}}


def encode_like(rec: dict[str, Any], sample: bytes) -> bytes:
    """One line in the file's own style: Python's default ", "/": " separators when the last record
    used them (mini-cc's Python writer), compact otherwise; raw non-ASCII either way."""
    spaced = b'", "' in sample or b'": ' in sample
    seps = (", ", ": ") if spaced else (",", ":")
    return json.dumps(rec, ensure_ascii=False, separators=seps).encode("utf-8") + b"\n"


def append_op(t: Transcript, tool: str, line: bytes) -> WriteFile:
    """Append ``line`` at the end of the file; apply re-checks the fingerprint first."""
    return WriteFile(path=str(t.path), expect=Fingerprint.of(t.path), patches=(Patch(t.size, b"", line),),
                     session={"tool": tool, "id": t.id}, reason="answer the dangling tool_use")

