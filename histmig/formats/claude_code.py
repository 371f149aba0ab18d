"""Claude Code transcripts: ``<config>/projects/<slug>/<uuid>.jsonl`` (claude-code.md §1-§6).

Reading keeps every line's bytes. Adjacent assistant lines that share ``message.id`` (Claude writes
one line per content block) become one Record whose ``raw`` is the concatenation of those lines.
Sub-agent files (``<sid>/subagents/**/agent-*.jsonl``, 2.0-era ``agent-*.jsonl`` beside sessions)
are attached to their parent Session and are never listed as sessions themselves.

The block → Part mapping here is shared with mini-cc (same Anthropic Messages content blocks).
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Iterable, Iterator

import orjson

from histmig.diagnostics import HistmigError, Warning
from histmig.jsonl import Line, head_lines, read_lines, tail_lines
from histmig.model import (Attachment, Opaque, Part, Reasoning, Record, Session, SessionRef, Text,
                           ToolCall, ToolResult)
from histmig.paths import SLUG_MAX, claude_slug

NAME = "claude-code"
UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", re.I)
HEAD_TAIL = 64 * 1024                      # Claude's lite listing reads 64 KB at each end (Tr=65536)
CHAIN_TYPES = frozenset({"user", "assistant", "attachment", "system", "progress"})
SDK_ENTRYPOINTS = frozenset({"sdk-cli", "sdk-ts", "sdk-py"})
# context the client injects into user turns (reminders, slash-command echoes, hook output)
INJECTED_RE = re.compile(
    r"^\s*<(?:system-reminder|command-name|command-message|command-args|local-command-[\w-]+"
    r"|user-prompt-submit-hook|bash-input|bash-stdout|bash-stderr|task-notification)[\s>]"
    r"|^\[Request interrupted by user[^\]]*\]")
# the picker's "not a real prompt" test, verbatim from the client (claude-code.md §5.1)
NOT_PROMPT_RE = re.compile(r"^(?:\s*<[a-z][\w-]*[\s>]|\[Request interrupted by user[^\]]*\])")
_CWD_RAW_RE = re.compile(rb'(?<!\\)"cwd"\s*:\s*("(?:[^"\\]|\\.)*")')


# ---- content blocks → parts (shared with mini-cc) --------------------------------------------

def is_injected_text(text: str) -> bool:
    return bool(INJECTED_RE.match(text))


def block_to_part(block: Any, *, injected: bool = False, structured: Any = None) -> Part:
    """One Anthropic content block as a Part; unknown blocks become Opaque (raw keeps them)."""
    if not isinstance(block, dict):
        return Opaque(block, "not a content block")
    t = block.get("type")
    if t == "text" and isinstance(block.get("text"), str):
        return Text(block["text"], injected=injected or is_injected_text(block["text"]))
    if t == "thinking":
        return Reasoning(text=block.get("thinking") or "", signature=block.get("signature"))
    if t == "redacted_thinking":
        return Reasoning(redacted=True, encrypted=block.get("data"))
    if t == "tool_use":
        return ToolCall(str(block.get("id")), str(block.get("name")), block.get("input"))
    if t == "tool_result":
        return ToolResult(str(block.get("tool_use_id")), block.get("content"),
                          is_error=bool(block.get("is_error")), structured=structured)
    if t in ("image", "document"):
        source = block.get("source") if isinstance(block.get("source"), dict) else {}
        return Attachment(media_type=source.get("media_type"), data=block)
    return Opaque(block, f"{t} block")


def content_parts(content: Any, *, injected: bool = False, structured: Any = None) -> list[Part]:
    """Parts of a message ``content`` (a string or a list of blocks). ``structured`` (Claude's
    ``toolUseResult``) goes to the record's single tool_result, if there is exactly one."""
    if isinstance(content, str):
        return [Text(content, injected=injected or is_injected_text(content))]
    if not isinstance(content, list):
        return [] if content is None else [Opaque(content, "content is not a list")]
    results = sum(1 for b in content if isinstance(b, dict) and b.get("type") == "tool_result")
    keep = structured if results == 1 else None
    return [block_to_part(b, injected=injected, structured=keep) for b in content]


