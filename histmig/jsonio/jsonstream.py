"""Write a large JSON document a piece at a time, byte for byte as ``orjson`` with ``OPT_INDENT_2``
would write it whole (what ``emit_json`` prints), so ``show --format json|native`` never holds
every record of a session at once.

A list to stream is wrapped in :class:`Lazy` (any iterable, consumed once); a value known only after
the lists before it were written (a count) is wrapped in :class:`Later`.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable

import orjson

OPTIONS = orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS


class Lazy:
    def __init__(self, items: Iterable[Any]):
        self.items = items


class Fields(dict):
    """A dict written one value at a time (a record whose ``raw`` is megabytes: one copy of it at
    a time, not of the whole record's text)."""


class Plain:
    """A value known to hold no ``Lazy``, ``Later`` or ``Fields``: written with one ``orjson`` call,
    without looking inside it first (``scan --json`` writes thousands of small ones)."""

    __slots__ = ("value",)

    def __init__(self, value: Any):
        self.value = value


class Later:
    def __init__(self, compute: Callable[[], Any]):
        self.compute = compute


BIG_STRING = 1 << 16


def spread(value: Any, big: int = BIG_STRING) -> Any:
    """``value`` with every dict and list that holds a string of ``big`` characters or more (at any
    depth) written a member at a time (:class:`Fields`, :class:`Lazy`): such a string is encoded alone,
    not inside the text of everything around it (and that text indented once more). Written to the
    same bytes; a value without such a string is returned as is."""
    if isinstance(value, str) or not _holds_big(value, big):
        return value
    if isinstance(value, dict):
        return Fields({k: spread(v, big) for k, v in value.items()})
    return Lazy([spread(v, big) for v in value])


def _holds_big(value: Any, big: int) -> bool:
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            if len(v) >= big:
                return True
        elif isinstance(v, dict):
            stack.extend(v.values())
        elif isinstance(v, (list, tuple)):
            stack.extend(v)
    return False


def _streamed(v: Any) -> bool:
    if isinstance(v, (Lazy, Later, Fields)):
        return True
    if isinstance(v, dict):
        return any(_streamed(x) for x in v.values())
    if isinstance(v, list):
        return any(_streamed(x) for x in v)
    return False


def write_json(value: Any, write: Callable[[str], Any], *, default: Callable[[Any], Any] | None = None,
               indent: int = 0) -> None:
    """``write`` the pieces of ``orjson.dumps(value, option=OPT_INDENT_2 | OPT_NON_STR_KEYS)``."""
    if isinstance(value, Later):
        value = value.compute()
    if isinstance(value, Plain) or not _streamed(value):
        value = value.value if isinstance(value, Plain) else value
        text = orjson.dumps(value, option=OPTIONS, default=default).decode()
        write(text.replace("\n", "\n" + " " * indent) if indent else text)
        return
    pad = " " * (indent + 2)
    if isinstance(value, dict):   # Fields, or a dict holding a Lazy
        opening, closing, entries = "{", "}", ((k, v) for k, v in value.items())
    else:
        items = value.items if isinstance(value, Lazy) else value
        opening, closing, entries = "[", "]", ((None, v) for v in items)
    first = True
    batch: list[Any] = []                # Plain items of a list, written BATCH at a time
    for key, item in entries:
        if key is None and isinstance(item, Plain):
            batch.append(item.value)
            if len(batch) == BATCH:
                _write_batch(batch, first, indent, write, default)
                first, batch = False, []
            continue
        if batch:
            _write_batch(batch, first, indent, write, default)
            first, batch = False, []
        head = ("" if not first else opening) + ("\n" if first else ",\n") + pad
        if key is not None:
            head += orjson.dumps(key, option=OPTIONS, default=default).decode() + ": "
        if isinstance(item, Plain):
            text = orjson.dumps(item.value, option=OPTIONS, default=default).decode()
            write(head + text.replace("\n", "\n" + pad))
        else:
            write(head)
            write_json(item, write, default=default, indent=indent + 2)
        first = False
    if batch:
        _write_batch(batch, first, indent, write, default)
        first = False
    write(opening + closing if first else "\n" + " " * indent + closing)


# list items written with one ``orjson`` call (scan --json: 2,000 sessions are 32 calls, not 2,000; a
# batch of rows is tens of KB: 256 raised the peak RSS by 2 MB, 64 by 0.7 MB)
BATCH = 64


def _write_batch(values: list[Any], first: bool, indent: int, write: Callable[[str], Any],
                 default: Callable[[Any], Any] | None) -> None:
    """Items of a list at ``indent`` as the item-by-item loop writes them: ``orjson`` writes a list's items
    two spaces in, so its text without the brackets, each line moved ``indent`` further, is those items."""
    text = orjson.dumps(values, option=OPTIONS, default=default).decode()[2:-2]
    shift = " " * indent
    write(("[\n" if first else ",\n") + shift + (text.replace("\n", "\n" + shift) if indent else text))
