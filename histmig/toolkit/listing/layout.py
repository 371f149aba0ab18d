"""Fitting a table to a terminal's width: each column's width is its widest cell (display cells,
width.py); when the sum is wider than the terminal, the flexible columns (TITLE, STATE, and CWD and
PATH cut in the middle) give up a cell at a time, the one with the most above its minimum first, and
then optional columns are hidden (docs/scan-show.md, "Width"). ``width=None`` (stdout not a terminal,
no $COLUMNS) fits nothing: a pipe gets whole cells, as before."""
from __future__ import annotations

from dataclasses import dataclass

from histmig.toolkit.listing.width import cut_end, cut_middle, text_width

GAP = 2


@dataclass(frozen=True)
class Column:
    name: str                 # the --columns name
    header: str
    shrink_to: int = 0        # 0: never cut; else the narrowest it is cut to
    middle: bool = False      # cut in the middle (paths), else at the end
    drop: int = 0             # hidden when the terminal is too narrow, lowest first; 0: never


@dataclass
class Fitted:
    columns: list[Column]
    widths: list[int]
    hidden: list[str]         # columns dropped for width


def fit(columns: list[Column], rows: list[list[str]], width: int | None, *, may_drop: bool = True) -> Fitted:
    """The widths to print ``rows`` (cells in ``columns`` order) within ``width`` cells."""
    cols = list(columns)
    natural = {c.name: max([text_width(c.header)] + [text_width(r[i]) for r in rows]) for i, c in enumerate(columns)}
    hidden: list[str] = []
    while True:
        widths = [natural[c.name] for c in cols]
        if width is None or _total(widths) <= width:
            return Fitted(cols, widths, hidden)
        over = _total(widths) - width
        floor = [max(c.shrink_to, text_width(c.header)) if c.shrink_to else widths[i] for i, c in enumerate(cols)]
        while over > 0:                   # one cell at a time from the column with the most to spare
            i = max(range(len(cols)), key=lambda i: (widths[i] - floor[i], -_SHRINK_ORDER.get(cols[i].name, 9)))
            if widths[i] <= floor[i]:
                break
            widths[i] -= 1
            over -= 1
        if over <= 0:
            return Fitted(cols, widths, hidden)
        droppable = [c for c in cols if c.drop] if may_drop else []
        if not droppable:
            return Fitted(cols, widths, hidden)
        gone = min(droppable, key=lambda c: c.drop)
        hidden.append(gone.name)
        cols.remove(gone)


_SHRINK_ORDER = {"title": 0, "tools": 0, "cwd": 1, "key": 1, "path": 2, "state": 3}


def _total(widths: list[int]) -> int:
    return sum(widths) + GAP * (len(widths) - 1)


def render(fitted: Fitted, columns: list[Column], rows: list[list[str]]) -> list[str]:
    """The header line and one line per row; the last column is not padded and lines keep no trailing
    spaces."""
    index = {c.name: i for i, c in enumerate(columns)}
    lines = []
    for row in [[c.header for c in columns]] + rows:
        cells = []
        for n, (c, w) in enumerate(zip(fitted.columns, fitted.widths)):
            text = row[index[c.name]]
            tw = text_width(text)
            if tw > w:
                text = cut_middle(text, w) if c.middle else cut_end(text, w)
                tw = text_width(text)
            cells.append(text if n == len(fitted.columns) - 1 else text + " " * (w - tw))
        lines.append((" " * GAP).join(cells).rstrip())
    return lines
