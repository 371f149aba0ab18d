"""The apply engine behind :mod:`histmig.apply` (imported on first use, so commands that only plan
or list do not pay for it)."""
from __future__ import annotations

import contextlib
import dataclasses
import errno
import os
import shutil
import time
from pathlib import Path
from typing import Iterator

import orjson

from histmig import __version__
from histmig.apply import fsio
from histmig.apply import backups, batch, creates, deletes, rollback, takeback
from histmig.apply.check import precheck, touches, validate_plan
from histmig.apply.batch import patch_in_place, rewrite
from histmig.apply.files import Ctx
from histmig.apply.guards import FileLock, WriteGuards, default_guards
from histmig.apply.options import ApplyFailedError, ApplyOptions, ApplyResult, Prepared, RecoverResult
from histmig.apply.skipping import held_back, skips_of, split_held
from histmig.apply.sqlops import apply_db, probe_lock
from histmig.apply.tree import create, delete, mkdir, rename, rmdir, set_dir_times
from histmig.core.diagnostics import (HistmigError, RefusedError, Skip,
                                 UnfinishedTransactionError, Warning)
from histmig.core.homes import Homes
from histmig.apply.journal import (Journal, check_no_unfinished, new_txid, read_records, tx_root, tx_state,
                                   unfinished_transactions)
from histmig.core.locks import GlobalLock, ensure_private_dir



def apply_plan(plan, homes: Homes, *, options: ApplyOptions | None = None,
               guards: WriteGuards | None = None) -> ApplyResult:
    """``guards``: the tools' locks and live-session probes (histmig/apply/guards.py); by default the
    tool table's for ``homes``."""
    try:
        return _apply_plan(plan, homes, options, default_guards(homes) if guards is None else guards)
    except OSError as e:      # raised before the journal existed (lock, checks): nothing was written
        where = os.fsdecode(e.filename) if e.filename else None
        raise RefusedError(f"{_cause(e)}; nothing changed", path=where) from None


def _apply_plan(plan, homes: Homes, options: ApplyOptions | None, guards: WriteGuards) -> ApplyResult:
    opts = options or ApplyOptions()
    if opts.tail_transform is None:   # appended lines get the command's own per-line edit
        from histmig.core.tail_rules import for_plan
        opts = dataclasses.replace(opts, tail_transform=for_plan(plan))
    roots = validate_plan(plan, homes)
    with GlobalLock(homes.state):
        check_no_unfinished(homes)
        swept = time.monotonic()       # no later than precheck's /proc scan for open writers (apply/batch.py)
        preps = precheck(plan, homes, roots, opts, guards.live)
        locked = {os.path.realpath(lock.path): lock for lock in guards.file_locks}
        for real, lock in locked.items():
            if any(p.path == real and p.skip is None for p in preps):
                lock.check(lock.path)    # refuse before anything is written
        result = ApplyResult(skips=list(plan.skips) + skips_of(preps),
                             warnings=list(plan.warnings))
        todo = [p for p in preps if p.skip is None]
        if not todo:
            return result
        with contextlib.ExitStack() as held:
            for lock in guards.folder_locks:
                if touches(todo, lock.root):
                    held.enter_context(lock.hold(lock.root))
            _run(plan, homes, todo, opts, result, locked, swept)
    return result