def kind_of(role: str | None, parts: list[Part]) -> str:
    if any(isinstance(p, ToolResult) for p in parts):
        return "tool_result"
    if any(isinstance(p, ToolCall) for p in parts):
        return "tool_call"
    if parts and all(isinstance(p, Reasoning) for p in parts):
        return "reasoning"
    return "message"


# ---- parts → content blocks (for records without raw) ----------------------------------------

def part_to_block(p: Part) -> dict:
    """The Anthropic block for a Part. A Reasoning without a genuine signature is never written as
    ``thinking`` (the API verifies signatures); converters report that loss themselves."""
    if isinstance(p, Text):
        return {"type": "text", "text": p.text}
    if isinstance(p, Reasoning):
        if p.signature:
            return {"type": "thinking", "thinking": p.text, "signature": p.signature}
        if p.redacted and p.encrypted:
            return {"type": "redacted_thinking", "data": p.encrypted}
        return {"type": "text", "text": p.text or p.summary}
    if isinstance(p, ToolCall):
        args = p.arguments if isinstance(p.arguments, dict) else {"input": p.arguments}
        return {"type": "tool_use", "id": p.call_id, "name": p.name, "input": args}
    if isinstance(p, ToolResult):
        block = {"type": "tool_result", "tool_use_id": p.call_id, "content": p.output}
        return {**block, "is_error": True} if p.is_error else block
    if isinstance(p, Attachment):
        if isinstance(p.data, dict):
            return p.data
        return {"type": "image", "source": {"type": "base64", "media_type": p.media_type, "data": p.data}}
    return p.data if isinstance(p.data, dict) else {"type": "text", "text": str(p.data)}


def parts_to_content(parts: list[Part], *, as_string: bool) -> Any:
    if as_string and len(parts) == 1 and isinstance(parts[0], Text):
        return parts[0].text
    return [part_to_block(p) for p in parts]


def message_skeleton(message: dict) -> dict:
    """The message without its content (kept in ``extra``); "" or [] marks the content's form."""
    return {k: (("" if isinstance(v, str) else []) if k == "content" else v) for k, v in message.items()}


def build_message(skeleton: dict | None, rec: Record) -> dict:
    msg = dict(skeleton) if skeleton else {"role": rec.role}
    msg["content"] = parts_to_content(rec.parts, as_string=isinstance(msg.get("content"), str))
    if rec.usage is not None and "usage" in msg:
        msg["usage"] = rec.usage
    return msg


# ---- lines → records --------------------------------------------------------------------------

NAMED_KEYS = ("parentUuid", "type", "message", "uuid", "timestamp")


def opaque_record(line: Line, reason: str) -> Record:
    extra = {} if line.raw is not None else {"offset": line.offset, "length": line.length}
    return Record(raw=line.raw, line=line.number, opaque_reason=reason, extra=extra)


def _message_id(obj: dict) -> str | None:
    msg = obj.get("message")
    if obj.get("type") == "assistant" and isinstance(msg, dict) and isinstance(msg.get("id"), str):
        return msg["id"]
    return None


