"""Where a Codex rollout records its model provider, and the byte-level edit that changes it.

What a correct flip edits was measured on Codex 0.171.0 (docs/specs/codex.md §0.4, §15.1): the provider
value in every same-id ``session_meta`` and every ``thread_settings_applied`` line, edited in place
(only the value's bytes, through ``jsonio.lineedit``); with ``strip``, the provider-bound items too.
Used by ``histmig flip`` (verbs/flip: which sessions, and the rows and offsets around the edit) and by
doctor's repair of a rollout that records two providers (tools/codex/doctor_split.py).

Speed: the patches need the whole file (later ``session_meta`` / ``thread_settings_applied`` lines are
spread through it), found by a byte search for the markers before any line is parsed.
"""
from __future__ import annotations

import io
import os
from typing import Any, BinaryIO, Iterator

from histmig.core.diagnostics import HistmigInputError
from histmig.core.plan import Fingerprint, Patch
from histmig.jsonio.jsonl import open_stream, parse_json
from histmig.jsonio.lineedit import INSERT, PAD, REPLACE, Edit, edit_appended, edit_line
from histmig.tools.codex.lines import line_type, payload
from histmig.tools.codex.census import Target

PROVIDER_MARKERS = (b'"session_meta"', b'"thread_settings_applied"')
ENCRYPTED_MARKER = b'"encrypted_content"'
MAX_TARGET_LINE = 64 * 1024 * 1024
CHUNK = 1 << 20


# ---- finding the lines -------------------------------------------------------------------------

def marked_lines(fh: BinaryIO, markers: tuple[bytes, ...], *, hasher=None,
                 max_line: int = MAX_TARGET_LINE) -> Iterator[tuple[int, bytes]]:
    """``(offset, line bytes)`` of each line containing one of ``markers``; other lines are never
    split out or parsed. Memory: one chunk plus the longest line that crosses a chunk boundary."""
    buf, base = b"", 0
    while True:
        data = fh.read(CHUNK)
        if hasher is not None and data:
            hasher.update(data)
        buf = buf + data if buf else data
        end = len(buf) if not data else buf.rfind(b"\n") + 1
        if data and end == 0:
            if len(buf) > max_line:
                raise HistmigInputError(f"a line exceeds {max_line} bytes")
            continue
        yield from _hits(buf, end, markers, base)
        buf, base = buf[end:], base + end
        if not data:
            return


def _hits(buf: bytes, end: int, markers: tuple[bytes, ...], base: int) -> Iterator[tuple[int, bytes]]:
    starts: set[int] = set()
    for marker in markers:
        i = buf.find(marker, 0, end)
        while i >= 0:
            start = buf.rfind(b"\n", 0, i) + 1
            starts.add(start)
            nl = buf.find(b"\n", i, end)
            i = buf.find(marker, end if nl < 0 else nl + 1, end)
    for start in sorted(starts):
        nl = buf.find(b"\n", start, end)
        yield base + start, buf[start:(end if nl < 0 else nl + 1)]


def line_body(line: bytes) -> tuple[int, bytes]:
    """``(offset of the JSON text in the line, JSON text)``: without BOM and terminator."""
    start = 3 if line.startswith(b"\xef\xbb\xbf") else 0
    end = len(line) - (2 if line.endswith(b"\r\n") else 1 if line.endswith(b"\n") else 0)
    return start, line[start:end]


def markers(strip: bool) -> tuple[bytes, ...]:
    return PROVIDER_MARKERS + ((ENCRYPTED_MARKER,) if strip else ())


# ---- what to edit in one line ------------------------------------------------------------------

def line_edits(obj: Any, t: Target, old: str, new: str, strip: bool) -> list[Edit]:
    """The edits of one parsed line: its provider values saying ``old`` (``pad``: same length when
    ``new`` is not longer), a missing ``session_meta`` provider when ``old`` is assumed (``insert``),
    and with ``strip`` the provider-bound items. ``old == new`` (``flip X X --strip-encrypted``) edits
    no provider value."""
    out: list[Edit] = []
    ltype = line_type(obj)
    p = payload(obj)
    if old == new:
        pass
    elif ltype == "session_meta" and p.get("id") == t.thread_id:
        if "model_provider" not in p:
            if t.assumed:
                out.append(Edit(["payload", "model_provider"], new, INSERT))
        elif _matches(p["model_provider"], old, t.assumed):
            out.append(Edit(["payload", "model_provider"], new, PAD))
    elif ltype == "event_msg" and p.get("type") == "thread_settings_applied":
        ts = p.get("thread_settings")
        if isinstance(ts, dict) and "model_provider_id" in ts and _matches(ts["model_provider_id"], old, t.assumed):
            out.append(Edit(["payload", "thread_settings", "model_provider_id"], new, PAD))
    if strip:
        out += _strip_edits(ltype, p, t)
    return out


