"""What the flip verb and a tool's flip hook share (histmig/tools/__init__.py, hook ``flip``): the typed
refusal of a provider id that looks like a typo, and the did-you-mean that goes with it (issue 12, case 7).
Names no tool.
"""
from __future__ import annotations

from typing import Iterable

from histmig.core.diagnostics import RefusedError


class ProviderTypoError(RefusedError):
    """A provider id that the tool does not know (NEW) or that no session records (OLD)."""

    def __init__(self, message: str, *, known: list[str], suggestion: str | None, path=None):
        super().__init__(message, path=path)
        self.known, self.suggestion = known, suggestion


def did_you_mean(name: str, candidates: Iterable[str]) -> str | None:
    """The closest candidate (difflib, case-insensitive), or None when nothing is close."""
    import difflib  # noqa: PLC0415 (only when a name is unknown: the dry run is benchmarked)
    by_lower: dict[str, str] = {}
    for c in candidates:
        if isinstance(c, str) and c and c != name:
            by_lower.setdefault(c.lower(), c)
    hits = difflib.get_close_matches(name.lower(), list(by_lower), n=1, cutoff=0.6)
    return by_lower[hits[0]] if hits else None