def record_from_group(group: list[tuple[Line, dict]]) -> Record:
    """One Record from one line, or from adjacent assistant lines sharing ``message.id``."""
    first = group[0][1]
    t = first.get("type")
    msg = first.get("message") if isinstance(first.get("message"), dict) else None
    injected = bool(first.get("isMeta"))
    parts: list[Part] = []
    for _, obj in group:
        m = obj.get("message") if isinstance(obj.get("message"), dict) else None
        if m is not None:
            parts += content_parts(m.get("content"), injected=injected, structured=obj.get("toolUseResult"))
    extra = {k: v for k, v in first.items() if k not in NAMED_KEYS}
    if msg is not None:
        extra["message"] = message_skeleton(msg)
    role, kind = _role_kind(t, first, parts)
    if t == "system" and isinstance(first.get("content"), str):
        parts = [Text(first["content"], injected=True)]
    elif t == "summary" and isinstance(first.get("summary"), str):
        parts = [Text(first["summary"], injected=True)]
    last_msg = group[-1][1].get("message")
    usage = last_msg.get("usage") if isinstance(last_msg, dict) else None
    return Record(id=_str(first.get("uuid")), parent_id=_str(first.get("parentUuid")), kind=kind,
                  role=role, timestamp=_str(first.get("timestamp")), parts=parts,
                  usage=usage if isinstance(usage, dict) else None, extra=extra,
                  raw=b"".join(ln.raw for ln, _ in group), line=group[0][0].number,
                  lines=len(group), source_type=t if isinstance(t, str) else None)


def _role_kind(t: Any, obj: dict, parts: list[Part]) -> tuple[str | None, str]:
    if t in ("user", "assistant"):
        return t, kind_of(t, parts)
    if t == "system":
        return "system", "event"
    if t == "summary":
        return None, "summary"
    return None, "event"


def _str(v: Any) -> str | None:
    return v if isinstance(v, str) else None


def records_from_lines(lines: Iterable[Line]) -> Iterator[Record]:
    group: list[tuple[Line, dict]] = []
    group_id: str | None = None
    for line in lines:
        obj = None if line.blank else line.obj
        mid = _message_id(obj) if isinstance(obj, dict) else None
        if group and (mid is None or mid != group_id):
            yield record_from_group(group)
            group, group_id = [], None
        if line.blank:
            yield Record(raw=line.raw, line=line.number, source_type="blank")
        elif line.error is not None:
            yield opaque_record(line, line.error)
        elif not isinstance(obj, dict):
            yield opaque_record(line, "not a JSON object")
        elif mid is not None:
            group.append((line, obj))
            group_id = mid
        else:
            yield record_from_group([(line, obj)])
    if group:
        yield record_from_group(group)


# ---- records → bytes --------------------------------------------------------------------------

def encode_record(rec: Record) -> bytes:
    """A changed or new record as one compact line in Claude 2.1 key order: ``parentUuid`` first
    and ``uuid``/``timestamp`` adjacent (its >5 MB fast reader depends on both, §4.4); metadata
    records start with ``type`` (readers match ``{"type":"custom-title"`` at line start)."""
    extra = dict(rec.extra)
    obj: dict[str, Any] = {}
    chain = rec.source_type in CHAIN_TYPES or rec.role in ("user", "assistant")
    if chain:
        obj["parentUuid"] = rec.parent_id
        for key in ("isSidechain", "promptId", "agentId"):
            if key in extra:
                obj[key] = extra.pop(key)
    obj["type"] = rec.source_type or rec.role
    skeleton = extra.pop("message", None)
    if rec.role in ("user", "assistant"):
        obj["message"] = build_message(skeleton, rec)
        results = [p for p in rec.parts if isinstance(p, ToolResult) and p.structured is not None]
        if len(results) == 1 and "toolUseResult" not in extra:
            extra["toolUseResult"] = results[0].structured
    elif skeleton is not None:
        obj["message"] = build_message(skeleton, rec)
    if rec.id is not None:
        obj["uuid"] = rec.id
    if rec.timestamp is not None:
        obj["timestamp"] = rec.timestamp
    obj.update(extra)
    return orjson.dumps(obj) + b"\n"


def record_bytes(rec: Record, source: Path | None, encode=encode_record) -> bytes:
    """``raw`` verbatim; an over-limit opaque line copied from its source; else ``encode``."""
    if rec.raw is not None:
        return rec.raw
    if rec.opaque and "offset" in rec.extra:
        if source is None:
            raise HistmigError("an over-limit line cannot be written without its source file")
        with open(source, "rb") as fh:
            fh.seek(rec.extra["offset"])
            return fh.read(rec.extra["length"])
    return encode(rec)


