"""What other transactions say about the one being undone: which of its operations an earlier
undo already reverted, and which paths and rows a later transaction changed since (those
sessions wait until that transaction is undone first)."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from histmig.apply.journal import JOURNAL, begin_head, done_ns, iter_records, tx_root, tx_state, txid_sort_key
from histmig.verbs.undo.coverage import Covered, reverted_by_journal

LIVE = ("committed", "partly-undone")


@dataclass
class Later:
    """Paths and rows written by transactions after this one that are still applied."""

    paths: dict[str, str] = field(default_factory=dict)      # path -> txid (op)
    rows: dict[tuple, str] = field(default_factory=dict)      # (db, table, key) -> txid (op)

    def path_owner(self, path: str) -> str | None:
        """The later transaction that wrote ``path`` or a folder above it."""
        p = path
        while True:
            if p in self.paths:
                return self.paths[p]
            parent = os.path.dirname(p)
            if parent == p:
                return None
            p = parent

    def below(self, folder: str) -> str | None:
        """A later transaction that wrote something inside ``folder``."""
        prefix = folder.rstrip("/") + "/"
        return next((who for p, who in self.paths.items() if p.startswith(prefix)), None)


def row_key(db: str, row: dict) -> tuple:
    # a shift's rows by its key (``where``: a thread), as a later shift of the same thread names them;
    # copied to its size: what orjson.dumps returns keeps its whole 4 KiB buffer, and undo of an older
    # transaction keeps one key for every row a later one changed (a flip of 8,000 sessions undone after
    # a later flip: 141 MB, now 91 MB)
    return db, row["table"], bytes(memoryview(orjson.dumps(row.get("key") or row.get("where") or row.get("rows"),
                                                           option=orjson.OPT_SORT_KEYS)))


@dataclass
class History:
    covered: Covered
    later: Later


def load(state_dir: Path, txid: str, own: list[dict[str, Any]]) -> History:
    covered = Covered()
    for r in own:
        if r["kind"] == "undo-by":
            covered.add(r.get("ns", []))
        elif r["kind"] == "undo-done":                 # undone by an older histmig
            covered.add([r["n"]])
    marked = {r.get("txid") for r in own if r["kind"] == "undo-by"}   # their exact parts: just above
    later = Later()
    root = tx_root(state_dir)
    me = txid_sort_key(txid)
    for entry in sorted(os.scandir(root), key=lambda e: txid_sort_key(e.name)):
        if txid_sort_key(entry.name) <= me or not (Path(entry.path) / JOURNAL).exists():
            continue        # only later transactions change what this one left, or undo it
        state = tx_state(Path(entry.path))
        begin = begin_head(Path(entry.path))
        if begin.get("op") == "undo":
            # an undo whose mark was lost (a crash before ``undo-by``): what its own journal says
            # it finished (verbs/undo/coverage.py)
            args = begin.get("args") or {}
            if state == "committed" and args.get("of") == txid and entry.name not in marked:
                covered.add(reverted_by_journal(args, _light_records(Path(entry.path))))
            continue
        if state in LIVE:          # (a rolled-back or undone one changed nothing that stays: not read)
            _add_touches(later, _light_records(Path(entry.path)), f"{entry.name} ({begin.get('op', '?')})")
    return History(covered, later)


# what this module and coverage.py read of a later transaction's records: never the whole
# journal parsed (a move of 8,000 sessions journals 37 MB, 150 MB as objects), but one record at a
# time cut to these keys, a long database intent's rows left in the file (``LazyRows``, for a line of
# 1 MiB or more: read under the global lock, as ``load`` is) and ``begin`` without its list of
# operations (parsed, then dropped)
_KEPT = ("kind", "n", "method", "path", "dst", "ops", "rows", "txid")


def _light_records(folder: Path) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for r in iter_records(folder, lazy_rows=True):
        if r["kind"] == "begin":
            out.append({k: r[k] for k in ("kind", "op", "args") if k in r})
        else:
            out.append({k: r[k] for k in _KEPT if k in r})
    return out


def _add_touches(later: Later, recs: list[dict], who: str) -> None:
    done = done_ns(recs)
    for r in recs:
        if r["kind"] != "intent" or r["n"] not in done:
            continue
        if r["method"] == "sql":
            for row in r.get("rows", []):
                later.rows[row_key(r["path"], row)] = who
            continue
        later.paths[r["path"]] = who
        if r.get("dst"):
            later.paths[r["dst"]] = who
