"""The write-ahead journal: ``<state dir>/tx/<txid>/journal.jsonl`` plus backups in ``b/``.

One JSON record a line, each appended and fsynced before the step it announces (SQLite's rule:
the journal is durable before the data it protects is touched). Record kinds:

``begin`` (op, argv, version, roots) · ``intent`` (n, method, path, pre-state, backup, post) ·
``done`` (n, post) · ``salvaged`` · ``skip`` · ``settled`` (t_s, res, each replaced file's stat) ·
``commit`` · ``rolled-back`` (apply failed or
``recover``; with ``incomplete``, what could not be put back: state ``partly-rolled-back``) ·
``undo-start`` · ``undo-done`` (n) · ``undone``. ``begin`` lists every planned operation
(``ops``: n, method, path) so that backups whose intent was lost can be told apart.

A transaction is *unfinished* when it has ``begin`` but neither ``commit`` nor ``rolled-back``, or
``undo-start`` without ``undone``; every mutating command refuses until ``histmig recover`` ran.
The folder is 0700 and every file is created 0600 at ``open()`` (never chmod-ed afterwards).
"""
from __future__ import annotations

import itertools
import os
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator

import orjson

from histmig.apply import fsio
from histmig.core.diagnostics import HistmigInputError
from histmig.core.locks import ensure_private_dir

JOURNAL = "journal.jsonl"
# An operation put back while its apply still ran: a later file of its session or project folder was
# skipped (histmig/apply/takeback.py). It counts as not done for every reader of the journal.
TAKEN_BACK = "taken-back"


def new_txid(state_dir: Path | None = None) -> str:
    """Sortable by time exactly: UTC time to the microsecond, then 6 random hex digits. Two
    transactions in the same microsecond (or a clock that stepped back) still sort in the order
    they began: the id is made later than every id already in ``state_dir``."""
    now = time.time_ns()
    latest = _latest_txid(state_dir)
    while True:
        secs, ns = divmod(now, 1_000_000_000)
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(secs)) + f".{ns // 1000:06d}Z"
        txid = stamp + "-" + secrets.token_hex(3)
        if latest is None or stamp > txid_sort_key(latest).split("-")[0]:
            return txid
        now += 1000


def _latest_txid(state_dir: Path | None) -> str | None:
    if state_dir is None:
        return None
    try:
        names = [e.name for e in os.scandir(tx_root(state_dir)) if e.is_dir()]
    except FileNotFoundError:
        return None
    return max(names, default=None, key=txid_sort_key)


def txid_sort_key(txid: str) -> str:
    """Older ids (``20261130T050933Z-…``, whole seconds) sort with the new ones
    (``20261130T050933.123456Z-…``): a whole second is the start of that second."""
    stamp = txid.split("-")[0]
    return stamp.replace("Z", ".000000Z") if "." not in stamp else stamp


def tx_root(state_dir: Path) -> Path:
    return Path(state_dir) / "tx"


