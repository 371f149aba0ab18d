"""``histmig undo``: an inverse plan computed against the disk as it is now (docs/safety.md "Undo").

One session is one unit: its files, database rows, byte offsets and folder entries are reverted
together or not at all. A unit is reverted when every part of it is still what the transaction
left, possibly with lines appended since (those lines get the transaction's edit backwards and
are kept). Otherwise the whole unit is left as it is now and named with the reason and the
command that would finish it. The inverse plan is applied through the same journaled write path
as any other plan, so an undo is itself crash-safe, rolls itself back on an error, and keeps a
copy of everything it replaces or deletes.
"""
from __future__ import annotations

import dataclasses
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from histmig import tools as registry
from histmig.core.diagnostics import NotFoundError, RefusedError, Skip, Warning
from histmig.apply.journal import (TAKEN_BACK, LazyRows, begin_head, iter_records, tx_op, tx_root, tx_state,
                                   txid_sort_key)
from histmig.verbs.undo import files as uf
from histmig.verbs.undo.ahead import forks, replaced_ahead
from histmig.toolkit.move.common import dir_fingerprint
from histmig.toolkit.undo import UndoHook
from histmig.verbs.undo import coverage, packed
from histmig.verbs.undo.config import semantic_inverse
from histmig.verbs.undo.history import History, load, row_key
from histmig.verbs.undo.rows import RowReader, inverse_row, prefetch_updates, share_parts, shared_session, updated_row
from histmig.core.plan import (SQL_OPS, CreateFile, Delete, Fingerprint, MkDir, Op, Plan, Rename, RmDir, SqlDelete,
                          SqlInsert, SqlShift, SqlUpdate, WriteFile)

TRASH = "trash"


@dataclass
class Unit:
    """One session (or one shared file / row) of the transaction."""

    label: str
    session: dict | None = None
    members: list[uf.Member] = field(default_factory=list)
    parts: set[coverage.Part] = field(default_factory=set)   # of the journal: ops n, rows (n, i)

    @property
    def problem(self) -> tuple[str, str] | None:
        return next((m.problem for m in self.members if m.problem), None)

    @property
    def ops(self) -> list[Op]:
        return [op for m in self.members for op in m.ops]

    def paths(self) -> list[str]:
        return [m.path for m in self.members]

    def reverting_ops(self) -> list[Op]:
        """Its ops, and a folder rename that took a member along (made by its first member's unit)."""
        return self.ops + [m.via for m in self.members if m.via is not None]


# -- choosing the transaction ----------------------------------------------------------------------
def pick_transaction(state_dir: Path, txid: str | None, roots: list | None = None) -> Path:
    """The named transaction (a unique prefix), or the latest one still applied (an undo
    transaction is never picked by default: `undo` twice undoes the two latest changes). With
    ``roots`` (the homes of this run), the default pick skips a transaction that wrote elsewhere: one
    state dir (HISTMIG_STATE_DIR) may serve several homes (docs/safety.md, "Where the journal lives")."""
    root = tx_root(state_dir)
    names = sorted((e.name for e in os.scandir(root) if e.is_dir()), key=txid_sort_key) if root.is_dir() else []
    if txid is not None:
        match = [n for n in names if n == txid or n.startswith(txid)]
        if len(match) != 1:
            raise NotFoundError(f"no transaction {txid}" if not match else f"{txid} is ambiguous")
        return root / match[0]
    for name in reversed(names):
        if tx_state(root / name) in ("committed", "partly-undone") and tx_op(root / name) != "undo" \
                and _inside(root / name, roots):
            return root / name
    raise NotFoundError("no transaction to undo")


def _inside(folder: Path, roots: list | None) -> bool:
    """True when a root the transaction's plan wrote under lies inside one of ``roots`` (a flip records
    every home: one shared home is enough); a journal without roots counts as inside."""
    if roots is None:
        return True
    begin = begin_head(folder)
    if not begin:
        return True
    recorded = begin.get("roots") or []
    mine = [os.fspath(r) for r in roots]
    return not recorded or any(r == m or r.startswith(m.rstrip(os.sep) + os.sep) for r in recorded for m in mine)