def _matches(value: Any, old: str, assumed: bool) -> bool:
    return value == old or (assumed and value in (None, ""))


STRIPPED_PREFIX = "histmig_stripped_"
BOUND_ITEMS = ("reasoning", "compaction", "compaction_summary", "context_compaction")


def _strip_edits(ltype, p, t: Target) -> list[Edit]:
    """Take provider-bound items out of what Codex sends: an item ``{"type":"reasoning",
    "encrypted_content":"gAAA..."}`` becomes ``{"type":"histmig_stripped_reasoning",
    "encrypted_content":null}``. Codex 0.171.0 reads an unknown item type as ``Other`` and never
    sends it (verified with the real client; a reasoning item with ``encrypted_content: null`` *is*
    still sent and rejected), and the line stays in place, so ordinals keep counting. Top level and
    inside ``compacted.replacement_history`` (which replaces the history on resume)."""
    items: list[tuple[list, dict]] = []
    if ltype == "response_item":
        items.append((["payload"], p))
    if ltype == "compacted" and isinstance(p.get("replacement_history"), list):
        items += [(["payload", "replacement_history", i], it) for i, it in enumerate(p["replacement_history"])]
    out: list[Edit] = []
    for path, item in items:
        if isinstance(item, dict) and item.get("type") in BOUND_ITEMS and isinstance(item.get("encrypted_content"), str):
            out.append(Edit(path + ["type"], STRIPPED_PREFIX + item["type"], REPLACE))
            out.append(Edit(path + ["encrypted_content"], None, REPLACE))
            t.stripped += 1
    return out


# ---- one file ----------------------------------------------------------------------------------

def scan_patches(t: Target, old: str, new: str, *, strip: bool = False, hash_file: bool = True) -> None:
    """Fill ``t.patches`` and ``t.fingerprint`` from one streaming pass over the file.
    ``hash_file=False``: a plan applied by this process, never written out (``Fingerprint.spans``):
    the apply hashes the file while it writes it, so it is not hashed here too."""
    import hashlib  # noqa: PLC0415 (lazy: the dry run never hashes)
    hasher = None if t.compressed or not hash_file else hashlib.sha256()
    st = os.lstat(t.path)
    with open_stream(t.path) as fh:
        for line_off, line in marked_lines(fh, markers(strip), hasher=hasher):
            body_off, body = line_body(line)
            obj, err = parse_json(body)
            if err:
                continue                      # opaque lines are preserved as they are
            edits = line_edits(obj, t, old, new, strip)
            if edits:
                t.patches += edit_line(body, obj, edits, base=line_off + body_off)
    if not hash_file:
        t.fingerprint = Fingerprint(dev=st.st_dev, ino=st.st_ino, size=st.st_size, mtime_ns=st.st_mtime_ns,
                                    ctime_ns=st.st_ctime_ns, spans=True)
        return
    digest = hasher.hexdigest() if hasher else Fingerprint.of(t.path).sha256
    t.fingerprint = Fingerprint(dev=st.st_dev, ino=st.st_ino, size=st.st_size, mtime_ns=st.st_mtime_ns, sha256=digest,
                                ctime_ns=st.st_ctime_ns)


def patch_appended(data: bytes, t: Target, old: str, new: str, *, strip: bool = False) -> bytes:
    """``data`` (lines appended to ``t``'s rollout after its plan) with the same edits; a line that
    does not parse or whose edit does not verify is kept as it is. Deterministic."""
    def patches_of(body: bytes, base: int) -> list[Patch]:
        obj, err = parse_json(body)
        edits = [] if err else line_edits(obj, t, old, new, strip)
        return edit_line(body, obj, edits, base=base) if edits else []

    return edit_appended(data, _texts(data, markers(strip)), patches_of)


def _texts(data: bytes, marks: tuple[bytes, ...]) -> Iterator[tuple[int, bytes]]:
    """``(offset, JSON text)`` of each marked line of ``data``."""
    for off, line in marked_lines(io.BytesIO(data), marks):
        body_off, body = line_body(line)
        yield off + body_off, body
