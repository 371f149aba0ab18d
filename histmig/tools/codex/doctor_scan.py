"""One read of a rollout for doctor, at byte speed: find the few lines the checks use by one walk
over the lines (``_Lines``: Codex's line head says what each line is; other lines are searched for
the markers), parse only those, and check the thread's offset rows while the file is read.

What the checks need from a rollout (docs/doctor.md, "How doctor reads a rollout"):

- ``ThreadFacts``: the lines holding ``session_meta`` / ``thread_settings_applied`` (parsed in file
  order, as ``adapter.scan_thread`` does) and the last ``turn_context`` that names a cwd (tried
  backwards from the end of each block, so usually one parse per block);
- the spans of the ordinals the thread's ``thread_history_1.sqlite`` rows name, found by the
  ``"ordinal":N`` bytes Codex writes (serde_json never escapes the key) and confirmed by a strict
  parse of that line;
- whether each offset those rows store is a line start (the byte before it is a newline).

Nothing is kept per line: when the file is read, each offset row is resolved (``Resolved``) and kept
only when it is off, or when a repair may edit the file (a rollout that records two providers), so
memory follows the findings, not the line count. ``adapter.scan_thread`` is the strict reading of
every line that this replaces (tests compare the two).
"""
from __future__ import annotations

import bisect
import re
from dataclasses import field
from pathlib import Path
from typing import Any, Callable

from histmig.jsonio.jsonl import BOM, DEFAULT_MAX_LINE_BYTES, open_stream, parse_json
from histmig.tools.codex.adapter import ThreadFacts
from histmig.core.valueclass import FACTORY, value

CHUNK = 1 << 20
ORDERED = (b"session_meta", b"thread_settings_applied")   # ThreadFacts reads these in file order
TURN_CONTEXT = b"turn_context"                              # only the last cwd-bearing one counts
ORDINAL = re.compile(rb'"ordinal"\s*:\s*(-?[0-9]+)')
# The head of a line as Codex writes it: ordinal, type, and the payload's type when it comes first.
# Type names are word characters (a value with an escape is not a head). The timestamp may hold a
# backslash: were the quote that ends it here an escaped one, the line would not be JSON at all.
# Group 1 is the ordinal; the last group the match closed (``lastindex``) says what the line is:
# SESSION_META, TURN_CONTEXT, SETTINGS (an event_msg whose payload is thread_settings_applied),
# UNTYPED (an event_msg whose payload does not start with its type), or 1 / None: any other line.
# The repeats are possessive (``*+``, ``++``): each is followed by a character it cannot match, so
# giving any back never helps, and sre saves no backtracking state (a tenth of a walk's regex time).
# The optional ordinal is a branch with an empty side, not ``(?:…)?``: the same match (``"type"``
# cannot follow where ``"ordinal"`` starts, so only one side can lead to a match), but sre runs a
# group's ``?`` as a general repeat with its own context, a fifth of a head's time.
HEAD = re.compile(rb'\{"timestamp":"[^"]*+",(?:"ordinal":(-?\d++),|)"type":"(?:(session_meta)"|(turn_context)"'
                  rb'|event_msg"(?:,"payload":\{"type":"(?:(thread_settings_applied)|\w*+)"|())|\w*+")')
SESSION_META, TURN_CONTEXT_LINE, SETTINGS, UNTYPED = 2, 3, 4, 5
UNFIXABLE = None   # the want of a stored offset with no ordinal to go by that is not a line start either


def _int(v: Any) -> bool:
    return type(v) is int


@value
class Needs:
    """What one thread's offset rows ask of its rollout: ``rows`` are ``(history db, table, key,
    row, expect)`` with ``expect`` mapping each offset column to ``(kind, ordinal)`` (see
    ``_Read._want``); ``ordinals`` and ``offsets`` are what the read looks up."""
    rows: list[tuple[str, str, tuple, dict, dict]] = field(default_factory=list)
    ordinals: set[int] = field(default_factory=set)
    offsets: set[int] = field(default_factory=set)

    def __init__(self, rows: list[tuple[str, str, tuple, dict, dict]] = FACTORY, ordinals: set[int] = FACTORY,
                 offsets: set[int] = FACTORY) -> None:
        self.rows = [] if rows is FACTORY else rows
        self.ordinals = set() if ordinals is FACTORY else ordinals
        self.offsets = set() if offsets is FACTORY else offsets