def _run(plan, homes: Homes, todo: list[Prepared], opts: ApplyOptions, result: ApplyResult,
         locked: dict[str, FileLock], swept: float = 0.0) -> None:
    """Every error after the journal exists — any exception, not only I/O — rolls the transaction
    back before it propagates; only a kill or power loss leaves it for ``recover``."""
    fs = fsio.current()
    journal = _create_journal(fs, homes)
    result.txid = journal.txid
    ctx = Ctx(fs, journal, opts, result, locked=locked, swept=swept)
    try:
        journal.append_stream("begin", {"op": plan.op, "args": plan.args, "argv": opts.argv or [],
                                        "version": __version__, "roots": plan.roots,
                                        "summary": _summary_paths(plan)}, "ops", _op_list(todo),
                              sync=todo[0].method != "create")
        for prep, skip in _execute(ctx, todo):
            if skip is not None:
                _skipped(ctx, prep, skip)
            else:
                result.done.append(prep.path)
                takeback.note_done(ctx, prep)
                if prep.method == "rename":
                    ctx.renamed.append((prep.path, prep.op.dst))
                if opts.on_commit is not None and prep.method != "sql":
                    opts.on_commit(prep.path)
        batch.final_sweep(ctx)
        set_dir_times(ctx)
        batch.settle(ctx)
        journal.append("commit", done=len(result.done), skipped=len(result.skips))
    except BaseException as e:
        where = os.fsdecode(getattr(e, "filename", None) or getattr(e, "path", None) or "")
        _abort(fs, journal, e, where.removesuffix(" (temp)"))
    finally:
        journal.close()
    _release_reserve(journal.folder)
    _write_report(homes, result)


# ``begin`` is fsynced before the first step, except when that step is a batch of creates
# (convert): the batch's first act is to journal its intents with an fsync, which makes ``begin``
# durable with them (the same file), and nothing is touched before it. A power loss before that
# fsync leaves an empty journal and no backups: "empty", as after a crash before ``begin``
# (docs/safety.md, "What the write path guarantees"; tests/test_crash_creates.py).


def _summary_paths(plan) -> dict:
    """The planner's OLD/NEW (a move's path spellings): undo edits lines appended since backwards."""
    return {k: plan.summary[k] for k in ("old", "new") if isinstance(plan.summary.get(k), (str, list))}


RESERVE, RESERVE_BYTES = "reserve", 16 << 10


def _create_journal(fs: fsio.FS, homes: Homes) -> Journal:
    """The journal plus a small ``reserve`` file beside it: freed before the rollback, so the
    ``rolled-back`` record still fits when the apply failed because the state folder is full.
    Failing here changed nothing: what was created is removed again."""
    txid = new_txid(homes.state)
    try:
        journal = Journal.create(fs, homes.state, txid)
    except OSError as e:
        if e.errno != errno.EEXIST:
            shutil.rmtree(tx_root(homes.state) / txid, ignore_errors=True)
        raise ApplyFailedError(f"cannot create the journal: {e.strerror}; nothing changed",
                               path=e.filename or homes.state) from None
    try:
        fd = os.open(journal.folder / RESERVE, fsio.WRITE_FLAGS, 0o600)
        try:
            fsio.FS().write(fd, bytes(RESERVE_BYTES), RESERVE)   # not counted: not a step of the apply
        finally:
            os.close(fd)
    except OSError as e:
        journal.close()
        shutil.rmtree(journal.folder, ignore_errors=True)
        raise ApplyFailedError(f"cannot create the journal: {e.strerror}; nothing changed",
                               path=journal.folder) from None
    return journal


def _release_reserve(folder: Path) -> None:
    try:
        os.unlink(folder / RESERVE)
    except OSError:
        pass


def _op_list(todo: list[Prepared]):
    """``begin``'s ``ops``: ``[n, method, path]`` per operation; a database's first operation also
    carries a probe (one row the transaction changes), so recover can tell from the database
    alone whether a change whose records were lost was committed (:mod:`histmig.apply.backups`)."""
    first: dict[str, int] = {}
    for p in todo:
        if p.method == "sql":
            first.setdefault(p.path, p.n)
    for p in todo:
        if p.method == "sql" and first[p.path] == p.n:
            yield [p.n, p.method, p.path, backups.sql_probe([q.op for q in todo if q.method == "sql"
                                                             and q.path == p.path])]
        else:
            yield [p.n, p.method, p.path]