def serialize(session: Session) -> bytes:
    return b"".join(record_bytes(r, session.path) for r in session.records)


# ---- titles and summaries ---------------------------------------------------------------------

def first_prompt(records: Iterable[Record]) -> str | None:
    """The first real user prompt, skipping what the picker skips (isMeta, tool results,
    ``<command-name>`` echoes, reminders, "[Request interrupted by user]")."""
    for r in records:
        if r.role != "user" or r.opaque or r.extra.get("isMeta") or r.kind == "tool_result":
            continue
        for p in r.parts:
            if isinstance(p, Text) and p.text.strip() and not NOT_PROMPT_RE.match(p.text):
                return p.text.strip()
    return None


def named_title(records: Iterable[Record]) -> str | None:
    """The last ``custom-title``, else the last ``ai-title``."""
    custom = ai = None
    for r in records:
        if r.source_type == "custom-title" and isinstance(r.extra.get("customTitle"), str):
            custom = r.extra["customTitle"]
        elif r.source_type == "ai-title" and isinstance(r.extra.get("aiTitle"), str):
            ai = r.extra["aiTitle"]
    return custom or ai


def first_value(records: Iterable[Record], key: str) -> Any:
    for r in records:
        if isinstance(r.extra.get(key), str):
            return r.extra[key]
    return None


def count_messages(records: Iterable[Record]) -> int:
    """User and assistant messages (an assistant turn split over lines counts once)."""
    return sum(1 for r in records if r.role in ("user", "assistant") and not r.opaque)


def broken_warnings(records: Iterable[Record], path: Path | None) -> list[Warning]:
    out = []
    for r in records:
        if r.opaque:
            out.append(Warning("broken-line", f"kept as is: {r.opaque_reason}",
                               str(path) if path else None, r.line))
    return out


# ---- reading whole sessions -------------------------------------------------------------------

def _path_of(src: Any) -> Path:
    return Path(src.path) if isinstance(src, SessionRef) else Path(src)


def is_agent_file(path: Path) -> bool:
    """A sub-agent transcript: ``<sid>/subagents/[<dir>/]agent-*.jsonl`` or 2.0-era
    ``projects/<slug>/agent-*.jsonl``."""
    if not (path.name.startswith("agent-") and path.name.endswith(".jsonl")):
        return False
    return "subagents" in (path.parent.name, path.parent.parent.name) or path.parent.parent.name == "projects"


def read_file(path: Path) -> Session:
    """One transcript file as a Session, without sub-agents."""
    records = list(records_from_lines(read_lines(path)))
    session = Session(id=path.stem if path.name.endswith(".jsonl") else path.name, format=NAME,
                      path=path, records=records)
    session.cwd = first_value(records, "cwd")
    session.created = next((r.timestamp for r in records if r.timestamp), None)
    session.updated = path.stat().st_mtime
    tail_prompt = [r.extra["lastPrompt"] for r in records
                   if r.source_type == "last-prompt" and isinstance(r.extra.get("lastPrompt"), str)]
    session.title = named_title(records) or first_prompt(records) or (tail_prompt[-1] if tail_prompt else None)
    session.model = last_model(records)
    if is_agent_file(path):
        session.parent_id = first_value(records, "sessionId")
    session.meta = {k: v for k in ("entrypoint", "version", "gitBranch")
                    if (v := first_value(records, k)) is not None}
    session.warnings = broken_warnings(records, path)
    return session


def last_model(records: list[Record]) -> str | None:
    for r in reversed(records):
        model = (r.extra.get("message") or {}).get("model") if r.role == "assistant" else None
        if isinstance(model, str) and model != "<synthetic>":
            return model
    return None


def read(src: Any) -> Session:
    """The session with every line kept; sub-agent transcripts attached as ``subagents``."""
    path = _path_of(src)
    session = read_file(path)
    if not is_agent_file(path):
        session.subagents = [read_file(p) for p in subagent_files(path)]
    return session


