"""A file rewrite's journaled intent kept as its bytes until undo folds it into its unit (a move's
many patches, one per line, beside them as columns: ``uf.compact_patches``).

Undo reads every finished intent before it works out any inverse (which operations finished is
known only at the journal's end). Parsed, a rewrite's intent is ~2.9 KB of dicts (its ``pre`` stat,
its ``post``, its backup, its patches); as the line's bytes beside the few keys asked of every intent
before the fold (``n``, ``method``, ``path``, ``session``) it is ~1.1 KB. The finished intents of a
flip of 8,000 sessions: 32.7 MB, now 23.2 MB, the rest being the facts below (docs/safety.md, "What
undo holds"). The facts later records add (``done``, ``post``, ``settled``, ...) go on the packed
record as they would on the parsed one and are laid over the parsed line by :func:`unpack`, in the
order they came, so the record it gives is the one undo read before, key for key.
"""
from __future__ import annotations

from typing import Any

import orjson

from histmig.verbs.undo import files as uf
from histmig.verbs.undo.rows import shared_session

RAW = "\0raw"            # the journaled line (no journal key starts with a NUL)
PRE_SHA = "\0pre_sha256"  # a ``ready`` record's hash of the original, for ``pre``
PATCHES = "\0patches"     # many patches, as columns: the record's last key, left out of its bytes
PACKED = frozenset({"replace", "inplace"})      # the file rewrites: nearly every intent of a journal
_LIGHT = ("kind", "n", "method", "path", "session")


def pack(rec: dict[str, Any], sessions: dict) -> dict[str, Any]:
    """``rec`` (a parsed intent) as its light keys and its bytes; any other intent compacted as
    before (``uf.compact_patches``). ``sessions``: one dict per session for every record."""
    many = len(rec.get("patches") or ()) >= uf.COMPACT_MIN
    if rec.get("method") not in PACKED or (many and next(reversed(rec)) != "patches"):
        uf.compact_patches(rec)
        return rec
    light = {k: rec[k] for k in _LIGHT if k in rec}
    if "session" in light:
        light["session"] = shared_session(light["session"], sessions)
    if many:        # a move's, one per line: kept as columns beside the bytes (the record's last key)
        held = {"patches": rec.pop("patches")}
        uf.compact_patches(held)
        light[PATCHES] = held["patches"]
    # copied: what orjson.dumps returns keeps the whole buffer it encoded into (4 KiB for these
    # ~900 bytes), which held more than the parsed record did
    light[RAW] = bytes(memoryview(orjson.dumps(rec)))
    return light


def set_pre_sha(rec: dict[str, Any], sha: str) -> None:
    """A ``ready`` record's hash of the original file, as ``pre``'s ``sha256``."""
    if RAW in rec:
        rec[PRE_SHA] = sha
    else:
        rec["pre"] = {**rec["pre"], "sha256": sha}


def unpack(rec: dict[str, Any] | None) -> dict[str, Any] | None:
    """The intent as undo reads it: parsed, the later facts laid over it (its bytes hold fewer
    patches than ``uf.compact_patches`` compacts; more are beside them, compacted)."""
    if rec is None or RAW not in rec:
        return rec
    full = orjson.loads(rec[RAW])
    for k, v in rec.items():
        if k == PRE_SHA:
            full["pre"] = {**full["pre"], "sha256": v}
        elif k == PATCHES:
            full["patches"] = v
        elif k != RAW:
            full[k] = v
    return full
