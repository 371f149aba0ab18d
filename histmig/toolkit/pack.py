"""What ``pack`` and ``unpack`` (histmig/verbs/pack, histmig/verbs/unpack) hand a tool's ``pack`` hook
and get back; names no tool (docs/pack.md).

A tool's ``pack`` module (``histmig/tools/<tool>/pack.py``) may define:

- ``entry(homes, ref) -> Entry``: the files of one session (absolute path, path inside the tool's home;
  the session's main file first) and the database rows that belong to it, as data; default
  :func:`default_entry` (the session's file)
- ``version(head) -> str | None``: the client version a session records, from the first bytes of its
  main file (read while it is packed: no second read); :func:`first_json` parses them
- ``place(homes, rel, session, rebase) -> Path``: where a packed file goes in the local home; default
  the same path inside the local home (:func:`default_place`)
- ``rows(homes, session, placed, rebase) -> (ops, present)``: the row inserts that make the local
  client list the session, and whether the session's rows are already there (False, True,
  ``"identical"`` or ``"differs"``)
- ``rule(rel) -> (kind, fn) | None``: how ``--rehome`` rewrites one packed file, by move's own rules:
  ``("lines", fields_fn)`` a JSONL file, ``("json", fields_fn)`` one JSON document, ``("patch",
  fn(data, pm) -> [Patch])`` a small file of another format, None: copied as it is. Default: the
  tool's ``fields`` hook on every line
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

Rebase = Callable[[Any], "str | None"]


@dataclass
class Entry:
    """One session's part of a bundle: ``files`` = [(absolute path, path inside the tool's home)],
    ``rows`` = table name -> list of row dicts (JSON values only), ``version`` = the client version
    the session records."""

    files: list[tuple[Path, str]] = field(default_factory=list)
    rows: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    version: str | None = None


def inside(home: Any, path: Any) -> str | None:
    """``path`` relative to ``home`` ('/'-separated), or None when it lies outside (strings, not
    pathlib: a pack of thousands of sessions calls it once per file)."""
    base, full = os.path.abspath(home).rstrip("/") + "/", os.path.abspath(path)
    return full[len(base):] if full.startswith(base) else None


def default_entry(home: Any, ref: Any) -> Entry:
    """The session's own file, when it lies in the tool's home."""
    rel = inside(home, ref.path)
    return Entry(files=[] if rel is None or not os.path.isfile(ref.path) else [(Path(ref.path), rel)])


def first_json(head: bytes, limit: int = 20):
    """The JSON objects of the first ``limit`` whole lines of ``head`` (bad lines skipped); a zstd head
    (``.jsonl.zst``) is decompressed as far as it goes."""
    import orjson  # noqa: PLC0415
    if head[:4] == b"\x28\xb5\x2f\xfd":
        import zstandard  # noqa: PLC0415
        try:
            head = zstandard.ZstdDecompressor().decompressobj().decompress(head)
        except zstandard.ZstdError:
            return
    lines = head.split(b"\n", limit)          # maxsplit: the rest of the head is not cut up
    for raw in lines[:limit] if len(lines) > limit else lines[:-1]:
        try:
            yield orjson.loads(raw)
        except orjson.JSONDecodeError:
            continue


def folder_entry(home: Any, ref: Any, folder: Any) -> Entry:
    """Every regular file under ``folder`` (the session's own folder), its main file first."""
    out = default_entry(home, ref)
    main = {str(p) for p, _ in out.files}
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames.sort()
        for name in sorted(filenames):
            p = os.path.join(dirpath, name)
            rel = inside(home, p)
            if rel is not None and p not in main and os.path.isfile(p) and not os.path.islink(p):
                out.files.append((Path(p), rel))
    return out


def default_place(home: Path, rel: str) -> Path:
    return Path(home) / rel


def rebased(value: Any, rebase: Rebase) -> Any:
    """``value`` re-homed when it is a path under a rebased folder (move's rule: a string that *is* such a
    path), else unchanged."""
    new = rebase(value) if isinstance(value, str) else None
    return value if new is None else new


def rehomed_cwd(session: dict[str, Any], rebase: Rebase) -> str | None:
    """The session's cwd after ``--rehome`` (resolved like the client's ``process.cwd()`` when the folder
    exists here), or None when it is not re-homed: the tools that keep a folder per project name it
    after this (docs/pack.md)."""
    cwd = session.get("cwd")
    new = rebase(cwd) if isinstance(cwd, str) else None
    return None if new is None else os.path.realpath(new) if os.path.isdir(new) else new
