"""Pi's part of ``pack`` / ``unpack`` (docs/pack.md; histmig/toolkit/pack.py says what each hook does).

A session is its file ``sessions/--<slug of cwd>--/<time>_<id>.jsonl``, byte for byte, re-homed by the
move field rule (``pi_fields``: the header's ``cwd``). Pi finds a project's sessions by the folder named
after the cwd (``pi -c`` takes the newest file there, docs/pi.md), so a re-homed session goes to the
folder of its new cwd, the rule ``move`` uses. A flat session dir (``sessionDir``) keeps its path.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from histmig.toolkit.pack import Rebase, rehomed_cwd
from histmig.tools.pi.layout import is_slug_dir, pi_slug


def place(homes: Any, rel: str, session: dict[str, Any], rebase: Rebase) -> Path:
    """``sessions/--<old slug>--/F`` goes to ``sessions/--<new slug>--/F`` when the cwd is re-homed."""
    parts = rel.split("/")
    new = rehomed_cwd(session, rebase)
    if len(parts) == 3 and parts[0] == "sessions" and is_slug_dir(parts[1]) and new is not None:
        parts[1] = pi_slug(new)
    return Path(homes.pi).joinpath(*parts)