class Journal:
    def __init__(self, fs: fsio.FS, folder: Path, fd: int):
        self.fs, self.folder, self.fd = fs, Path(folder), fd
        self.txid = self.folder.name
        self.torn = False     # the file may end in half a record (a failed write, a crash)

    @classmethod
    def create(cls, fs: fsio.FS, state_dir: Path, txid: str) -> "Journal":
        root = tx_root(state_dir)
        ensure_private_dir(root)
        folder = root / txid
        fs.mkdir(str(folder), 0o700)
        fs.mkdir(str(folder / "b"), 0o700)
        fd = fs.open_write(str(folder / JOURNAL), flags=fsio.WRITE_FLAGS | os.O_APPEND)
        j = cls(fs, folder, fd)
        fs.fsync_dir(str(folder))
        fs.fsync_dir(str(root))
        return j

    @classmethod
    def reopen(cls, fs: fsio.FS, folder: Path) -> "Journal":
        fd = os.open(Path(folder) / JOURNAL, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC | os.O_NOFOLLOW)
        j = cls(fs, folder, fd)
        size = os.fstat(fd).st_size
        with open(Path(folder) / JOURNAL, "rb") as fh:
            j.torn = size > 0 and os.pread(fh.fileno(), 1, size - 1) != b"\n"
        return j

    @property
    def backups(self) -> Path:
        return self.folder / "b"

    def append(self, kind: str, **data: Any) -> None:
        rec = {"kind": kind, "t": time.time_ns(), **data}
        self._write([orjson.dumps(rec) + b"\n"])

    def append_many(self, records: list[tuple[str, dict[str, Any]]], *, sync: bool = True) -> None:
        """Several records made durable by one write and one fsync (a batch's intents or dones):
        a crash leaves a prefix of them (a torn last line is ignored by :func:`read_records`).
        ``sync=False``: written only; the caller makes them durable with its own batch sync, in
        which it includes :meth:`sync_item`, before any step that needs them."""
        if not records:
            return
        t = time.time_ns()
        data = b"".join(orjson.dumps({"kind": kind, "t": t, **rec}) + b"\n" for kind, rec in records)
        self._write([data], sync=sync)

    def sync_item(self) -> tuple[int, str]:
        """The journal as an item of :meth:`histmig.apply.fsio.FS.fsync_batch` (one ``syncfs`` per
        file system: on the temps' file system the journal costs no sync of its own)."""
        return self.fd, str(self.folder / JOURNAL)

    def append_stream(self, kind: str, head: dict[str, Any], key: str, items, *, sync: bool = True) -> None:
        """One record whose ``key`` is a long list, encoded item by item and written as it is encoded
        (the items are generated and dropped one at a time, and so are their encoded bytes: a flip's
        intent of 14,440 shifted rows is a 6.3 MB line). ``sync=False``: as for :meth:`append_many`.
        An item that fails to generate leaves the record torn, as a failed write does (never read)."""
        rec = orjson.dumps({"kind": kind, "t": time.time_ns(), **head})

        def parts() -> Iterator[bytes]:
            yield rec[:-1] + b',"' + key.encode() + b'":['
            chunk, sep = [], b""
            for item in items:       # encoded 512 at a time: orjson gives each result a >= 1 KiB buffer (4 KiB with 3.13)
                chunk.append(item)
                if len(chunk) == 512:
                    yield sep + orjson.dumps(chunk)[1:-1]
                    chunk, sep = [], b","
            if chunk:
                yield sep + orjson.dumps(chunk)[1:-1]
            yield b"]}\n"
        self._write(parts(), sync=sync)

    def _write(self, parts: Iterable[bytes], *, sync: bool = True) -> None:
        """One counted write and its fsync. A write that failed part-way (disk full) or a crash
        mid-append leaves half a record: the next one starts on a new line, so it is not glued to
        that torn line (which :func:`read_records` skips) and lost with it."""
        label = str(self.folder / JOURNAL)
        if self.torn:
            parts = itertools.chain((b"\n",), parts)
        try:
            self.fs.write_parts(self.fd, parts, label)
        except BaseException:
            self.torn = True
            raise
        self.torn = False
        if sync:
            self.fs.fsync(self.fd, label)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def read_records(folder: Path) -> list[dict[str, Any]]:
    """All complete records; a torn line (crash mid-append) is skipped — its step never ran,
    because every step waits for its record's fsync."""
    return list(iter_records(folder))


def iter_records(folder: Path, *, lazy_rows: bool = False) -> Iterator[dict[str, Any]]:
    """The complete records one at a time, read line by line (an undo of a flip of thousands of
    sessions reads a journal of tens of MB: never the whole file and every record at once).
    ``lazy_rows``: a long record's ``rows`` (a database's intent: tens of thousands of rows) are a
    :class:`LazyRows`, read again from the file slice by slice when iterated, so its reader never
    holds them all (verbs/undo: the rows of a flip of 8,000 sessions are ~40 MB as objects)."""
    path = Path(folder) / JOURNAL
    try:
        fh = open(path, "rb")
    except FileNotFoundError:
        return
    with fh:
        at = 0
        for line in fh:
            start, at = at, at + len(line)
            if not line.strip():
                continue
            try:
                if len(line) < LONG:
                    yield orjson.loads(line)
                elif lazy_rows:
                    yield _long_lazy(line, path, start)
                else:
                    yield _long(line)
            except ValueError:
                continue   # torn (its fsync never completed, so its step never ran); later records are valid