def _walk_files(top: Path) -> Iterator[Path]:
    """Files below ``top`` without following symlinked folders."""
    for dirpath, dirnames, filenames in os.walk(top, followlinks=False):
        dirnames.sort()
        for name in sorted(filenames):
            yield Path(dirpath) / name


def subagent_files(main: Path, legacy: dict[Path, Any] | None = None) -> list[Path]:
    """Sub-agent transcripts of the session in ``main``: the 2.1.x ``<sid>/subagents/`` tree and
    2.0-era ``agent-*.jsonl`` beside it whose records name this session. ``legacy`` (from
    ``legacy_agents``) saves listing the folder again for every session of a big folder."""
    sid = main.stem
    out = [p for p in _walk_files(main.parent / sid / "subagents")
           if p.name.startswith("agent-") and p.name.endswith(".jsonl")]
    legacy = legacy_agents(main.parent) if legacy is None else legacy
    return out + [p for p, owner in legacy.items() if owner == sid]


def legacy_agents(folder: Path) -> dict[Path, Any]:
    """2.0-era ``agent-*.jsonl`` files of a project folder and the session each one names."""
    return {p: head_value(p, "sessionId") for p in sorted(folder.glob("agent-*.jsonl")) if p.is_file()}


def head_value(path: Path, key: str) -> Any:
    """The first top-level ``key`` in the first 64 KB of a file, or None (also when unreadable)."""
    try:
        return first_value(records_from_lines(head_lines(path, max_lines=10**6, max_bytes=HEAD_TAIL)), key)
    except (HistmigError, OSError):
        return None


# ---- detect and discover ----------------------------------------------------------------------

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


def projects_root(homes: Any) -> Path:
    return Path(homes.claude) / "projects"


def subdirs(root: Path) -> list[Path]:
    try:
        return sorted(d for d in root.iterdir() if d.is_dir() and not d.is_symlink())
    except OSError:
        return []


def session_files(folder: Path) -> list[Path]:
    """What Claude lists in a project folder: ``<uuid>.jsonl`` files (§5.1)."""
    try:
        return sorted(p for p in folder.iterdir()
                      if p.name.endswith(".jsonl") and UUID_RE.match(p.name[:-6]) and not p.is_dir())
    except OSError:
        return []


def discover(homes: Any) -> Iterator[SessionRef]:
    for folder in subdirs(projects_root(homes)):
        legacy = legacy_agents(folder)
        for path in session_files(folder):
            yield ref_for(path, legacy)


def ref_for(path: Path, legacy: dict[Path, Any] | None = None) -> SessionRef:
    """List one session from its first and last 64 KB; a broken file gives a ref with ``error``."""
    ref = SessionRef(format=NAME, id=path.stem, path=path)
    try:
        st = path.stat()
        ref.size, ref.updated = st.st_size, st.st_mtime
        head, tail, whole = scan_ends(path, st.st_size)
        summarize(ref, head, tail, whole)
    except (HistmigError, OSError) as e:
        ref.error = e.describe() if isinstance(e, HistmigError) else (e.strerror or str(e))
        ref.state.append("unreadable")
    agents = len(subagent_files(path, legacy)) if ref.error is None else 0
    if agents:
        ref.extra["subagents"] = agents
    return ref


def scan_ends(path: Path, size: int, parse=None) -> tuple[list[Record], list[Record], bool]:
    """Records of the head and the tail (each ~64 KB); a small file is read once, whole.
    ``parse`` turns lines into records (default: Claude's)."""
    parse = parse or records_from_lines
    if size <= 2 * HEAD_TAIL:
        records = list(parse(read_lines(path)))
        return records, [], True
    head_l = head_lines(path, max_lines=10**6, max_bytes=HEAD_TAIL)
    end = max((ln.offset + (ln.length or 0) for ln in head_l), default=0)
    tail_l = [ln for ln in tail_lines(path, max_bytes=HEAD_TAIL) if ln.offset >= end]
    return list(parse(head_l)), list(parse(tail_l)), False