def check_undoable(folder: Path, records: list[dict]) -> dict:
    state = tx_state(folder)
    begin = next((r for r in records if r["kind"] == "begin"), {})
    if state == "undone":
        raise RefusedError(f"transaction {folder.name} already undone")
    if state in ("rolled-back", "partly-rolled-back"):
        raise RefusedError(f"transaction {folder.name} was rolled back; nothing to undo")
    if begin.get("op") == "undo":
        raise RefusedError(f"transaction {folder.name} is an undo of {begin['args'].get('of')}; "
                           "to redo that change, run its command again")
    if gc := next((r for r in records if r["kind"] == "gc"), None):
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(gc.get("t", 0) / 1e9))
        raise RefusedError(f"transaction {folder.name}: backups removed by gc on {when}; it cannot be undone")
    return begin


# -- the plan --------------------------------------------------------------------------------------
def plan_undo(homes, folder: Path, *, force: bool = False, restore_deleted: bool = False) -> Plan:
    return plan_and_begin(homes, folder, force=force, restore_deleted=restore_deleted)[0]


def plan_and_begin(homes, folder: Path, *, force: bool = False, restore_deleted: bool = False) -> tuple[Plan, dict]:
    """:func:`plan_undo` and the transaction's ``begin`` record without its list of operations
    (which the apply of the inverse plan needs, and which is not read twice)."""
    own, done = _read_journal(folder)
    begin = check_undoable(folder, own)
    history = load(homes.state, folder.name, own)
    intents = [r for r in done if not history.covered.done_with(r)]
    made = _made_by_creates(done) + _left_by_take_back(own)
    del own, done                 # a flip of thousands of sessions journals tens of thousands of rows
    hooks = undo_hooks()
    locator = Locator(homes, intents, list(hooks.values()))
    env = uf.Env(folder=folder, txid=folder.name, force=force, restore_deleted=restore_deleted,
                 tail_edit=inverse_line_edit(begin), locate=locator.find, left_at=locator.left_at,
                 trash=Path(homes.state) / TRASH / folder.name, begin=begin, made_dirs=made)
    units = _units(homes, env, intents, history, hooks)
    return _assemble(homes, begin, env, units), begin


def _made_by_creates(done: list[dict]) -> list[str]:
    """Folders the transaction's creates made, those of operations an earlier undo reverted too: a
    folder one session made holds others' files, so it goes only when the last of them goes, which
    may be a later undo's (a session kept by the first)."""
    return [d for r in done if r["method"] == "create" for d in r.get("dirs") or ()]


def _left_by_take_back(own: list[dict]) -> list[str]:
    """Folders an operation put back while its apply ran had made and left, as another operation of
    the transaction had put a file in them (histmig/apply/takeback.py): they go with the last of them."""
    return [d for r in own if r["kind"] == TAKEN_BACK for d in r.get("dirs") or ()]


def undo_hooks() -> dict[str, UndoHook]:
    """Every tool's undo hook (histmig/toolkit/undo.py), by tool name, in table order: a session's
    part goes to the hook of the tool its journaled ``session`` names."""
    return {row.name: h for row in list(registry.TABLE.values()) if (h := row.hook("undo")) is not None}


def _read_journal(folder: Path) -> tuple[list[dict], list[dict]]:
    """One streamed pass over the journal: the records about the transaction (begin, gc, undo
    marks) and :func:`_done_intents`; the per-operation records are folded in as they are read."""
    own: list[dict] = []
    sessions: dict = {}

    def steps():
        for r in iter_records(folder, lazy_rows=True):     # a database's rows are read when inverted
            if r["kind"] in _STEPS:
                if r["kind"] == "intent":
                    r = packed.pack(r, sessions)           # a file rewrite's: its bytes until it is folded in
                if r["kind"] == TAKEN_BACK and r.get("dirs"):
                    own.append(r)     # the folders it left (_left_by_take_back)
                yield r
            else:
                if r["kind"] == "begin":
                    r.pop("ops", None)    # [n, method, path] of every operation: a flip of 8,000 sessions' is ~8 MB
                own.append(r)
    done = _done_intents(steps())
    return own, done