# A record longer than this (an SQL intent's rows: ~330 bytes a row, tens of thousands in a flip of
# thousands of sessions) is parsed a slice of rows at a time: one orjson.loads of a whole 8 MB
# record peaks at ~125 MB (its parse tree next to the objects), slice by slice at the objects. As
# long as a slice, not 1 MiB: a record just under 1 MiB parsed whole held 12 MB (a move's shift rows
# when their edits were a list per edited line, before ``edits_b64``: docs/bench.md, "Memory and
# line count").
LONG = 1 << 18
SLICE = 1 << 18
ROWS, NEXT = b',"rows":[{', b'},{"kind":'


def _long(line: bytes) -> dict[str, Any]:
    """``orjson.loads(line)`` for a long line, equal in result. A record that :meth:`Journal.append_stream`
    wrote ends with its ``rows`` list, each row an object starting with ``"kind"``; neither marker can
    occur inside a JSON string (its quotes would be escaped), so the line is cut there, and a cut
    that is not at the top level (a nested list of the same shape) leaves brackets unbalanced: that
    slice fails to parse and the line is parsed whole."""
    split = _split_rows(line)
    if split is None:
        return orjson.loads(line)
    rec, slices = split
    try:
        rec["rows"] = [row for part in slices for row in part]
    except orjson.JSONDecodeError:
        return orjson.loads(line)
    return rec


def _split_rows(line: bytes) -> tuple[dict[str, Any], Iterator[list]] | None:
    """A long record without its rows, and its rows a slice at a time (each slice parsed when it is
    reached, raising ``orjson.JSONDecodeError`` when the cut was not at the top level); None when the
    line does not end with a ``rows`` list."""
    end = len(line)             # the line without its trailing white space, not copied (megabytes)
    while end and line[end - 1] in b" \t\n\r\x0b\x0c":     # bytes.rstrip()'s white space
        end -= 1
    at = line.find(ROWS, 0, end)
    if at < 0 or not line.endswith(b"]}", 0, end):
        return None
    try:
        rec = orjson.loads(line[:at] + b"}")
    except orjson.JSONDecodeError:
        return None
    if "rows" in rec or not isinstance(rec, dict):
        return None

    def slices() -> Iterator[list]:
        start, last = at + len(ROWS) - 1, end - 2
        while start < last:
            cut = line.find(NEXT, start + SLICE, last)
            stop = last if cut < 0 else cut + 1
            yield orjson.loads(b"[" + line[start:stop] + b"]")
            start = stop + 1
    return rec, slices()


def _long_lazy(line: bytes, path: Path, offset: int) -> dict[str, Any]:
    """:func:`_long` with the rows left in the file: counted now a slice at a time, read again when
    iterated (:class:`LazyRows`). A line the slices do not parse is parsed whole, as by :func:`_long`."""
    split = _split_rows(line)
    if split is None:
        return orjson.loads(line)
    rec, slices = split
    try:
        count = sum(len(part) for part in slices)
    except orjson.JSONDecodeError:
        return orjson.loads(line)
    rec["rows"] = LazyRows(path, offset, len(line), count)
    return rec