@value
class Resolved:
    """One offset row after the read: per column ``(have, want)``, ``want`` UNFIXABLE when the
    row's value is neither at an ordinal's line nor a line start."""
    hist: str
    table: str
    key: tuple
    row: dict
    cols: dict[str, tuple[Any, Any]]

    def __init__(self, hist: str, table: str, key: tuple, row: dict, cols: dict[str, tuple[Any, Any]]) -> None:
        self.hist = hist
        self.table = table
        self.key = key
        self.row = row
        self.cols = cols

    def judge(self, shift: Callable[[Any], Any]) -> tuple[dict, dict, bool, bool]:
        """(fixes, old values, any unfixable, any stale now); ``shift`` moves a wanted offset by the
        planned edits of the file (identity when there are none)."""
        fixes, old, unfixable, stale_now = {}, {}, False, False
        for col, (have, want) in self.cols.items():
            if want is UNFIXABLE:
                unfixable = True
                continue
            stale_now = stale_now or have != want
            moved = shift(want)
            if moved != have:
                fixes[col], old[col] = moved, have
        return fixes, old, unfixable, stale_now

    @property
    def off(self) -> bool:
        """Whether ``judge`` finds anything without planned edits: a value it cannot fix, or one
        that is not what it wants (stale now, and a fix)."""
        return any(want is UNFIXABLE or have != want for have, want in self.cols.values())


