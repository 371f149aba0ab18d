"""What ``histmig archive`` keeps of a copilot session: every file of its session folder (histmig/verbs/archive)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from histmig.tools.base import files_below


def files(ref: Any) -> list[Path]:
    return files_below(Path(ref.path).parent)