_STEPS = frozenset({"intent", "done", "salvaged", "ready", "settled", TAKEN_BACK})


def _done_intents(records: Iterable[dict]) -> list[dict]:
    """The latest intent of every operation that finished, oldest first, with its done facts."""
    latest: dict[int, dict] = {}
    for r in records:
        if r["kind"] == "intent":
            latest[r["n"]] = r            # the records are read for this alone: no copy
        elif r["kind"] in ("done", "salvaged") and r["n"] in latest:
            latest[r["n"]]["done" if r["kind"] == "done" else "salvaged_raw"] = r.get("raw", True)
            if r.get("post"):
                latest[r["n"]]["post"] = r["post"]
            if r.get("bst"):
                latest[r["n"]]["bst"] = r["bst"]
        elif r["kind"] == TAKEN_BACK and r["n"] in latest:   # put back while its apply ran
            latest[r["n"]].pop("done", None)
        elif r["kind"] == "settled":     # just before commit: each replaced file's stat (apply/batch.py settle)
            for n, *st in r.get("files") or []:
                if n in latest:
                    latest[n]["settled"] = (st, r["t_s"], r["res"])
        elif r["kind"] == "ready" and r["n"] in latest and r.get("pre_sha256"):
            packed.set_pre_sha(latest[r["n"]], r["pre_sha256"])
    return [latest[n] for n in sorted(latest) if latest[n].get("done")]


class Units(dict):
    def get_unit(self, key: tuple, label: str, session: dict | None) -> Unit:
        if key not in self:
            self[key] = Unit(label, session)
        return self[key]


def _key(session: dict | None, path: str) -> tuple:
    """A session's unit; an operation on a whole project folder (a move tags it with the folder
    only) or with no session is a unit of its own."""
    if session and session.get("id"):
        return "session", session["tool"], session["id"]
    return "path", path


def _units(homes, env: uf.Env, intents: list[dict], history: History, hooks: dict[str, UndoHook]) -> Units:
    units, reader, renames = Units(), RowReader(), []
    offset_tables = frozenset().union(*(h.offset_tables for h in hooks.values()))
    sessions = {r["session"]["id"]: r["session"] for r in intents if (r.get("session") or {}).get("id")}
    # a moved folder's entry by its own file's name too: Pi names a session <time>_<id>.jsonl
    named = {os.path.basename(r["path"]): r["session"] for r in intents if (r.get("session") or {}).get("id")}
    fork = forks(env, map(packed.unpack, intents)) if len(intents) > AHEAD_WINDOW else None
    # a database's rows after every file: the file intents, let go as they are folded in, are gone
    # before the rows' inverses exist (a flip's undo: 30 MB of intents, 32 MB of row inverses at
    # 8,000 sessions; docs/safety.md, "What undo holds"). Each unit keeps its files' order.
    intents.sort(key=lambda r: r["method"] == "sql")
    try:
        for start in range(0, len(intents), AHEAD_WINDOW):
            window = [packed.unpack(r) for r in intents[start:start + AHEAD_WINDOW]]
            ahead, pool = replaced_ahead(env, window, fork=fork)
            try:
                for k, rec in enumerate(window):
                    # each intent let go once folded in: never the journal and the plan at once
                    intents[start + k] = window[k] = None
                    _fold(units, env, rec, history, reader, ahead, renames, offset_tables, sessions, named)
            finally:
                if pool is not None:      # only reads run there: wait for them, start no more
                    pool.shutdown(wait=True, cancel_futures=True)
    finally:
        reader.close()
    _settings_files(homes, env, units, list(hooks.values()))
    _rows_clients_added(homes, units, hooks)
    _add_offsets(homes, units, hooks)
    _keep_folders_of_kept(units)
    _collapse_renames(units, renames, live=set().union(*(h.live_sessions(homes) for h in hooks.values())))
    return units


# intents whose inverses are worked out ahead (on every CPU) at a time: the inverses of a window are
# folded in, and its intents let go, before the next window is read ahead (all at once, a move's undo
# of 8,600 files held every journaled intent next to every inverse: docs/safety.md, "What undo holds")
AHEAD_WINDOW = 1024


