"""Merging a moved project's settings into an entry that already exists under the new path."""
from __future__ import annotations

from typing import Any


def merge_entry(target: Any, source: Any, label: str, force: bool, conflicts: list[str]) -> Any:
    """Fields only ``source`` has are added to ``target``; a field both hold with different values
    is a conflict, named ``<label>.<field>`` in ``conflicts``, and keeps the target's value unless
    ``force`` (then the moved project's value wins). Non-dict entries conflict as a whole."""
    if not (isinstance(target, dict) and isinstance(source, dict)):
        if target != source:
            conflicts.append(label)
        return source if force else target
    out = dict(target)
    for f, v in source.items():
        if f not in out:
            out[f] = v
        elif out[f] != v:
            conflicts.append(f"{label}.{f}")
            if force:
                out[f] = v
    return out