class _Read:
    """The state of one read: facts, the ordinal spans and line starts asked for."""

    def __init__(self, needs_of: Callable[[str], Needs | None]):
        self.facts = ThreadFacts()
        self.needs_of = needs_of
        self.needs: Needs | None = None
        self.asked = False             # needs_of was called (the thread id is known)
        self.spans: dict[int, tuple[int, int]] = {}
        self.all_spans: dict[int, tuple[int, int]] = {}   # ordinals seen before the id was known
        self.starts: set[int] = set()
        self.early: set[int] = set()   # every line start read before the id was known
        self.offsets: list[int] = []   # the needed offsets, ascending
        self.heads: set[bytes] | None = None   # the asked ordinals as a line's head spells them
        self.trusted: dict[int, tuple[int | None, int | None]] = {}   # see _trusted
        self.cwd_at = -1               # where an in-order line last set resume_cwd
        self.tc: tuple[int, str] | None = None   # the last turn_context-only line with a cwd

    # ---- one block of complete lines: buf[:end] starts at stream offset base ----------------

    def block(self, buf, end: int, base: int) -> None:
        noted = self._first_meta(buf, end, base) if not self.asked else 0
        lines = _Lines(buf, end, self._ordinal_wanted())
        ordered = self._ordered(buf, base, [span for span in lines.ordered if span[0] >= noted])
        self._turn_context(buf, base, lines.tcs, ordered)
        self._ask()
        self._ordinals(buf, base, lines.ords)
        if self.asked:
            self._starts(buf, end, base)
        else:
            self._every_start(buf, end, base)

    def _first_meta(self, buf, end: int, base: int) -> int:
        """Note the block's first line before the walk when it is Codex's session_meta (a rollout's
        first line is): the thread id is then known and the walk keeps only the ordinal lines its
        rows use. Returns where the lines not noted yet begin. (The id is the first session_meta's
        that has one, and noting a line changes nothing else the walk reads.)"""
        nl = buf.find(b"\n", 0, end)
        stop = end if nl < 0 else nl + 1
        m = HEAD.match(buf, 0, stop)
        if m is None or m.lastindex != SESSION_META:
            return 0
        self._ordered(buf, base, [(0, stop)])
        self._ask()
        return stop

    def _ask(self) -> None:
        """The thread's rows, once its id is known (``needs_of`` is asked once)."""
        if not self.asked and self.facts.id is not None:
            self.asked = True
            self.needs = self.needs_of(self.facts.id)
            if self.needs is not None:
                self.offsets = sorted(self.needs.offsets)
                self.trusted = _trusted(self.needs)

    def _ordinal_wanted(self):
        """What the walk keeps of the ordinal lines: None (none: no offset rows), ALL (the rows
        are not known yet), or the ordinals the rows use as a head writes them (``_heads``)."""
        if not self.asked:
            return ALL
        if self.needs is None:
            return None
        if self.heads is None:
            self.heads = _heads(self.needs.ordinals)
        return self.heads

    def _ordered(self, buf, base: int, spans: list[tuple[int, int]]) -> set[int]:
        for start, stop in spans:
            obj = _parse(buf, start, stop, base)
            if isinstance(obj, dict):
                self.facts.note(obj)
                if _sets_cwd(obj) is not None:
                    self.cwd_at = base + start
        return {start for start, _ in spans}

    def _turn_context(self, buf, base: int, spans: list[tuple[int, int]], ordered: set[int]) -> None:
        """The last line of the block that sets the resume cwd and is not an ordered one (those
        were noted in order): only the last such line can matter."""
        for start, stop in reversed(spans):
            if start in ordered:
                continue
            cwd = _sets_cwd(_parse(buf, start, stop, base))
            if cwd is not None:
                self.tc = (base + start, cwd)
                return

    def _ordinals(self, buf, base: int, lines: list[tuple[int, int, int | None]]) -> None:
        if self.asked and self.needs is None:
            return                     # no offset rows for this thread: no ordinal is asked
        wanted = self.needs.ordinals if self.needs is not None else None
        for start, stop, n in lines:
            if n is None:              # not told by the line's head: every "ordinal":N in it counts
                hit = any(wanted is None or int(m.group(1)) in wanted for m in ORDINAL.finditer(buf, start, stop))
            else:
                hit = wanted is None or n in wanted
                if hit and wanted is not None and self._trust(n, base + start, base + stop):
                    continue
            if not hit:
                continue
            obj = _parse(buf, start, stop, base)
            if isinstance(obj, dict) and isinstance(obj.get("ordinal"), int):
                n = obj["ordinal"]
                if wanted is None:
                    self.all_spans[n] = (base + start, base + stop)
                elif n in wanted:
                    self.spans[n] = (base + start, base + stop)

    def _trust(self, n: int, start: int, stop: int) -> bool:
        """Take this head line's span for ordinal ``n`` without parsing it when the rows store
        exactly its start and end (``_trusted``) and no line before it gave ``n`` a span (a later
        one still replaces it, as it would replace the parsed line)."""
        stored = self.trusted.get(n)
        if stored is None or n in self.spans or n in self.all_spans:
            return False
        if stored[0] not in (None, start) or stored[1] not in (None, stop):
            return False
        self.spans[n] = (start, stop)
        return True

    def _starts(self, buf, end: int, base: int) -> None:
        """Which of the needed offsets inside this block are line starts."""
        offs = self.offsets
        i = bisect.bisect_left(offs, base)
        while i < len(offs) and offs[i] <= base + end:
            off = offs[i]
            if off == base or buf[off - base - 1] == 0x0A:
                self.starts.add(off)
            i += 1

    def _every_start(self, buf, end: int, base: int) -> None:
        """Before the thread id is known (no session_meta yet, unusual) every line start is kept:
        which ones the rows ask about is not known yet."""
        self.early.add(base)
        at = buf.find(b"\n", 0, end)
        while at >= 0:
            self.early.add(base + at + 1)
            at = buf.find(b"\n", at + 1, end)

    # ---- the end of the file ----------------------------------------------------------------

    def finish(self, eof: int, keep_all: Callable[[ThreadFacts], bool] | None = None) -> list[Resolved]:
        """Every row resolved (``keep_all`` None, or true for the facts), else only the rows that
        are off (``Resolved.off``): a healthy thread's rows need no ``Resolved`` at all."""
        if self.tc is not None and self.tc[0] > self.cwd_at:
            self.facts.resume_cwd = self.tc[1]
        if self.facts.id is None:
            return []
        if not self.asked:
            self.asked = True
            self.needs = self.needs_of(self.facts.id)
        if self.needs is None:
            return []
        for n, span in self.all_spans.items():   # lines read before the id was known
            if n in self.needs.ordinals and n not in self.spans:
                self.spans[n] = span
        self.starts |= self.early & self.needs.offsets
        self.starts.add(0)
        self.starts.add(eof)
        if keep_all is None or keep_all(self.facts):
            return [self._resolve(*row) for row in self.needs.rows]
        return [self._resolve(*row) for row in self.needs.rows if self._off(row[3], row[4])]

    def _off(self, row: dict, expect: dict) -> bool:
        """``Resolved.off`` of the row ``_resolve`` would give, without building it."""
        for col, how in expect.items():
            have = row.get(col)
            if have is not None:
                want = self._col_want(have, how)
                if want is UNFIXABLE or have != want:
                    return True
        return False

    def _resolve(self, hist: str, table: str, key: tuple, row: dict, expect: dict) -> Resolved:
        cols = {}
        for col, how in expect.items():
            have = row.get(col)
            if have is not None:
                cols[col] = (have, self._col_want(have, how))
        return Resolved(hist, table, key, row, cols)

    def _col_want(self, have: Any, how) -> Any:
        """What a column holding ``have`` should hold: its ordinal's offset, else ``have`` itself
        when it is a line start, else UNFIXABLE."""
        want = self._want(how)
        if want is None:
            want = have if _int(have) and have in self.starts else UNFIXABLE
        return want

    def _want(self, how) -> int | None:
        """``("start", n)``: the start of ordinal n's line; ``("end", n)``: its end; ``("next", n)``:
        the start of n's line, else the end of n - 1's (the end of the file when n is not written yet)."""
        kind, n = how
        if not _int(n):
            return None
        if kind == "start":
            return self.spans[n][0] if n in self.spans else None
        if kind == "end":
            return self.spans[n][1] if n in self.spans else None
        if n in self.spans:
            return self.spans[n][0]
        return self.spans[n - 1][1] if n - 1 in self.spans else None