class LazyRows:
    """A journal record's ``rows``, read from the journal when iterated, one slice (``SLICE`` bytes
    of rows) at a time. The journal is a finished transaction's, read under the global lock, so the
    line is still the one counted; a line that no longer parses raises ``HistmigInputError``."""

    __slots__ = ("path", "offset", "length", "count")

    def __init__(self, path: Path, offset: int, length: int, count: int) -> None:
        self.path, self.offset, self.length, self.count = path, offset, length, count

    def __len__(self) -> int:
        return self.count

    def __bool__(self) -> bool:
        return self.count > 0

    def slices(self) -> Iterator[list[dict[str, Any]]]:
        try:
            with open(self.path, "rb") as fh:
                fh.seek(self.offset)
                line = fh.read(self.length)
        except OSError as e:
            raise self._changed(f"cannot be read again ({e.strerror or e})") from None
        split = _split_rows(line) if len(line) == self.length else None
        if split is None:
            raise self._changed("changed while it was read")
        seen = 0
        try:
            for part in split[1]:
                seen += len(part)
                yield part
        except orjson.JSONDecodeError:
            raise self._changed("changed while it was read") from None
        if seen != self.count:       # the same length, other rows: the indices would not be the journal's
            raise self._changed(f"holds {seen} rows, not the {self.count} counted")

    def _changed(self, why: str) -> HistmigInputError:
        return HistmigInputError(f"the journal record at byte {self.offset} {why}", path=self.path)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for part in self.slices():
            yield from part


def state_of(records: list[dict[str, Any]]) -> str:
    kinds = [r["kind"] for r in records]
    if "undone" in kinds:
        return "undone"
    undo_marks = [k for k in kinds if k in ("undo-start", "undo-stopped")]
    if undo_marks:
        return "undoing" if undo_marks[-1] == "undo-start" else "partly-undone"
    if "rolled-back" in kinds:
        last = [r for r in records if r["kind"] == "rolled-back"][-1]
        return "partly-rolled-back" if last.get("incomplete") else "rolled-back"
    if "commit" in kinds:
        return "committed"
    return "applying" if kinds else "empty"


UNFINISHED = ("applying", "undoing")


@dataclass
class TxInfo:
    txid: str
    state: str
    op: str = ""
    argv: list[str] = field(default_factory=list)
    started_ns: int = 0
    changes: int = 0
    paths: list[str] = field(default_factory=list)
    kept: list[dict[str, str]] = field(default_factory=list)   # partly-undone: what undo kept, and why

    @property
    def unfinished(self) -> bool:
        return self.state in UNFINISHED

    def to_dict(self) -> dict[str, Any]:
        return {"txid": self.txid, "state": self.state, "op": self.op, "argv": self.argv,
                "started_ns": self.started_ns, "changes": self.changes, "paths": self.paths, "kept": self.kept}


_OPS = b',"ops":['
_CHUNK = 1 << 16


def begin_head(folder: Path) -> dict[str, Any]:
    """The ``begin`` record (the journal's first line) without its ``ops``, or ``{}``: its op, args,
    argv and roots, which ``undo`` and ``gc`` ask of every finished transaction, without parsing the
    operations of the whole plan (megabytes at 8,000 sessions). ``ops`` is that record's last key
    (:meth:`Journal.append_stream`), so the line is read up to ``,"ops":[`` and closed there: the
    marker cannot occur inside a JSON string (its quote would be escaped), and a cut inside a nested
    value leaves two objects open, which does not parse, so the next marker is tried; a line without
    one is parsed whole. Asked of a finished transaction, whose ``begin`` is whole (fsynced before any
    step): a line torn inside its operations still gives its head here."""
    try:
        with open(Path(folder) / JOURNAL, "rb") as fh:
            rec = _head_before_ops(fh)
    except (OSError, orjson.JSONDecodeError):
        return {}
    if not isinstance(rec, dict) or rec.get("kind") != "begin":
        return {}
    rec.pop("ops", None)
    return rec


def tx_op(folder: Path) -> str:
    """The command a transaction ran (``begin``'s ``op``: flip, move, convert, undo, ...), or "" when
    its journal has none (an empty or unreadable one), read with :func:`begin_head`."""
    op = begin_head(folder).get("op", "")
    return op if isinstance(op, str) else ""


