"""Display width of text in a terminal cell grid: East Asian wide and fullwidth characters take two
cells, combining marks none (docs/scan-show.md, "Width"). ``len`` counts code points, which misaligns
columns holding CJK paths."""
from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

ELLIPSIS = "…"
_ASCII = re.compile(r"[\x00-\x7f]+")


@lru_cache(maxsize=4096)
def char_width(ch: str) -> int:
    if unicodedata.combining(ch) or unicodedata.category(ch) in ("Mn", "Me", "Cf"):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def text_width(text: str) -> int:
    """Cells ``text`` takes on a terminal."""
    if text.isascii():
        return len(text)
    rest = _ASCII.sub("", text)              # a listing's cells are mostly ASCII: weigh only the others
    return len(text) - len(rest) + sum(char_width(c) for c in rest)


def _head(text: str, cells: int) -> str:
    """The longest start of ``text`` that fits in ``cells``."""
    used = 0
    for i, c in enumerate(text):
        used += char_width(c)
        if used > cells:
            return text[:i]
    return text


def _tail(text: str, cells: int) -> str:
    """The longest end of ``text`` that fits in ``cells``."""
    used = 0
    for i in range(len(text) - 1, -1, -1):
        used += char_width(text[i])
        if used > cells:
            return text[i + 1:]
    return text


def cut_end(text: str, cells: int) -> str:
    """``text`` in at most ``cells`` cells, an ellipsis at its end when cut (titles)."""
    if text_width(text) <= cells:
        return text
    if cells <= 0:
        return ""
    return _head(text, cells - 1) + ELLIPSIS


def cut_middle(text: str, cells: int) -> str:
    """``text`` in at most ``cells`` cells, an ellipsis in its middle when cut: a path keeps its root
    and its last folders, the parts that tell projects apart."""
    if text_width(text) <= cells:
        return text
    if cells <= 1:
        return ELLIPSIS[:cells]
    room = cells - 1
    tail = _tail(text, room - room // 3)
    head = _head(text, room - text_width(tail))
    return head + ELLIPSIS + tail


def pad(text: str, cells: int, *, right: bool = False) -> str:
    """``text`` padded with spaces to ``cells`` cells (on the left when ``right``: numbers)."""
    fill = " " * max(0, cells - text_width(text))
    return fill + text if right else text + fill