def _fold(units: Units, env: uf.Env, rec: dict, history: History, reader: RowReader, ahead: dict,
          renames: list, offset_tables: frozenset[str], sessions: dict, named: dict) -> None:
    """One journaled intent's inverse into its session's unit."""
    method = rec["method"]
    if method == "sql":
        _add_rows(units, reader, rec, history, offset_tables, sessions)
    elif method == "rename":
        env.made_dirs += rec.get("dirs") or []
        renamed = uf.inverse_rename(env, rec, lambda name: sessions.get(name.split(".")[0]) or named.get(name))
        renames.append(renamed)
        for m, part in _entry_parts(rec, renamed, history.covered.rows_of(rec["n"])):
            _add(units, env, rec, m, history, session=_session_of(m), part=part)
    elif method in _FILES:
        m = fut.result() if (fut := ahead.pop(id(rec), None)) is not None else _FILES[method](env, rec)
        if isinstance(m, Exception):
            raise m
        _add(units, env, rec, m, history, session=rec.get("session"))


def _session_of(m: uf.Member) -> dict | None:
    return next((getattr(op, "session", None) for op in m.ops if getattr(op, "session", None)), None)


_FILES: dict[str, Callable] = {"replace": uf.inverse_replace, "inplace": uf.inverse_inplace,
                               "create": uf.inverse_create, "delete": uf.inverse_delete, "rmdir": uf.inverse_rmdir}


def _entry_parts(rec: dict, renamed: uf.Renamed, reverted: set[int]) -> list[tuple[uf.Member, coverage.Part]]:
    """A rename's members, each with its part: entry ``i`` of a moved folder (``(n, i)``: a project
    folder holds several sessions, and one kept must not count the folder's rename as reverted for
    it), else the whole operation. An entry an earlier undo moved back is left out, and the folder
    then never goes back whole: a file of that name in it now is a client's."""
    index = {e: i for i, e in enumerate(rec.get("entries") or ())}
    out: list[tuple[uf.Member, coverage.Part]] = []
    for m in renamed.members:
        name = os.path.basename(m.path)
        i = index.get(name) if m.path == os.path.join(rec["dst"], name) else None
        if i is None:
            out.append((m, rec["n"]))
        elif i not in reverted:
            out.append((m, (rec["n"], i)))
    if len(out) < len(renamed.members):
        renamed.members, renamed.whole = [m for m, _ in out], None
    return out


def _add(units: Units, env: uf.Env, rec: dict, m: uf.Member, history: History, *, session: dict | None,
         part: coverage.Part | None = None) -> None:
    # where the file is now, where it was, and where this transaction left it (a later
    # transaction may have moved it on from there)
    places = dict.fromkeys([m.path, rec["path"], env.left_at(rec["path"]), *([rec["dst"]] if rec.get("dst") else [])])
    who = next((w for p in places if (w := history.later.path_owner(p))), None)
    if who is None and rec["method"] == "rename":
        who = next((w for p in places if (w := history.later.below(p))), None)
    if who:        # the most useful reason: whatever else changed, that transaction changed it
        m.ops, m.problem = [], _later(who)
    key = _key(session, m.path)
    unit = units.get_unit(key, key[-1], session)
    unit.members.append(m)
    unit.parts.add(rec["n"] if part is None else part)


def _later(who: str) -> tuple[str, str]:
    txid = who.split(" ")[0]
    return f"changed by the later transaction {who}; undo it first: histmig undo {txid}", "later-transaction"