def _head_before_ops(fh) -> Any:
    """The first line parsed up to its top-level ``ops`` list (see :func:`begin_head`), read a chunk at
    a time: an undo's ``begin`` holds its units in ``args``, past the first chunk."""
    head, searched = bytearray(), 0
    while True:
        chunk = fh.read(_CHUNK)
        head += chunk
        end = head.find(b"\n", searched)
        stop = len(head) if end < 0 else end
        # (a marker across the last chunk's end is found now; one wholly before it was tried then)
        at = head.find(_OPS, max(0, searched - len(_OPS) + 1), stop)
        while at >= 0:
            try:
                return orjson.loads(head[:at] + b"}")
            except orjson.JSONDecodeError:
                at = head.find(_OPS, at + 1, stop)
        if end >= 0 or not chunk:
            return orjson.loads(head[:stop])          # no top-level ops: the line as it is
        searched = len(head)


def tx_info(folder: Path) -> TxInfo:
    """What ``histmig log`` shows of a transaction, reading its journal one record at a time and
    keeping only that (a move of 8,000 sessions journals 37 MB, which parsed whole was 166 MB:
    docs/safety.md, "Undo", the paragraph on what `log`, `gc`, `recover` and undo's choice read). The same as
    :func:`state_of` and :func:`done_ns` of every record; ``paths``: the files of the finished
    operations, each once, in the order of the first finished intent of each."""
    begin: dict[str, Any] | None = None
    done: set[int] = set()
    intents: list[tuple[int, str]] = []        # (n, path) of every intent, in journal order
    marks: list[dict[str, Any]] = []           # the records state_of decides by (a few)
    any_record = False
    for r in iter_records(folder, lazy_rows=True):
        any_record = True
        kind = r["kind"]
        if kind == "begin":
            if begin is None:
                begin = {"op": r.get("op", ""), "argv": r.get("argv", []), "t": r.get("t", 0)}
        elif kind == "intent":
            if isinstance(r.get("path"), str):       # (every intent names its path; a damaged one is not listed)
                intents.append((r.get("n"), r["path"]))
        elif kind == "done":
            done.add(r["n"])
        elif kind == TAKEN_BACK:
            done.discard(r["n"])
        elif kind in _STATE_KINDS:
            marks.append(r)
    begin = begin or {}
    seen: set[str] = set()
    paths = [path for n, path in intents if n in done and not (path in seen or seen.add(path))]
    state = _lost_begin(folder, state_of(marks) if marks else "applying" if any_record else "empty")
    stopped = [r for r in marks if r["kind"] == "undo-stopped"]
    kept = [k if isinstance(k, dict) else {"path": k, "reason": "", "code": ""}
            for k in (stopped[-1].get("skipped", []) if stopped and state == "partly-undone" else [])]
    return TxInfo(txid=Path(folder).name, state=state, op=begin.get("op", ""), argv=begin.get("argv", []),
                  started_ns=begin.get("t", 0), changes=len(done), paths=paths, kept=kept)


def done_ns(records) -> set[int]:
    """The operations a transaction finished and kept (``done``, not ``taken-back`` after it)."""
    done: set[int] = set()
    for r in records:
        if r["kind"] == "done":
            done.add(r["n"])
        elif r["kind"] == TAKEN_BACK:
            done.discard(r["n"])
    return done


_STATE_KINDS = ("undone", "undo-start", "undo-stopped", "rolled-back", "commit")


def tx_state(folder: Path) -> str:
    """:func:`state_of` without parsing every record: a transaction of 30,000 records is decided by
    the few state records in it, found by their first bytes (every record starts with its kind) and
    parsed alone so a torn line still does not count. Read a line at a time: every command checks
    every transaction's state before it runs, and a whole journal of tens of MB read at once was
    undo's peak memory (docs/safety.md, "What undo holds")."""
    last = _last_state_records(Path(folder) / JOURNAL)
    if last is None:
        return "empty"
    if "undone" in last:
        return "undone"
    marks = [last[k][0] for k in ("undo-start", "undo-stopped") if k in last]
    if marks:
        return "undoing" if last.get("undo-start", (-1,))[0] == max(marks) else "partly-undone"
    if "rolled-back" in last:
        return "partly-rolled-back" if orjson.loads(last["rolled-back"][1]).get("incomplete") else "rolled-back"
    if "commit" in last:
        return "committed"
    return _lost_begin(folder, "applying" if _any_record(folder) else "empty")   # rare


