"""One module per session format; each exposes ``ADAPTER`` (the protocol is in histmig.tools)."""
from __future__ import annotations

from typing import Any, Callable


class FunctionAdapter:
    """An adapter whose operations are plain functions of its format module: ``read``,
    ``serialize``, ... are stored as given and called without ``self``."""

    def __init__(self, name: str, lossless_parts: frozenset[str], **operations: Callable[..., Any]):
        self.name = name
        self.lossless_parts = lossless_parts
        self.__dict__.update(operations)


def files_below(folder: Any) -> list[Any]:
    """Every regular file below ``folder``, sorted, symlinks neither followed nor listed (the ``archive``
    hook of tools that keep a session as a folder: histmig/verbs/archive)."""
    import os
    from pathlib import Path
    out = []
    for dirpath, dirnames, filenames in os.walk(folder, followlinks=False):
        dirnames.sort()
        out += [p for p in (Path(dirpath) / n for n in sorted(filenames)) if p.is_file() and not p.is_symlink()]
    return out