ALL = object()   # _Lines keeps every ordinal line (the thread's rows are not known yet)


class _Lines:
    """One walk over the lines of a block (a newline search per line, at memory speed) that sorts
    out the lines the read needs, in file order, without searching their bodies:

    - ``ordered``: the lines holding ``session_meta`` or ``thread_settings_applied``;
    - ``tcs``: the lines holding ``turn_context``;
    - ``ords``: ``(start, stop, n)`` of the lines whose top-level ordinal may be one asked for
      (``n`` None: not known from the head, the line's ``"ordinal":N`` bytes are searched).

    Codex writes every line as ``{"timestamp":"…","ordinal":N,"type":"T","payload":{"type":"P"…``
    (``HEAD``). For such a line, in a line that parses at all (a strict parse refuses duplicate
    keys), N is the top-level ordinal, T the type and P the payload's type, so a line of another
    kind cannot change what the checks read whatever its body holds (a ``response_item`` that
    quotes ``session_meta``, say): its body is not searched. Every other line (another head, a
    BOM, an escaped key, an ``event_msg`` whose payload does not start with its type) is searched
    for the three markers and for ``"ordinal":N`` as before (docs/doctor.md, "How doctor reads a
    rollout")."""

    __slots__ = ("ordered", "tcs", "ords")

    def __init__(self, buf, end: int, wanted):
        self.ordered: list[tuple[int, int]] = []
        self.tcs: list[tuple[int, int]] = []
        self.ords: list[tuple[int, int, int | None]] = []
        if wanted is ALL:
            self._every(buf, end)
        else:
            self._skipping(buf, end, wanted)

    def _skipping(self, buf, end: int, wanted) -> None:
        """The walk when the wanted ordinals are known (a set of heads, or None: none): a line whose
        head has an ordinal not wanted and a type of no interest (``lastindex`` 1; with None also a
        head without an ordinal) gives ``_line`` nothing to keep, so it costs only the newline
        search and the head match (most lines: this loop is most of a cold doctor's CPU)."""
        find, head, line = buf.find, HEAD.match, self._line
        heads = () if wanted is None else wanted
        start = 0
        while start < end:
            nl = find(b"\n", start, end)
            stop = end if nl < 0 else nl + 1
            m = head(buf, start, stop)
            if m is not None:
                kind = m.lastindex
                if kind == 1 and m[1] not in heads or kind is None and wanted is None:
                    start = stop
                    continue
            line(buf, start, stop, m, wanted)
            start = stop

    def _every(self, buf, end: int) -> None:
        find, head, line = buf.find, HEAD.match, self._line
        start = 0
        while start < end:
            nl = find(b"\n", start, end)
            stop = end if nl < 0 else nl + 1
            line(buf, start, stop, head(buf, start, stop), ALL)
            start = stop

    def _line(self, buf, start: int, stop: int, m, wanted) -> None:
        """Sort out one line, ``m`` its HEAD match."""
        if m is None:
            self._searched(buf, start, stop, wanted)
            return
        if wanted is not None:
            n = m[1]
            if n is None:
                self.ords.append((start, stop, None))
            elif wanted is ALL or n in wanted:
                self.ords.append((start, stop, int(n)))
        kind = m.lastindex
        if kind is not None and kind > 1:
            if kind == TURN_CONTEXT_LINE:
                self.tcs.append((start, stop))
            elif kind != UNTYPED or _holds(buf, start, stop, ORDERED):
                self.ordered.append((start, stop))

    def _searched(self, buf, start: int, stop: int, wanted) -> None:
        if _holds(buf, start, stop, ORDERED):
            self.ordered.append((start, stop))
        if buf.find(TURN_CONTEXT, start, stop) >= 0:
            self.tcs.append((start, stop))
        if wanted is not None:
            self.ords.append((start, stop, None))


