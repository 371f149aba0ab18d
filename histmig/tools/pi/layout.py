"""Where Pi (``@mariozechner/pi-coding-agent``) keeps its sessions (docs/pi.md).

The agent dir is ``$PI_CODING_AGENT_DIR`` (default ``~/.pi/agent``); sessions live in
``<agent dir>/sessions/--<slug>--/`` where the slug is the cwd without its leading separator and with
every ``/``, ``\\`` and ``:`` turned into ``-`` (lossy: ``/a-b`` and ``/a/b`` share a folder). A session
dir named by ``--session-dir``, ``$PI_CODING_AGENT_SESSION_DIR`` or ``settings.json`` ``sessionDir`` is
flat: no folder per project, the header ``cwd`` alone says where a session belongs.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson

from histmig.core.diagnostics import HistmigInputError
from histmig.jsonio.regular import read_regular


def pi_slug(cwd: str) -> str:
    """Pi's folder name for ``cwd`` (``getDefaultSessionDir``): ``--home-user-proj--``."""
    body = cwd[1:] if cwd[:1] in ("/", "\\") else cwd
    for ch in "/\\:":
        body = body.replace(ch, "-")
    return f"--{body}--"


def is_slug_dir(name: str) -> bool:
    return name.startswith("--") and name.endswith("--") and len(name) >= 4


def settings_session_dir(agent_dir: Path) -> Path | None:
    """``sessionDir`` of ``<agent dir>/settings.json`` (absolute or ``~``), or None."""
    try:
        data = orjson.loads(read_regular(agent_dir / "settings.json"))     # a FIFO there would block
    except (OSError, HistmigInputError, orjson.JSONDecodeError):
        return None
    value = data.get("sessionDir") if isinstance(data, dict) else None
    if not isinstance(value, str) or not value.strip():
        return None
    value = os.path.expanduser(value)
    return Path(os.path.normpath(value)) if os.path.isabs(value) else None


def sessions_root(homes: Any) -> Path:
    """The folder of per-project slug folders (the default layout)."""
    return Path(homes.pi) / "sessions"


def flat_dir(homes: Any) -> Path | None:
    """The flat session dir, when one is set (``homes.pi_sessions``: the table's Derived path)."""
    found = getattr(homes, "pi_sessions", None)
    return Path(found) if found is not None else None


def session_files(folder: Path) -> list[Path]:
    """``*.jsonl`` files directly in ``folder`` (Pi lists any whose first line is a header)."""
    return [folder / name for name in _session_names(folder)]


def _session_names(folder: Path) -> list[str]:
    return _entries(folder, lambda e: e.name.endswith(".jsonl") and e.is_file(follow_symlinks=False))


def slug_dirs(root: Path) -> list[Path]:
    return [root / name for name in _entries(root, lambda e: is_slug_dir(e.name) and e.is_dir(follow_symlinks=False))]


def _entries(folder: Path, keep) -> list[str]:
    """Sorted names of ``folder``'s entries that ``keep`` (a regular file or folder, never a link: the
    directory entry's type says, no stat per file: a warm scan is a walk + one stat per session)."""
    try:
        with os.scandir(folder) as it:
            return sorted(e.name for e in it if keep(e))
    except OSError:
        return []


def all_session_files(homes: Any) -> list[str]:
    """Every session file Pi would list (``listAll``): each slug folder, then the flat dir. As text: a
    warm listing's ref keeps its path so (histmig/core/model.py), with no ``Path`` made per file."""
    out = [os.path.join(d, name) for d in slug_dirs(sessions_root(homes)) for name in _session_names(d)]
    flat = flat_dir(homes)
    if flat is not None:
        seen = set(out)
        out += [f for f in (os.path.join(flat, name) for name in _session_names(flat)) if f not in seen]
    return out
