"""After the bundled samples were copied into a Claude Code home (histmig/cli/samples.py): the
recordings ran with CLAUDE_CONFIG_DIR set, where Claude Code keeps ``.claude.json`` inside that folder;
a home found through HOME alone has it at ``~/.claude.json`` (histmig/tools/__init__.py, ``claude_json``).
The copy is moved there, so the installed home is one Claude Code itself reads (its project entries
then follow a ``move``, as a user's do)."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any


def installed(homes: Any) -> None:
    inside = Path(homes.claude) / ".claude.json"
    target = Path(homes.claude_json)
    if target != inside and inside.is_file() and not target.exists():
        os.replace(inside, target)
