"""Qwen Code's part of ``pack`` / ``unpack`` (docs/pack.md; histmig/toolkit/pack.py says what each hook does).

A session is its file ``projects/<slug of cwd>/chats/<uuid>.jsonl`` (or ``chats/archive/``), byte for
byte, re-homed by the move field rule (``qwen_fields``: every record's ``cwd``). Qwen finds a session only
in the folder named after the cwd it runs in (``qwen -r <id>`` says "No saved session found" elsewhere,
docs/qwen.md), so a re-homed session goes to the folder of its new cwd, the rule ``move`` uses.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from histmig.toolkit.pack import Rebase, rehomed_cwd
from histmig.tools.qwen.adapter import qwen_slug


def place(homes: Any, rel: str, session: dict[str, Any], rebase: Rebase) -> Path:
    """``projects/<old slug>/chats/…`` goes to ``projects/<new slug>/chats/…`` when the cwd is re-homed."""
    parts = rel.split("/")
    new = rehomed_cwd(session, rebase)
    if len(parts) >= 4 and parts[0] == "projects" and parts[2] == "chats" and new is not None:
        parts[1] = qwen_slug(new)
    return Path(homes.qwen).joinpath(*parts)