def _execute(ctx: Ctx, todo: list[Prepared]):
    """Run the file operations in plan order, consecutive file rewrites (or in-place patches) in
    batches that share their fsyncs (:mod:`histmig.apply.batch`); then each database's operations as
    one transaction (:func:`_databases`). An operation of a session or project folder that had one
    skipped while applying is not run (``held_back``); the consumer records each skip before the
    next operation is looked at."""
    i = 0
    while i < len(todo):
        prep = todo[i]
        i += 1
        if prep.method == "sql":
            continue                              # after every file (_databases)
        held = held_back(prep, ctx.skipped_units)
        lock = ctx.locked.get(prep.path)
        if lock is not None and prep.method in ("replace", "inplace"):
            if held is not None:
                yield prep, held
                continue
            with lock.hold(ctx.fs, lock.path):    # the client's own lock (Claude Code's: rows 35-36)
                yield prep, _guard(prep, lambda: _STEP[prep.method](ctx, prep))
            continue
        if prep.method in _BATCHED and _STEP[prep.method] is _DEFAULT_STEP[prep.method]:
            passed, i = _batch_of(todo, i - 1, ctx)
            held_now, group = split_held(passed, ctx.skipped_units)
            outcome = dict(zip((q.n for q in group), _guard(prep, lambda: _BATCHED[prep.method](ctx, group), group))
                           if group else ())
            yield from _finished_first([(q, held_now.get(q.n) or outcome.get(q.n)) for q in passed])
            continue
        yield prep, held if held is not None else _guard(prep, lambda: _STEP[prep.method](ctx, prep))
    yield from _databases(ctx, todo)


def _finished_first(outcomes: list[tuple[Prepared, Skip | None]]) -> list[tuple[Prepared, Skip | None]]:
    """A batch's written operations before its skips (each group in plan order): a skip puts back
    what is written of its session (histmig/apply/takeback.py), and a file of the batch written after
    the skipped one in plan order is written all the same when the batch does not hold it back (a
    patch in place, a delete, a mate replaced in the first round while the skipped file was retried)."""
    return [o for o in outcomes if o[1] is None] + [o for o in outcomes if o[1] is not None]


def _batch_of(todo: list[Prepared], i: int, ctx: Ctx) -> tuple[list[Prepared], int]:
    """The operations of the batch starting at ``i`` (its method, up to its batch size; database
    operations in between do not end it: they run last) and where the next one starts."""
    method, passed, j = todo[i].method, [], i
    while j < len(todo) and len(passed) < _BATCH_SIZE.get(method, batch.BATCH):
        q = todo[j]
        if q.method == method and q.path not in ctx.locked:
            passed.append(q)
        elif q.method != "sql":
            break
        j += 1
    return passed, j


def _databases(ctx: Ctx, todo: list[Prepared]):
    """Each database's operations as one transaction, after every file operation: a session whose
    file was skipped while applying keeps its rows too (``held_back``), so a flip's row never says NEW
    beside a rollout that still says OLD."""
    groups: dict[str, list[Prepared]] = {}
    for p in todo:
        if p.method == "sql":
            groups.setdefault(p.path, []).append(p)
    # every locked database first: its sessions are skipped (the consumer puts their files back)
    # before any other database commits a row of theirs
    for db in list(groups):
        held, rest = split_held(groups[db], ctx.skipped_units)
        if rest and (locked := _locked(db)) is not None:
            yield from ((p, held.get(p.n) or locked) for p in groups.pop(db))
    for db, group in groups.items():
        held, rest = split_held(group, ctx.skipped_units)
        if rest:
            _guard(rest[0], lambda: apply_db(ctx, db, rest))
        yield from ((p, held.get(p.n)) for p in group)


def _locked(db: str) -> Skip | None:
    """A database another process keeps write-locked past the probe (its client in a long
    transaction): none of its rows is changed, each is a ``db-locked`` skip, and the consumer puts
    back what the apply wrote of their sessions' files (takeback), so the rest of the apply stands
    instead of being rolled back whole (docs/opencode.md, "A locked database"). Any other error
    opening it stops the apply, as before."""
    try:
        probe_lock(db)
    except OSError as e:
        if e.errno != errno.EBUSY:
            raise
        return Skip(db, f"{e.strerror}; its rows and their sessions were left as they were; when it is free, "
                    "re-run the command", "db-locked")
    return None


