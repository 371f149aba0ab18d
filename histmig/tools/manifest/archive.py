"""What ``histmig archive`` keeps of a manifest-layout session: every file of its session folder."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from histmig.tools.base import files_below


def files(ref: Any) -> list[Path]:
    p = Path(ref.path)
    return files_below(p if p.is_dir() else p.parent)
