"""What one line of a Codex rollout is (docs/specs/codex.md): its type, payload, whether it is a
conversation message or a real user prompt, and the first line's ``session_meta``, read alone. Shared
by the adapter (reading whole sessions), the listing (``listread``) and the flip's dry run.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson

from histmig.core.diagnostics import HistmigInputError
from histmig.jsonio.jsonl import is_zst, open_regular_fd, open_stream
from histmig.jsonio.marks import ValueMark

# injected context that appears as role=user messages (docs/specs/codex.md §5): never a title
INJECTED_PREFIXES = ("<environment_context", "# AGENTS.md instructions", "<permissions",
                     "<user_instructions", "<INSTRUCTIONS>", "<user_shell_command")

# ---- line classification --------------------------------------------------------------------

def line_type(obj: Any) -> str | None:
    """The envelope ``type`` of a parsed line, or ``"legacy:<type>"`` for pre-envelope lines."""
    if not isinstance(obj, dict):
        return None
    if "payload" in obj and isinstance(obj.get("type"), str):
        return obj["type"]
    if "record_type" in obj:
        return "legacy:state"
    if isinstance(obj.get("type"), str):
        return "legacy:" + obj["type"]
    if "id" in obj and "timestamp" in obj:
        return "legacy:session_meta"
    return None


def payload(obj: Any) -> dict:
    p = obj.get("payload") if isinstance(obj, dict) else None
    return p if isinstance(p, dict) else {}


def message_text(item: dict) -> str:
    content = item.get("content")
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "\n".join(c.get("text", "") for c in content if isinstance(c, dict) and isinstance(c.get("text"), str))


def is_injected(text: str) -> bool:
    return text.lstrip().startswith(INJECTED_PREFIXES)


def user_prompt(obj: Any) -> str | None:
    """The text of a real user prompt on this line, or None (injected context, developer, other)."""
    t = line_type(obj)
    item = payload(obj) if t == "response_item" else (obj if t == "legacy:message" else None)
    if item is not None:
        if item.get("type") == "message" and item.get("role") == "user":
            text = message_text(item)
            return None if is_injected(text) or not text.strip() else text
        return None
    if t == "event_msg" and payload(obj).get("type") == "user_message":
        text = payload(obj).get("message")
        return text if isinstance(text, str) and text.strip() and not is_injected(text) else None
    return None


def is_conversation_message(obj: Any) -> bool:
    if isinstance(obj, dict) and "payload" in obj and obj.get("type") == "response_item":
        item = obj["payload"]             # (line_type's first case, asked of every line a listing counts)
        if not isinstance(item, dict):
            return False
    else:
        item = obj if line_type(obj) == "legacy:message" else None
    if not item or item.get("type") != "message":
        return False
    role = item.get("role")
    return role == "assistant" or (role == "user" and not _opens_injected(item))


def _opens_injected(item: dict) -> bool:
    """``is_injected(message_text(item))`` without joining the parts (a listing asks it of every user
    message): the joined text starts at the first part holding more than blanks, the joints are
    newlines, and no prefix holds one."""
    content = item.get("content")
    if isinstance(content, str):
        return is_injected(content)
    for c in content if isinstance(content, list) else ():
        if isinstance(c, dict) and isinstance(text := c.get("text"), str) and (text := text.lstrip()):
            return text.startswith(INJECTED_PREFIXES)
    return False


# ---- heads: what a listing needs -------------------------------------------------------------

FIRST_CHUNK = 64 * 1024
FIRST_READ = 32 * 1024          # one read covers the usual ~20 KB line 1 (base instructions)


def first_line(path: str | os.PathLike, *, limit: int = 64 * 1024 * 1024) -> bytes:
    """The first line of a rollout (plain or ``.zst``), reading no further than needed.
    A line with no newline within ``limit`` bytes (checked in 64 KB steps) is refused."""
    return bytes(_first_line_view(path, limit))


def _first_line_view(path, limit: int) -> bytes | memoryview:
    """:func:`first_line` without copying the usual case (the line ends inside the first read)."""
    if is_zst(path):
        return _first_line_stream(path, limit)
    fd = open_regular_fd(path)
    try:
        return _first_line_fd(fd, path, limit)
    finally:
        os.close(fd)


def _first_line_fd(fd: int, path, limit: int) -> bytes | memoryview:
    data = os.read(fd, FIRST_READ)
    nl = data.find(b"\n")
    if nl >= 0:
        return _accept(memoryview(data)[:nl + 1], nl, path, limit)
    parts, size = [data], len(data)
    # then the 64 KB chunks of the stream reader, aligned as it reads them: a chunk is read when
    # it starts at or before ``limit``, so both readers accept and refuse the same lines
    while data and size // FIRST_CHUNK * FIRST_CHUNK <= limit:
        data = os.read(fd, FIRST_CHUNK - size % FIRST_CHUNK)
        nl = data.find(b"\n")
        if nl >= 0:
            parts.append(data[:nl + 1])
            return _accept(b"".join(parts), size + nl, path, limit)
        parts.append(data)
        size += len(data)
    if size > limit:
        raise HistmigInputError(f"first line exceeds {limit} bytes", path=path)
    return b"".join(parts)


def _accept(line, nl_at: int, path, limit: int):
    """The limit rule of the 64 KB chunked reader: a newline is found when the chunk holding it
    starts at or before ``limit``."""
    if nl_at // FIRST_CHUNK * FIRST_CHUNK > limit:
        raise HistmigInputError(f"first line exceeds {limit} bytes", path=path)
    return line


def _first_line_stream(path, limit: int) -> bytes:
    buf = bytearray()
    with open_stream(path) as fh:
        while len(buf) <= limit:
            chunk = fh.read(FIRST_CHUNK)
            if not chunk:
                break
            nl = chunk.find(b"\n")
            if nl >= 0:
                buf += chunk[:nl + 1]
                return bytes(buf)
            buf += chunk
    if len(buf) > limit:
        raise HistmigInputError(f"first line exceeds {limit} bytes", path=path)
    return bytes(buf)


def meta_of(obj: Any) -> dict | None:
    """The SessionMeta payload of a parsed first line (envelope or pre-envelope)."""
    t = line_type(obj)
    if t == "session_meta":
        return payload(obj)
    if t == "legacy:session_meta":
        return obj
    return None


def head_obj(path: Path) -> tuple[dict | None, dict | None, str | None]:
    """``(line 1 object, session_meta payload, error)`` reading line 1 only: the cheap test a flip
    dry run needs. Pre-envelope files give a payload with no envelope (``"payload" not in obj``)."""
    body = _json_text(_first_line_view(path, 64 * 1024 * 1024))
    try:                     # orjson alone: fast; the strict duplicate-key check runs only on failure
        obj = orjson.loads(body)
    except orjson.JSONDecodeError:
        from histmig.jsonio.jsonl import parse_json
        obj, err = parse_json(bytes(body))
        return None, None, f"line 1 unreadable ({err or 'not valid JSON'})"
    meta = meta_of(obj)
    if meta is None:
        return obj, None, "line 1 is not a session_meta"
    return obj, meta, None


def _json_text(line):
    """``line.rstrip(b"\\r\\n").removeprefix(BOM)`` as a view: line 1 is ~20 KB, read thousands of times."""
    end = len(line)
    while end and line[end - 1] in (10, 13):
        end -= 1
    start = 3 if end >= 3 and line[:3] == b"\xef\xbb\xbf" else 0
    return memoryview(line)[start:end]


def head_meta(path: Path) -> tuple[dict | None, str | None]:
    """``(session_meta payload, error)`` from line 1 only."""
    _obj, meta, err = head_obj(path)
    return meta, err


def prompt_title(text: str | None) -> str | None:
    if text is None:
        return None
    text = text.removeprefix("## My request for Codex:").strip()
    first = text.splitlines()[0] if text else ""
    return first[:120] or None


# Every line ``is_conversation_message`` counts holds its ``"type":"message"`` (payload or
# pre-envelope line): a listing parses only the lines with that marker (listread.py).
MESSAGE_MARK = ValueMark(b"type", b"message")


def tail_turn_cwd(data: bytes, start: int, lo: int = 0) -> str | None:
    """``_latest_turn_cwd`` of the file's last bytes ``data[lo:]``, read from offset ``start`` (a
    line cut by that offset left out; ``lo``: a caller holding the whole file passes no copy)."""
    from histmig.jsonio.marks import last_lines_with, parse_line
    if start > 0:
        nl = data.find(b"\n", lo)
        if nl < 0:
            return None
        lo = nl + 1
    for raw in last_lines_with(data, b'"turn_context"', lo):
        obj = parse_line(1, raw)[0]        # never line 1 of the file: no BOM to strip
        if line_type(obj) == "turn_context" and isinstance(payload(obj).get("cwd"), str):
            return payload(obj)["cwd"]
    return None