def _trusted(needs: Needs) -> dict[int, tuple[int | None, int | None]]:
    """The ordinals whose line needs no strict parse, each with the (start, end) offsets the rows
    store for it (None where no row stores one).

    A row's want for ordinal n is the start (end) of n's line when that line parses, else the row's
    own offset when it is a line start (``_Read._resolve``). When the rows store exactly the start
    (end) of the one line whose head says n, that is a line start, so the want is that offset
    whether or not the line parses: the parse cannot change a finding and is skipped (the rows of
    a healthy rollout are all like this). Left out, so parsed: an ordinal a ``next`` column reads,
    as n or as n - 1 (its want depends on two lines), and one a row stores a non-integer offset for,
    or two different offsets."""
    stored: dict[int, list] = {}
    left_out: set[int] = set()
    for _, _, _, row, expect in needs.rows:
        for col, (kind, n) in expect.items():
            have = row.get(col)
            if have is None or type(n) is not int:
                continue                 # not resolved, or resolved without any line's span
            if kind == "next":
                left_out.update((n, n - 1))
                continue
            pair = stored.setdefault(n, [None, None])
            at = 0 if kind == "start" else 1
            if type(have) is not int or pair[at] not in (None, have):
                left_out.add(n)
            pair[at] = have
    return {n: (pair[0], pair[1]) for n, pair in stored.items() if n not in left_out}


def _heads(ordinals: set[int]) -> set[bytes]:
    """The ordinals as a head's digits: JSON writes an integer one way only, except that ``-0``
    is 0 too (digits with a leading zero are no JSON: such a line never parses)."""
    out = {str(n).encode() for n in ordinals}
    if 0 in ordinals:
        out.add(b"-0")
    return out