def _guard(prep: Prepared, step, group: list[Prepared] = ()):
    """Name the file in an error: a call relative to a folder descriptor names only the entry."""
    try:
        return step()
    except OSError as e:
        name = os.fsdecode(e.filename) if e.filename else ""
        if not os.path.isabs(name):
            e.filename = next((q.path for q in group if name and q.name == name), None) or name or prep.path
        raise


_STEP = {"replace": rewrite, "inplace": patch_in_place, "create": create, "rename": rename, "delete": delete,
         "rmdir": rmdir, "mkdir": mkdir}
_DEFAULT_STEP = dict(_STEP)
_BATCH_SIZE = {"create": creates.BATCH}   # a create holds one descriptor, a rewrite three
_BATCHED = {"replace": batch.replace_batch, "inplace": batch.inplace_batch, "create": creates.create_batch,
            "delete": deletes.delete_batch}


def _skipped(ctx: Ctx, prep: Prepared, skip: Skip) -> None:
    ctx.journal.append("skip", n=prep.n, path=prep.path, reason=skip.reason)
    ctx.result.skips.append(skip)
    takeback.take_back(ctx, prep, skip)     # the rest of its session: held back (_execute) or put back


def _abort(fs: fsio.FS, journal: Journal, err: BaseException, where: str) -> None:
    what = _cause(err)
    how = rollback.Undo(strict=False)
    _release_reserve(journal.folder)
    try:
        rollback.revert_all(fs, journal.folder, how)
        _close_rolled_back(journal, how, f"{where}: {what}")
    except Exception as e2:
        raise UnfinishedTransactionError(f"{what}; rolling back also failed ({_cause(e2, named=True)}); "
                                         f"run histmig recover", path=where or None) from err
    if how.skips:     # a damaged backup, records lost: named, never reported as "nothing changed"
        kept = "; ".join(f"{s.path}: {s.reason}" for s in how.skips)
        raise ApplyFailedError(f"{what}; rolled back except {len(how.skips)} change(s): {kept}",
                               path=where or None) from None
    if isinstance(err, HistmigError) and not isinstance(err, ApplyFailedError):
        raise type(err)(f"{err}; rolled back, nothing changed", path=err.path, line=err.line) from None
    raise ApplyFailedError(f"{what}; rolled back, nothing changed", path=where or None) from None


def _close_rolled_back(journal: Journal, how: rollback.Undo, reason: str) -> None:
    """The ``rolled-back`` record; what could not be put back is listed as ``incomplete`` (the
    transaction then shows as ``partly-rolled-back``)."""
    incomplete = [{"path": s.path, "code": s.code, "reason": s.reason} for s in how.skips]
    journal.append("rolled-back", reason=reason, **({"incomplete": incomplete} if incomplete else {}))


def _cause(err: BaseException, *, named: bool = False) -> str:
    """The error in a few words: the OS's message (with the file when ``named``), "interrupted",
    or the type and text of anything unexpected."""
    if isinstance(err, OSError) and err.strerror:
        where = os.fsdecode(err.filename).removesuffix(" (temp)") if named and err.filename else ""
        return f"{where}: {err.strerror}" if where else err.strerror
    if isinstance(err, HistmigError):
        return err.describe() if named else str(err)
    if isinstance(err, KeyboardInterrupt):
        return "interrupted"
    if isinstance(err, fsio.PathChanged):
        return err.why
    return f"{type(err).__name__}: {err}"


def _write_report(homes: Homes, result: ApplyResult) -> None:
    """``<state>/reports/<txid>.json``: the skips and warnings, for scripts (created 0600)."""
    folder = Path(homes.state) / "reports"
    try:
        ensure_private_dir(folder)
        fd = os.open(folder / f"{result.txid}.json", os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "wb") as fh:
            for chunk in report_chunks(result.to_dict()):
                fh.write(chunk)
    except Exception:     # committed: nothing here may turn that into an error exit
        result.warnings.append(Warning("report-not-written", "could not write the report", str(folder)))


