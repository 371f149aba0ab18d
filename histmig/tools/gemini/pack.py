"""Gemini CLI's part of ``pack`` / ``unpack`` (docs/pack.md; histmig/toolkit/pack.py says what each hook does).

A session is its chat file ``tmp/<slug>/chats/session-….jsonl`` and the folder's ownership marker
``tmp/<slug>/.project_root`` (the project path: docs/specs/gemini.md), byte for byte; ``--rehome``
rewrites the marker's path. The registry ``projects.json`` is not carried: Gemini CLI finds the folder
by its marker (docs/gemini.md). On unpack a session goes to the slug folder the local Gemini uses for
its (re-homed) project: the one the local registry or a marker names, else the packed slug when it is
free here and one Gemini would claim for that path, else the next free one (the client adopts a folder
whose marker names its cwd, docs/specs/gemini.md §1; ``files.project_slug``).
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from histmig.toolkit.pack import Entry, Rebase, default_entry, inside, rehomed_cwd
from histmig.tools.gemini import files
from histmig.tools.gemini.files import MARKER


def entry(homes: Any, ref: Any) -> Entry:
    out = default_entry(homes.gemini, ref)
    marker = Path(ref.path).parent.parent / MARKER
    rel = inside(homes.gemini, marker)
    if out.files and rel is not None and marker.is_file():
        out.files.append((marker, rel))
    return out


def place(homes: Any, rel: str, session: dict[str, Any], rebase: Rebase) -> Path:
    """``tmp/<packed slug>/…`` goes to ``tmp/<the local slug of the project>/…``."""
    parts = rel.split("/")
    gdir = files.gemini_dir(homes)
    cwd = rehomed_cwd(session, rebase) or session.get("cwd")
    if len(parts) >= 3 and parts[0] == "tmp" and isinstance(cwd, str) and cwd:
        parts[1] = local_slug(gdir, cwd, parts[1])
    return gdir.joinpath(*parts)


def local_slug(gdir: Path, cwd: str, packed: str) -> str:
    """The slug Gemini uses here for ``cwd``: a known one, else ``packed`` when free here and of the family
    Gemini claims for the path (``app``, ``app-1``, ...: two projects of one bundle keep distinct folders),
    else the first free one."""
    slug, known = files.project_slug(gdir, cwd)
    if known:
        return slug
    family = re.fullmatch(re.escape(files.slug_of(cwd)) + r"(-[0-9]+)?", packed)
    taken = set(files.read_registry(gdir).values())
    free = packed not in taken and not (gdir / "tmp" / packed).exists() and not (gdir / "history" / packed).exists()
    return packed if family and free else slug


def rule(rel: str):
    return ("patch", _marker) if rel.endswith("/" + MARKER) else None


def _marker(data: bytes, pm: Any) -> list[Any]:
    from histmig.core.plan import Patch  # noqa: PLC0415 (pack, which only reads, never loads the plan model)
    text = data.decode("utf-8", "surrogateescape")
    path = text.strip()
    new = pm.rebase(path)
    if new is None or new == path:
        return []
    start = text.index(path)
    return [Patch(len(text[:start].encode("utf-8", "surrogateescape")), path.encode("utf-8", "surrogateescape"),
                  new.encode("utf-8", "surrogateescape"))]
