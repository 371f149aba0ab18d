"""Where Gemini CLI keeps history (docs/specs/gemini.md §1): the registry ``projects.json`` (absolute
project path -> slug), ``tmp/<slug>/chats/session-<YYYY-MM-DDTHH-MM>-<id8>.jsonl`` (older: ``.json``), and the
ownership markers ``tmp/<slug>/.project_root`` and ``history/<slug>/.project_root`` holding the path.
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import orjson

from histmig.core.diagnostics import HistmigInputError
from histmig.jsonio.regular import read_regular

REGISTRY = "projects.json"
MARKER = ".project_root"
SESSION_RE = re.compile(r"^session-(?P<minute>\d{4}-\d\d-\d\dT\d\d-\d\d)-(?P<short>[^.]{1,8})\.(?P<ext>jsonl|json)$")


def gemini_dir(homes: Any) -> Path:
    return Path(homes.gemini)


def registry_path(gdir: Path) -> Path:
    return gdir / REGISTRY


def _registry(gdir: Path) -> tuple[dict, str | None]:
    """``projects`` of ``projects.json``, and why the file cannot be used (unreadable, not JSON,
    ``projects`` not an object); ({}, None) when it is absent."""
    try:
        data = orjson.loads(read_regular(registry_path(gdir)))   # a FIFO would block
    except FileNotFoundError:
        return {}, None
    except (OSError, HistmigInputError, orjson.JSONDecodeError) as e:
        return {}, str(e)
    projects = data.get("projects") if isinstance(data, dict) else None
    return (projects, None) if isinstance(projects, dict) else ({}, "no 'projects' object")


def registry_error(gdir: Path) -> str | None:
    """Why ``projects.json`` cannot be used; None when it can or is absent."""
    return _registry(gdir)[1]


def read_registry(gdir: Path) -> dict[str, str]:
    """``projects`` of ``projects.json`` (path -> slug); {} when absent or unreadable."""
    return {k: v for k, v in _registry(gdir)[0].items() if isinstance(v, str)}


def slug_of(path: str) -> str:
    """The slug Gemini claims for a new project: the basename lowercased, ``[^a-z0-9]`` -> ``-``, runs
    collapsed, edges trimmed (a collision gets ``-1``, ``-2``, ...; §1)."""
    base = path.rstrip("/").rsplit("/", 1)[-1].lower()
    return re.sub(r"-+", "-", re.sub(r"[^a-z0-9]", "-", base)).strip("-") or "project"


def markers(gdir: Path, slug: str) -> list[Path]:
    return [gdir / "tmp" / slug / MARKER, gdir / "history" / slug / MARKER]


MARKER_MAX = 64 * 1024     # a path (<= 4096 bytes) and a newline; more is not a marker


def read_marker(path: Path) -> str | None:
    # a regular file only (a FIFO named .project_root would block every command), read bounded
    try:
        return read_regular(path, MARKER_MAX).decode("utf-8").strip() or None
    except (HistmigInputError, OSError, UnicodeDecodeError):
        return None


def slug_dirs(gdir: Path) -> list[Path]:
    try:
        return sorted(d for d in (gdir / "tmp").iterdir() if d.is_dir() and not d.is_symlink())
    except OSError:
        return []


def chat_files(slug_dir: Path) -> list[Path]:
    """``session-*.json[l]`` in ``<slug>/chats``, what Gemini's listing reads."""
    return [Path(p) for p in chat_paths(slug_dir)]


def chat_paths(slug_dir: str | Path) -> list[str]:
    """``chat_files`` as text (a warm listing's ref keeps its path so: histmig/core/model.py)."""
    chats = os.path.join(slug_dir, "chats")
    try:         # the entry's type answers is_file (a stat only for a link): a warm scan stats each file once
        with os.scandir(chats) as it:
            return [os.path.join(chats, name) for name in sorted(e.name for e in it if SESSION_RE.match(e.name)
                                                                 and e.is_file())]
    except OSError:
        return []


def project_root(slug_dir: Path, registry: dict[str, str] | None = None) -> str | None:
    """The project a slug folder belongs to: its marker, else the registry's entry naming it."""
    found = read_marker(slug_dir / MARKER)
    if found:
        return found
    reg = registry if registry is not None else read_registry(slug_dir.parent.parent)
    return next((p for p, s in reg.items() if s == slug_dir.name), None)


def session_file_name(minute: str, session_id: str, ext: str = "jsonl") -> str:
    return f"session-{minute}-{session_id[:8]}.{ext}"


def project_slug(gdir: Path, cwd: str) -> tuple[str, bool]:
    """(slug, known): the slug Gemini uses for ``cwd``, or the one it would claim (§1)."""
    registry = read_registry(gdir)
    if registry.get(cwd) and read_marker(gdir / "tmp" / registry[cwd] / MARKER) in (None, cwd):
        return registry[cwd], True
    for slug_dir in slug_dirs(gdir):
        if read_marker(slug_dir / MARKER) == cwd:
            return slug_dir.name, True
    base, taken = slug_of(cwd), set(registry.values())
    n = 0
    while True:
        cand = base if n == 0 else f"{base}-{n}"
        if cand not in taken and not (gdir / "tmp" / cand).exists() and not (gdir / "history" / cand).exists():
            return cand, False
        n += 1