def report_chunks(report: dict) -> Iterator[bytes]:
    """``orjson.dumps(report, option=OPT_INDENT_2)`` in pieces: its ``done`` list a thousand paths at a
    time (one per file and database row: 43,000 for a flip of 8,000 sessions, 8 MB encoded at once at
    the apply's peak; docs/bench.md, "Scaling"). A nested value's lines are the top level's, indented
    two more spaces: a JSON string never holds a raw newline."""
    if not report:
        yield b"{}"
        return
    yield b"{\n"
    for i, (key, value) in enumerate(report.items()):
        yield (b",\n" if i else b"") + b"  " + orjson.dumps(key) + b": "
        if key == "done" and value:
            for at in range(0, len(value), 1000):
                part = value[at:at + 1000]
                yield (b",\n" if at else b"[\n") + b",\n".join(b"    " + orjson.dumps(p) for p in part)
            yield b"\n  ]"
        else:
            yield orjson.dumps(value, option=orjson.OPT_INDENT_2).replace(b"\n", b"\n  ")
    yield b"\n}"


# -- recover ---------------------------------------------------------------------------------------
def _undo_tx(fs: fsio.FS, folder: Path, how: rollback.Undo) -> None:
    recs = read_records(folder)
    already = {r["n"] for r in recs if r["kind"] == "undo-done"}
    journal = Journal.reopen(fs, folder)
    try:
        journal.append("undo-start")
        rollback.revert_all(fs, folder, how, skip_ns=already,
                            on_done=lambda n: journal.append("undo-done", n=n))
        if how.skips:
            journal.append("undo-stopped", skipped=[s.path for s in how.skips])
        else:
            journal.append("undone")
    finally:
        journal.close()


def recover(homes: Homes) -> RecoverResult:
    """Roll back every unfinished apply; finish every interrupted undo. Idempotent.

    A backup that does not match its journaled hash is not used and a backup whose records were
    lost is kept: the file stays as it is, is named (``bad-backup``, ``journal-truncated``), the
    transaction is closed as ``partly-rolled-back`` and the result's exit code is 1. An I/O error
    leaves the transaction unfinished and says so (fix the cause, run recover again)."""
    res = RecoverResult()
    with GlobalLock(homes.state):
        fs = fsio.current()
        # the unfinished ones by their state records alone: a finished journal is not parsed
        for txid in unfinished_transactions(homes.state):
            folder = tx_root(homes.state) / txid
            state = tx_state(folder)
            _release_reserve(folder)
            how = rollback.Undo(strict=state == "undoing")
            try:
                _recover_tx(fs, folder, state, how)
            except (OSError, HistmigError) as e:
                where = os.fsdecode(getattr(e, "filename", None) or getattr(e, "path", None) or "")
                raise UnfinishedTransactionError(
                    f"{_cause(e)}; transaction {txid} is not recovered yet: fix the cause and run "
                    f"histmig recover again", path=where.removesuffix(" (temp)") or None) from None
            res.txids.append(txid)
            res.restored.extend(how.restored)
            res.warnings.extend(how.warnings)
            res.warnings.extend(Warning(s.code if s.code in _NAMED else "not-restored", s.reason, s.path)
                                for s in how.skips)
            if any(s.code in _NAMED for s in how.skips) or (how.skips and state != "undoing"):
                res.incomplete.append(txid)     # a rollback that left a file changed is not a success
    return res


# recover cannot do better: exit 1, named (source-taken: an undo's renamed backup lost its name
# to another file, histmig/apply/rollback.py ``_source_named``)
_NAMED = ("bad-backup", "journal-truncated", "source-taken")


def _recover_tx(fs: fsio.FS, folder: Path, state: str, how: rollback.Undo) -> None:
    if state == "undoing":
        _undo_tx(fs, folder, how)
        return
    rollback.revert_all(fs, folder, how)
    journal = Journal.reopen(fs, folder)
    try:
        _close_rolled_back(journal, how, "recover")
    finally:
        journal.close()