def _add_rows(units: Units, reader: RowReader, rec: dict, history: History, offset_tables: frozenset[str],
              sessions: dict | None = None) -> None:
    """``sessions``: id -> the session dict the file intents share (:func:`_units`); a row of the same
    session takes that one (a flip's undo: three copies of each session, 4.7 MB at 8,000, otherwise)."""
    db, n = rec["path"], rec["n"]
    later = history.later.rows      # usually empty: then no row's key is encoded to look it up
    reverted = history.covered.rows_of(n)        # by an earlier undo that kept other sessions
    i, seen = 0, {}
    for session in (sessions or {}).values():
        shared_session(session, seen)
    for rows in _row_slices(rec.get("rows", [])):   # a long record's rows a slice at a time (journal.LazyRows)
        now = prefetch_updates(reader, db, rows)
        for j, row in enumerate(rows):
            if i + j in reverted:
                continue
            share_parts(row, seen)
            got = now.get(j)
            # a prefetched update (a flip's every row): its inverse inline, as inverse_row would make it
            m = updated_row(db, row, got, offset_tables) if got is not None else \
                inverse_row(reader, db, row, offset_tables)
            who = later.get(row_key(db, row)) if later else None
            if who:
                m.ops, m.problem = [], _later(who)
            session = row.get("session")
            key = _key(session, m.path)
            unit = units.get_unit(key, key[-1], session)
            unit.members.append(m)
            unit.parts.add((n, i + j))
        i += len(rows)


def _row_slices(rows) -> Iterable[list[dict]]:
    return rows.slices() if isinstance(rows, LazyRows) else [rows]


def _settings_files(homes, env: uf.Env, units: Units, hooks: list[UndoHook]) -> None:
    """A shared settings file changed since the transaction gets its edit reverted in place."""
    for key, unit in units.items():
        if key[0] != "path" or not unit.problem or unit.problem[1] != "modified" or env.force:
            continue
        ops = semantic_inverse(hooks, homes, env.begin, key[1])
        if ops is not None:
            unit.members = [uf.Member(key[1], ops)]


def _rows_clients_added(homes, units: Units, hooks: dict[str, UndoHook]) -> None:
    """A session that goes away takes along the rows its client added for it itself (its tool's
    hook says which): a row pointing at no file would be left behind."""
    for key, unit in units.items():
        if key[0] != "session" or unit.problem or (hook := hooks.get(key[1])) is None:
            continue
        extra = hook.rows_added(homes, unit.session, unit.ops)
        if extra is not None and extra.problem:
            unit.members.append(uf.Member.kept(extra.label, *extra.problem))
        elif extra is not None and extra.ops:
            unit.members.append(uf.Member(extra.label, extra.ops))


def _add_offsets(homes, units: Units, hooks: dict[str, UndoHook]) -> None:
    """A file continued since the apply whose tool keeps byte offsets into it: the session's offset
    rows, including rows its client wrote after the apply, are recomputed by the tool's hook from the
    inverse edits against the database as it is now, instead of put back from the journal (which
    knows only the rows of the apply)."""
    for key, unit in units.items():
        hook = hooks.get(key[1]) if key[0] == "session" else None
        if hook is None or not hook.offset_tables or not any(m.grown for m in unit.members):
            continue
        unit.members = [m for m in unit.members if not m.offsets]
        if unit.problem:
            continue
        edits = sorted(e for m in unit.members for e in m.edits)
        if edits:
            unit.members.append(uf.Member("offsets", hook.offset_ops(homes, key[2], edits)))


def _keep_folders_of_kept(units: Units) -> None:
    """A folder entry that goes back in one rename with no session of its own (Qwen's
    ``chats/``) and holds a file of a kept session is kept too, and so is every session
    whose file lies in a kept folder: moving the folder would take the kept session's file back
    while its bytes still say NEW (a kept session is kept whole; the folder waits whole, as the
    apply's project folders do: histmig/apply/skipping.py)."""
    kept = {m.path: u.label for u in units.values() if u.problem for m in u.members}
    while kept:
        above = {a: who for p, who in kept.items() for a in _ancestors(p)}    # folders holding a kept path
        more = {}
        for unit in units.values():
            if unit.problem:
                continue
            why = next((w for m in unit.members if m.ops and (w := _holding(m, kept, above))), None)
            if why:
                unit.members.append(uf.Member.kept(why[0], why[1], "session-skipped"))
                more.update({m.path: unit.label for m in unit.members})
        kept = more


def _ancestors(path: str) -> list[str]:
    out, p = [], os.path.dirname(path)
    while p and p != os.path.dirname(p):
        out.append(p)
        p = os.path.dirname(p)
    return out