def summarize(ref: SessionRef, head: list[Record], tail: list[Record], whole: bool) -> None:
    ends = head + tail
    ref.cwd = first_value(head, "cwd") or raw_cwd(head)
    ref.created = next((r.timestamp for r in head if r.timestamp), None)
    prompts = [r.extra["lastPrompt"] for r in ends
               if r.source_type == "last-prompt" and isinstance(r.extra.get("lastPrompt"), str)]
    ref.title = named_title(ends) or first_prompt(head) or (prompts[-1] if prompts else None)
    ref.messages = count_messages(head) if whole else None
    entrypoint = first_value(head, "entrypoint")
    if entrypoint:
        ref.extra["entrypoint"] = entrypoint
    broken = sum(1 for r in ends if r.opaque)
    if broken:
        ref.state.append(f"{broken} broken line" + ("s" if broken != 1 else ""))
    hidden = picker_hidden(head, entrypoint)
    if hidden:
        ref.extra["picker_hidden"] = hidden
        ref.state.append(f"not in picker ({hidden})")


def raw_cwd(records: list[Record]) -> str | None:
    """The first ``"cwd":"…"`` in the bytes, as Claude's lite reader finds it (also in lines
    that do not parse as a whole)."""
    for r in records:
        m = _CWD_RAW_RE.search(r.raw or b"")
        if m:
            try:
                value = orjson.loads(m.group(1))
            except orjson.JSONDecodeError:
                continue
            if isinstance(value, str):
                return value
    return None


def picker_hidden(head: list[Record], entrypoint: str | None) -> str | None:
    """Why Claude's picker filters this session out (§5.1), or None."""
    if entrypoint in SDK_ENTRYPOINTS:
        return f"entrypoint {entrypoint}"
    for r in head:
        if r.extra.get("isSidechain") is True:
            return "sidechain in head"
        if "teamName" in r.extra or "sessionKind" in r.extra:
            return "team or daemon session"
    return None


# ---- locating a project's folders -------------------------------------------------------------

def project_dirs(root: Path, cwd: str) -> list[Path]:
    """Folders under ``root`` (a ``projects/`` dir) that hold ``cwd``'s sessions: the computed
    slug, and for slugs over 200 characters every ``<200-char prefix>-*`` sibling whose sessions
    record exactly ``cwd`` (Bun-hash era names cannot be recomputed, §2.3)."""
    slug = claude_slug(cwd)
    exact = root / slug
    out = [exact] if exact.is_dir() else []
    if len(slug) > SLUG_MAX:
        prefix = slug[:SLUG_MAX] + "-"
        for d in subdirs(root):
            if d != exact and d.name.startswith(prefix) and folder_has_cwd(d, cwd):
                out.append(d)
    return out


def folder_has_cwd(folder: Path, cwd: str) -> bool:
    return any(head_value(p, "cwd") == cwd for p in session_files(folder))


def sessions_for_cwd(homes: Any, cwd: str) -> list[SessionRef]:
    """The sessions recorded in ``cwd``; a folder may also hold other cwds with the same slug
    (``/a/t_b`` and ``/a/t-b``), so each session's own head cwd decides."""
    refs = []
    for folder in project_dirs(projects_root(homes), cwd):
        refs += [r for r in map(ref_for, session_files(folder)) if r.cwd == cwd]
    return refs


class _Adapter:
    name = NAME
    lossless_parts = frozenset({"text", "tool_call", "tool_result", "attachment"})
    detect = staticmethod(detect)
    discover = staticmethod(discover)
    read = staticmethod(read)
    serialize = staticmethod(serialize)
    encode_record = staticmethod(encode_record)
    project_dirs = staticmethod(project_dirs)


ADAPTER = _Adapter()