def _holds(buf, start: int, stop: int, markers) -> bool:
    return any(buf.find(marker, start, stop) >= 0 for marker in markers)


def _sets_cwd(obj: Any) -> str | None:
    """The resume cwd ``ThreadFacts.note`` takes from this line's turn_context, if it is one."""
    if not isinstance(obj, dict) or obj.get("type") != "turn_context":
        return None
    probe = ThreadFacts()
    probe.note(obj)
    return probe.resume_cwd


def _parse(buf, start: int, stop: int, base: int) -> Any:
    """The strict parse ``jsonl.Line`` gives this line (a BOM counts on the file's first line only);
    None for an opaque or over-limit line. (``parse_json`` on the line's body, without building a
    ``Line``: the same rule, a fifth of the cost.)"""
    if stop - start > DEFAULT_MAX_LINE_BYTES:
        return None
    if buf[stop - 1:stop] == b"\n":
        stop -= 2 if buf[stop - 2:stop] == b"\r\n" and stop - 2 >= start else 1
    if base + start == 0 and buf[start:start + 3] == BOM:
        start += 3
    obj, error = parse_json(bytes(buf[start:stop]))
    return None if error else obj


class _Buffer:
    """The one read buffer of this process, reused from file to file (a fresh one per file costs
    page faults on every read). It grows only for a line longer than itself (up to the line limit,
    as the pending bytes did) and is dropped afterwards, so memory stays flat."""

    KEEP = 4 * CHUNK
    buf = bytearray()

    @classmethod
    def take(cls, need: int, keep: int) -> bytearray:
        """The buffer, at least ``need`` bytes long, its first ``keep`` bytes kept."""
        if len(cls.buf) < need:
            grown = bytearray(max(need, 2 * len(cls.buf), 2 * CHUNK))
            grown[:keep] = cls.buf[:keep]
            cls.buf = grown
        return cls.buf

    @classmethod
    def release(cls) -> None:
        if len(cls.buf) > cls.KEEP:
            cls.buf = bytearray()


def scan_rollout(path: Path, needs_of: Callable[[str], Needs | None],
                 keep_all: Callable[[ThreadFacts], bool] | None = None) -> tuple[ThreadFacts, list[Resolved]]:
    """Read ``path`` once (``.zst`` through the bounded reader), in blocks of whole lines read
    straight into one reused buffer. ``needs_of(thread_id)`` gives the thread's offset rows (None:
    none). Returns the facts and every resolved offset row, or with ``keep_all`` only those that
    are off unless ``keep_all(facts)`` (``_Read.finish``); raises like ``jsonl.read_lines``
    (HistmigError, OSError)."""
    read = _Read(needs_of)
    base = 0                # stream offset of buf[0]
    filled = 0              # bytes in buf: the start of a line not yet complete
    skipping = False        # inside a line over the size limit: its bytes are dropped, not parsed
    try:
        with open_stream(path) as fh:
            while True:
                buf = _Buffer.take(filled + CHUNK, filled)
                with memoryview(buf) as view:
                    got = fh.readinto(view[filled:filled + CHUNK])
                if not got:
                    break
                if skipping:
                    nl = buf.find(b"\n", 0, got)
                    if nl < 0:
                        base += got
                        continue
                    base, skipping = base + nl + 1, False
                    buf[:got - nl - 1] = buf[nl + 1:got]
                    got -= nl + 1
                last = buf.rfind(b"\n", filled, filled + got)
                filled += got
                if last >= 0:
                    read.block(buf, last + 1, base)
                    buf[:filled - last - 1] = buf[last + 1:filled]
                    base += last + 1
                    filled -= last + 1
                if filled > DEFAULT_MAX_LINE_BYTES:
                    base, skipping, filled = base + filled, True, 0
        if filled:
            read.block(_Buffer.buf, filled, base)
    finally:
        _Buffer.release()
    return read.facts, read.finish(base + filled, keep_all)
