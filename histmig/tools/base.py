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