def _holding(m: uf.Member, kept: dict[str, str], above: dict[str, str]) -> tuple[str, str] | None:
    """(path, reason) when ``m`` moves a folder holding a kept path, deletes a file of a folder
    holding one (a project's own file: Gemini's marker), or lies in a kept folder."""
    if any(isinstance(op, Rename) and op.src == m.path for op in m.ops) and m.path in above:
        return m.path, f"holds a file of {above[m.path]}, kept; kept with it"
    if _folders_own(m) and os.path.dirname(m.path) in above:
        return m.path, f"the folder's own file, and the folder holds {above[os.path.dirname(m.path)]}, kept; kept with it"
    who = next((kept[a] for a in _ancestors(m.path) if a in kept), None)
    return (m.path, f"lies in a folder kept with {who}; kept with it") if who else None


def _folders_own(m: uf.Member) -> bool:
    """``m`` deletes a created file tagged with its folder and no session (a project's marker, written
    once for every session converted into the folder): it stays while the folder holds a kept one."""
    return any(isinstance(op, Delete) and (s := op.session or {}).get("folder") == os.path.dirname(m.path)
               and not s.get("id") for op in m.ops)


def _collapse_renames(units: Units, renames: list[uf.Renamed], *, live: set[str]) -> None:
    """A folder whose every entry goes back, and holds nothing new, goes back in one rename;
    never one with a live session in it (its tool's hook names them; its entries go one by one, and
    apply skips the live one with the rest of its session)."""
    kept = {id(m) for u in units.values() if u.problem for m in u.members}
    for r in renames:
        if r.whole is None or not r.members or any(id(m) in kept for m in r.members):
            continue
        if any(os.path.basename(m.path).split(".")[0] in live or (_session_of(m) or {}).get("id") in live
               for m in r.members):      # by its session too: Pi names a file <time>_<id>.jsonl
            continue
        for m in r.members:
            m.ops, m.via = [], r.whole
        r.members[0].ops = [r.whole]


# -- assembling --------------------------------------------------------------------------------------
_ORDER = (WriteFile, MkDir, Rename, CreateFile, Delete, RmDir, SqlUpdate, SqlShift, SqlInsert, SqlDelete)


def _assemble(homes, begin: dict, env: uf.Env, units: Units) -> Plan:
    ops: list[Op] = []
    skips: list[Skip] = []
    reverting: list[Unit] = []
    kept_units = []
    for unit in units.values():
        if unit.problem:
            reason, code = unit.problem
            others = [p for p in unit.paths() if p != _first_problem_path(unit)]
            more = f" (kept with it: {len(others)} more file(s) or row(s) of the session)" if others else ""
            skips.append(Skip(_first_problem_path(unit), reason + more, code))
            kept_units.append({"label": unit.label, "reason": reason, "code": code, "paths": unit.paths()})
            continue
        ops += unit.ops
        reverting.append(unit)
    ops = _ordered(ops + _emptied_dirs(env.made_dirs, ops))
    units_done = coverage.plan_units(((u.parts, u.reverting_ops()) for u in reverting), ops)
    ops = _rewritten_then_moved(ops)          # same positions: the indices above still hold
    roots = [str(r) for r in homes.roots()] + [r for r in begin.get("roots") or [] if r not in map(str, homes.roots())]
    if any(isinstance(op, Rename) and str(env.trash) in op.dst for op in ops):
        roots.append(str(env.trash))
    summary = {"of": env.txid, "of_op": begin.get("op", ""), "units": len(units), "kept": kept_units}
    ns = sorted({p if isinstance(p, int) else p[0] for u in reverting for p in u.parts})
    plan = Plan(op="undo", args={"of": env.txid, "of_op": begin.get("op", ""), "ns": ns, "units": units_done},
                roots=roots, operations=ops, skips=skips, summary=summary,
                warnings=[w for u in units.values() for m in u.members for w in m.warnings])
    if begin.get("op") == "convert" and any(u.problem and u.problem[1] == "kept-continued" for u in units.values()):
        plan.warnings.append(Warning("kept-continued", "a converted session was continued since; it is kept "
                                     f"(histmig undo {env.txid} --force moves it to {env.trash}/)"))
    return plan


