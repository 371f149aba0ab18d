"""The pattern of ``histmig search``: how it matches decoded text, and the plain bytes every matching
JSON line must contain (docs/search.md, "How it is fast").

A JSON writer may escape some characters of a string (``"``, ``\\``, control characters, non-ASCII as
``\\uXXXX``, ``/``, and ``<``, ``>``, ``&``, ``'`` for some writers), so only the runs of the pattern
made of other ASCII characters appear in a file's bytes exactly as typed. The longest such run is the
**needle**: a line without it cannot match, and is never parsed. A pattern without one (all CJK, say)
has no needle: every line is parsed.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from histmig.core.diagnostics import UsageError

# characters some JSON writer may escape: never part of a needle
_ESCAPABLE = set('"\\/<>&\'')
_META = set(".^$*+?()[]{}|")


def plain(ch: str) -> bool:
    return " " <= ch <= "~" and ch not in _ESCAPABLE


@dataclass(frozen=True)
class Query:
    pattern: str
    regex: bool
    ignore_case: bool
    matcher: re.Pattern
    needle: bytes | None        # lower-cased when ignore_case

    @classmethod
    def make(cls, pattern: str, *, regex: bool = False, case: str = "smart") -> "Query":
        """``case``: ``smart`` (insensitive unless the pattern has an upper-case letter, as ripgrep),
        ``ignore`` (-i) or ``sensitive`` (-s)."""
        if not pattern:
            raise UsageError("search: the pattern is empty")
        ignore = case == "ignore" or (case == "smart" and not _has_upper(pattern, regex))
        # an ASCII literal folds ASCII only, as its needle does (re would also fold the Kelvin sign into k)
        flags = (re.IGNORECASE | (re.ASCII if not regex and pattern.isascii() else 0)) if ignore else 0
        try:
            matcher = re.compile(pattern if regex else re.escape(pattern), flags)
        except re.error as e:
            raise UsageError(f"search: not a valid regular expression: {pattern!r} ({e})") from None
        runs = regex_runs(pattern) if regex else [pattern]
        needle = max((run for text in runs for run in _plain_runs(text)), key=len, default="")
        if needle and regex and ignore and not needle.isascii():
            needle = ""
        raw = needle.encode()
        return cls(pattern, regex, ignore, matcher, (raw.lower() if ignore else raw) or None)


def _has_upper(pattern: str, regex: bool) -> bool:
    # in a regex, \W \S \D \B are classes, not letters the user typed
    text = re.sub(r"\\.", "", pattern) if regex else pattern
    return any(c.isupper() for c in text)


def _plain_runs(text: str) -> list[str]:
    runs, cur = [], []
    for ch in text:
        if plain(ch):
            cur.append(ch)
        else:
            runs.append("".join(cur))
            cur = []
    runs.append("".join(cur))
    return [r for r in runs if r]


def regex_runs(pattern: str) -> list[str]:
    """Literal runs every match of ``pattern`` must contain, read conservatively: none when the
    pattern has an alternation or an inline flag; only runs outside groups and classes; a character
    a quantifier may drop is not part of a run."""
    if "|" in pattern or "(?" in pattern:
        return []
    runs: list[str] = []
    cur: list[str] = []
    depth, i = 0, 0

    def cut() -> None:
        if cur:
            runs.append("".join(cur))
            cur.clear()

    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern):
            nxt = pattern[i + 1]
            lit = None if nxt.isalnum() else nxt       # \d \w \b \1 ... are not literals
            i += 2
        elif ch in "[{":                           # a class, or a count that belongs to what came before
            end = pattern.find("]" if ch == "[" else "}", i + 2 if ch == "[" else i + 1)
            i = len(pattern) if end < 0 else end + 1
            cut()
            continue
        elif ch in "()":
            depth += 1 if ch == "(" else -1
            cut()
            i += 1
            continue
        elif ch in _META:
            cut()
            i += 1
            continue
        else:
            lit = ch
            i += 1
        if lit is None or depth:
            cut()
            continue
        if i < len(pattern) and pattern[i] in "?*{":    # this character may be absent
            cut()
            continue
        cur.append(lit)
        if i < len(pattern) and pattern[i] == "+":       # present at least once: the run ends here
            cut()
    cut()
    return runs
