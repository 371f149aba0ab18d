"""One line of a move: which values to rewrite (field finders). The verified surgical edit of those
values is ``jsonio.lineedit.edit_strings`` (re-exported here as ``line_patches``): every edited line
is re-parsed and compared with the object we meant to produce before its patches count.
"""
from __future__ import annotations

import re
from typing import Any

from histmig.jsonio.lineedit import edit_strings as line_patches

__all__ = ["FieldEdit", "JsonPath", "line_patches", "path_strings", "field_at", "content_regex", "content_edits"]

JsonPath = tuple
FieldEdit = tuple[JsonPath, str, str]          # (path in the record, old value, new value)


# ---- field finders ---------------------------------------------------------------------------

def path_strings(value: Any, pm, prefix: JsonPath = ()) -> list[FieldEdit]:
    """Every string in ``value`` that *is* a path under OLD (not text that mentions one)."""
    out: list[FieldEdit] = []
    if isinstance(value, str):
        new = pm.rebase(value)
        if new is not None and new != value:
            out.append((prefix, value, new))
    elif isinstance(value, dict):
        for k, v in value.items():
            out.extend(path_strings(v, pm, prefix + (k,)))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out.extend(path_strings(v, pm, prefix + (i,)))
    return out


def field_at(obj: Any, path: JsonPath, pm) -> list[FieldEdit]:
    """The edit for one named field, if it holds a path under OLD."""
    cur = obj
    for step in path:
        if isinstance(cur, dict) and isinstance(step, str) and step in cur:
            cur = cur[step]
        else:
            return []
    new = pm.rebase(cur)
    return [(path, cur, new)] if new is not None and new != cur else []


_CONTENT_CACHE: dict[Any, re.Pattern] = {}


def content_regex(pm) -> re.Pattern:
    if pm not in _CONTENT_CACHE:
        alts = "|".join(re.escape(o) for o in pm.olds)
        # OLD preceded by no path character, followed by '/', or by anything that cannot continue
        # a file name: "/a/app/x", "/a/app." and "(/a/app)" match; "/a/app2" and "/x/a/app" do not.
        _CONTENT_CACHE[pm] = re.compile(rf"(?<![\w.\-/])(?:{alts})(?![\w\-]|\.\w)")
    return _CONTENT_CACHE[pm]


def content_edits(obj: Any, pm, done: set) -> list[FieldEdit]:
    """``--rewrite-content``: every string value mentioning OLD, with OLD replaced by NEW."""
    rx = content_regex(pm)
    out: list[FieldEdit] = []

    def walk(value: Any, prefix: JsonPath) -> None:
        if prefix in done:
            return
        if isinstance(value, str):
            if any(o in value for o in pm.olds):
                new = rx.sub(lambda m: pm.new, value)
                if new != value:
                    out.append((prefix, value, new))
        elif isinstance(value, dict):
            for k, v in value.items():
                walk(v, prefix + (k,))
        elif isinstance(value, list):
            for i, v in enumerate(value):
                walk(v, prefix + (i,))

    walk(obj, ())
    return out
