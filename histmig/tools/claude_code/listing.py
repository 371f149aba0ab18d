"""Finding and listing Claude Code sessions (docs/specs/claude-code.md §2, §5): project folders, the
``<uuid>.jsonl`` files Claude lists, their sub-agent transcripts, and a ref per session read from
the file's two ends only.

Sub-agent files (``<sid>/subagents/**/agent-*.jsonl``, 2.0-era ``agent-*.jsonl`` beside sessions)
belong to their parent session and are never listed as sessions themselves.
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Iterable, Iterator

import orjson

from histmig.core.diagnostics import HistmigError
from histmig.jsonio.jsonl import Line
from histmig.tools.claude_family.blocks import first_timestamp, first_value, str_or_none
from histmig.tools.claude_code.records import count_messages, line_groups, record_from_group, role_of, title_of
from histmig.tools.claude_family.listing import (broken_lines_state, folder_entries, head_value, list_ends,
                                                 mark_unreadable, session_files, subdirs)
from histmig.core.model import Part, PathRef, Record, SessionRef
from histmig.core.paths import SLUG_MAX, claude_slug

NAME = "claude-code"
SDK_ENTRYPOINTS = frozenset({"sdk-cli", "sdk-ts", "sdk-py"})
_CWD_RAW_RE = re.compile(rb'(?<!\\)"cwd"\s*:\s*("(?:[^"\\]|\\.)*")')


def projects_root(homes: Any) -> Path:
    return Path(homes.claude) / "projects"


# ---- sub-agent transcripts --------------------------------------------------------------------

def is_agent_file(path: Path) -> bool:
    """A sub-agent transcript: ``<sid>/subagents/[<dir>/]agent-*.jsonl`` or 2.0-era
    ``projects/<slug>/agent-*.jsonl``."""
    if not (path.name.startswith("agent-") and path.name.endswith(".jsonl")):
        return False
    return "subagents" in (path.parent.name, path.parent.parent.name) or path.parent.parent.name == "projects"


def _walk_files(top: str | Path) -> Iterator[Path]:
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
    out = [p for p in _walk_files(os.path.join(os.path.dirname(main), sid, "subagents"))
           if p.name.startswith("agent-") and p.name.endswith(".jsonl")]
    legacy = legacy_agents(main.parent) if legacy is None else legacy
    return out + [p for p, owner in legacy.items() if owner == sid]


def legacy_agents(folder: Path, names: Iterable[str] | None = None) -> dict[Path, Any]:
    """2.0-era ``agent-*.jsonl`` files of a project folder and the session each one names; ``names``
    (the folder's entries, when the caller has listed it): none of them such a file, none is looked for."""
    if names is not None and not any(n.startswith("agent-") and n.endswith(".jsonl") for n in names):
        return {}
    return {p: head_value(p, "sessionId", listed_records)
            for p in sorted(folder.glob("agent-*.jsonl")) if p.is_file()}


# ---- one ref per session ----------------------------------------------------------------------

def discover(homes: Any, index: Any = None) -> Iterator[SessionRef]:
    """Every listed session; ``index``: a ``ScanIndex`` that answers for unchanged files. The files to
    read are shared out to every CPU (histmig/toolkit/forklist.py: a batch under 32 MB is read here)."""
    from histmig.toolkit.forklist import list_files
    yield from list_files(_sessions(homes), index, _index_hit, lambda entry, index: ref_for(*entry, index=index),
                          path_of=lambda entry: entry[0])


def paths(homes: Any) -> Iterator[SessionRef]:
    """The transcripts :func:`discover` lists, in its order, each a ``PathRef`` of its path alone:
    nothing is read (``convert --all``/``--from`` reads each session once, when it converts it)."""
    for path, _legacy, _nested in _sessions(homes):
        yield PathRef(format=NAME, id=os.path.basename(path)[:-6], path=path)


def listed(ref: SessionRef) -> SessionRef:
    """The ref ``discover`` gives the file of a ref from :func:`paths` (read again, cold; a listing
    flags a file only for what reading it raises)."""
    return ref_for(ref.path)


def _sessions(homes: Any) -> Iterator[tuple[str, dict[Path, Any], bool]]:
    """``(transcript, the folder's 2.0-era agent files, whether a <sid> entry is beside it)`` of every
    session, folder by folder: one ``scandir`` of a folder gives its transcripts and tells which of
    them can have a ``<sid>/subagents/`` tree, so a warm listing walks no folder that is not there. The
    path as text: a warm ref keeps it so (histmig/core/model.py), with no ``Path`` made per file."""
    for folder in subdirs(projects_root(homes)):
        sessions, names = folder_entries(folder)
        legacy = legacy_agents(folder, names)
        folded = {n.casefold() for n in names}      # (a folder whose name differs in case only is the same
        for name in sessions:                       # one on a case-insensitive disk: walked, as before)
            yield os.path.join(folder, name), legacy, name[:-6].casefold() in folded


def _index_hit(entry: tuple[str, dict[Path, Any], bool], index: Any) -> SessionRef | None:
    """The ref of an unchanged file from the scan index (``list_ends``' first step), or None."""
    from histmig.core.model import stored_ref
    path, legacy, nested = entry
    try:
        st = os.stat(path)
    except OSError:
        return None
    hit = index.hit(path, st, None, FIELDS)
    if hit is None:
        return None
    ref = stored_ref(hit, format=NAME, id=os.path.basename(path)[:-6], path=path, size=st.st_size,
                     updated=st.st_mtime)
    _count_agents(ref, path, legacy, nested)
    return ref


def ref_for(path: str | Path, legacy: dict[Path, Any] | None = None, nested: bool = True, *,
            index: Any = None) -> SessionRef:
    """List one session from its first and last 64 KB (and, past 128 KB, a byte search of the rest for
    the message count); a broken file gives a ref with ``error``. The sub-agent count is the walk's,
    never cached; ``nested`` False: no ``<sid>`` entry is beside the file (``_sessions``)."""
    path = Path(path)
    ref = SessionRef(format=NAME, id=path.stem, path=path)
    try:
        st = path.stat()
        ref.size, ref.updated = st.st_size, st.st_mtime
        list_ends(ref, path, st, listed_records, summarize, index=index, fields=FIELDS)
    except (HistmigError, OSError) as e:
        mark_unreadable(ref, e)
    _count_agents(ref, path, legacy, nested)
    return ref


def _count_agents(ref: SessionRef, path: str | Path, legacy: dict[Path, Any] | None, nested: bool = True) -> None:
    """``extra["subagents"]``: the walk's count, never cached (none to walk for without a ``<sid>``
    entry beside the file or a 2.0-era agent file in its folder)."""
    if ref.error is not None or not (nested or legacy is None or legacy):
        return
    agents = len(subagent_files(Path(path), legacy))
    if agents:
        ref.extra["subagents"] = agents


def summarize(ref: SessionRef, head: list[Record], tail: list[Record], whole: bool) -> None:
    ends = head + tail
    ref.cwd = first_value(head, "cwd") or raw_cwd(head)
    ref.created = first_timestamp(head)
    ref.title = title_of(ends, head)
    ref.messages = count_messages(head) if whole else None
    entrypoint = first_value(head, "entrypoint")
    if entrypoint:
        ref.extra["entrypoint"] = entrypoint
    ref.state += broken_lines_state(ends)
    hidden = picker_hidden(head, entrypoint)
    if hidden:
        ref.extra["picker_hidden"] = hidden
        ref.state.append(f"not in picker ({hidden})")


FIELDS = ("cwd", "created", "title", "messages", "state", "error", "extra")


def listed_records(lines: Iterable[Line]) -> Iterator[Record | ListedRecord]:
    """``records_from_lines`` as ``summarize`` reads it: a blank or broken line's Record as is, each
    other record a :class:`ListedRecord` (building every Record of a file's two ends was 70 % of a cold
    listing's time: docs/scan-show.md, "What a Claude Code listing reads")."""
    for unit in line_groups(lines):
        yield unit if isinstance(unit, Record) else ListedRecord(unit)


class ListedRecord:
    """One record of ``records_from_lines`` as a listing reads it, its Record built only when asked.
    ``role``, ``source_type``, ``timestamp``, ``opaque`` and ``raw`` are the Record's; ``extra`` is the
    first line's object, whose keys are the Record's ``extra`` but for the named ones
    (``records.NAMED_KEYS``) and ``message``, which ``summarize`` never looks up there. ``kind`` and
    ``parts`` build the Record: ``first_prompt`` asks them of the user records before the first prompt.
    tests/test_claude_listed.py compares ``summarize`` over both on every shape."""

    __slots__ = ("group", "extra", "role", "source_type", "timestamp", "_record")
    opaque = False                    # (a line that did not parse is a Record: ``line_groups``)

    def __init__(self, group: list[tuple[Line, dict]]):
        first = group[0][1]
        t = first.get("type")
        self.group, self.extra, self._record = group, first, None
        self.role, self.source_type = role_of(t), t if isinstance(t, str) else None
        self.timestamp = str_or_none(first.get("timestamp"))

    @property
    def raw(self) -> bytes:
        return b"".join(ln.raw for ln, _ in self.group)

    @property
    def record(self) -> Record:
        if self._record is None:
            self._record = record_from_group(self.group)
        return self._record

    @property
    def kind(self) -> str:
        return self.record.kind

    @property
    def parts(self) -> list[Part]:
        return self.record.parts


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
    return any(head_value(p, "cwd", listed_records) == cwd for p in session_files(folder))


def sessions_for_cwd(homes: Any, cwd: str) -> list[SessionRef]:
    """The sessions recorded in ``cwd``; a folder may also hold other cwds with the same slug
    (``/a/t_b`` and ``/a/t-b``), so each session's own head cwd decides."""
    refs = []
    for folder in project_dirs(projects_root(homes), cwd):
        refs += [r for r in map(ref_for, session_files(folder)) if r.cwd == cwd]
    return refs