def _ordered(ops: list[Op]) -> list[Op]:
    """Rewrites first (where the files are now), then folders made again, moves back, creates,
    deletes; each folder removed once, deepest first; rows last."""
    rmdirs = {op.path: op for op in ops if isinstance(op, RmDir)}
    ops = [op for op in ops if not isinstance(op, RmDir)]
    ops.sort(key=lambda op: _ORDER.index(type(op)))
    at = next((i for i, op in enumerate(ops) if isinstance(op, SQL_OPS)), len(ops))
    return ops[:at] + sorted(rmdirs.values(), key=lambda op: -len(op.path)) + ops[at:]


def _emptied_dirs(made: list[str], ops: list[Op]) -> list[RmDir]:
    """Folders the transaction created for what it moved or created, removed again when everything
    in them goes back or away (deepest first: a parent counts a child folder removed here as gone)."""
    leaving = {op.src for op in ops if isinstance(op, Rename)} | {op.path for op in ops if isinstance(op, Delete)}
    out: list[RmDir] = []
    for d in sorted(set(made), key=lambda d: -len(d)):
        if not os.path.isdir(d) or os.path.islink(d) or d in leaving:
            continue
        if all(os.path.join(d, e) in leaving for e in os.listdir(d)):
            out.append(RmDir(path=d, expect=dir_fingerprint(d), reason="undo: folder it created"))
            leaving.add(d)
    return out


def _rewritten_then_moved(ops: list[Op]) -> list[Op]:
    """A file rewritten before it moves back gets a new inode: its move expects the device only
    (the rewrite carries the full fingerprint), as move's own plans do."""
    written = {op.path for op in ops if isinstance(op, WriteFile)}
    return [dataclasses.replace(op, expect=Fingerprint(dev=op.expect.dev))
            if isinstance(op, Rename) and op.src in written else op for op in ops]


def _first_problem_path(unit: Unit) -> str:
    return next(m.path for m in unit.members if m.problem)


# -- lines appended since the apply ----------------------------------------------------------------
def inverse_line_edit(begin: dict) -> Callable[[Op, bytes], bytes] | None:
    """The transaction's own per-line edit, backwards (flip NEW -> OLD, move NEW -> OLD)."""
    op, args, summary = begin.get("op"), begin.get("args") or {}, begin.get("summary") or {}
    try:
        if op == "flip":
            from histmig.verbs.flip import tail_transform
            return tail_transform({"old": args["new"], "new": args["old"]})
        if op == "move" and summary.get("old") and summary.get("new"):
            from histmig.verbs.move import tail_transform
            back = Plan(op="move", args=args, roots=[], summary={"old": [summary["new"]], "new": summary["old"][-1]})
            return tail_transform(back)
    except (KeyError, TypeError, ValueError):
        return None
    return None


# -- where a file is now ---------------------------------------------------------------------------
class Locator:
    """A path as journaled, or where it is now: moved along with a folder this transaction renamed,
    or moved since by its tool's own client (each tool's undo hook is asked: ``relocator``)."""

    def __init__(self, homes, intents: list[dict], hooks: list[UndoHook]):
        self.homes, self.hooks = homes, hooks
        self.renames = [(r["path"], r["dst"]) for r in intents if r["method"] == "rename"]
        self._relocators: list | None = None

    def left_at(self, path: str) -> str:
        """Where this transaction left ``path`` (moved along with its own renames)."""
        for src, dst in self.renames:
            if path == src or path.startswith(src.rstrip("/") + "/"):
                return dst + path[len(src):]
        return path

    def find(self, path: str) -> str | None:
        if os.path.lexists(path):
            return path
        if (moved := self.left_at(path)) != path and os.path.lexists(moved):
            return moved
        if self._relocators is None:
            self._relocators = [r for h in self.hooks if (r := h.relocator(self.homes)) is not None]
        return next((found for r in self._relocators if (found := r(path)) is not None), None)