_KIND = b'{"kind":"'
_STATE_BY_NAME = {k.encode(): k for k in _STATE_KINDS}


def _last_state_records(path: Path) -> dict[str, tuple[int, bytes]] | None:
    """The last complete record of each state kind: ``{kind: (line number, line)}``, a torn line not
    counted (it does not parse); None when the journal is missing."""
    try:
        fh = open(path, "rb")
    except FileNotFoundError:
        return None
    last: dict[str, tuple[int, bytes]] = {}
    unended: tuple[str, int, bytes] | None = None
    with fh:
        for i, line in enumerate(fh):
            if line.startswith(_KIND):
                kind = _STATE_BY_NAME.get(line[len(_KIND):line.find(b'"', len(_KIND))])
                if kind is None:
                    continue
                if not line.endswith(b"\n"):         # only the last line can lack it
                    unended = (kind, i, line)
                elif _complete(line[:-1]):
                    last[kind] = (i, line[:-1])
    # a whole record without its newline (a short write stopped just before it) is one read_records
    # keeps, and state_of with it; the next append starts a new line (Journal.reopen: ``torn``)
    if unended is not None and _complete(unended[2]):
        last[unended[0]] = unended[1:]
    return last


def _any_record(folder: Path) -> bool:
    """Whether :func:`read_records` would give any record (a torn line does not count)."""
    for _rec in iter_records(folder):
        return True
    return False


def _lost_begin(folder: Path, state: str) -> str:
    """An empty journal with backups beside it lost its records (truncated by an outside fault):
    unfinished, so recover looks at it and every command waits for that."""
    bdir = Path(folder) / "b"
    if state == "empty" and bdir.is_dir() and any(bdir.iterdir()):
        return "applying"
    return state


def _complete(line: bytes) -> bool:
    try:
        return isinstance(orjson.loads(line), dict) if line.strip() else False
    except orjson.JSONDecodeError:
        return False


def unfinished_transactions(state_dir: Path) -> list[str]:
    """Txids of transactions left applying or undoing (what every command refuses to run past)."""
    root = tx_root(state_dir)
    if not root.is_dir():
        return []
    return [p.name for p in sorted(root.iterdir(), key=lambda p: txid_sort_key(p.name))
            if p.is_dir() and (p / JOURNAL).exists() and tx_state(p) in UNFINISHED]


def list_transactions(state_dir: Path) -> list[TxInfo]:
    """Every transaction, oldest first (txids sort by time)."""
    root = tx_root(state_dir)
    if not root.is_dir():
        return []
    return [tx_info(p) for p in sorted(root.iterdir(), key=lambda p: txid_sort_key(p.name))
            if p.is_dir() and (p / JOURNAL).exists()]


def mark_undo(fs: fsio.FS, folder: Path, *, by: str | None, ns: list, kept: list[dict[str, str]]) -> None:
    """After an undo transaction committed: which operations it reverted (``ns``: ints, and
    ``[n, i]`` for one row of a database operation: histmig/verbs/undo/coverage.py), then ``undone`` (every
    operation is reverted now) or ``undo-stopped`` (sessions kept, named in ``kept``).

    Both records go in one write and one fsync (the apply's batches journal their intents or dones
    the same way): a crash leaves none, ``undo-by`` alone (a torn ``undone`` line is ignored) or
    both, each a state two separate appends could leave too, and one fsync fewer than two appends
    (tests/test_undo_syncs.py)."""
    journal = Journal.reopen(fs, folder)
    try:
        journal.append_many([("undo-by", {"txid": by, "ns": ns}),
                             ("undo-stopped", {"skipped": kept}) if kept else ("undone", {})])
    finally:
        journal.close()


def transactions(homes) -> list[TxInfo]:
    return list_transactions(homes.state)


def check_no_unfinished(homes) -> None:
    """Every mutating command calls this before planning: an unfinished apply must be recovered first."""
    from histmig.core.diagnostics import UnfinishedTransactionError
    for txid in unfinished_transactions(homes.state):
        raise UnfinishedTransactionError(f"unfinished transaction {txid}; run histmig recover")
