"""The apply engine behind :mod:`histmig.apply` (imported on first use, so commands that only plan
or list do not pay for it)."""
from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import orjson

from histmig import __version__, fsio
from histmig.apply import batch, rollback
from histmig.apply.check import precheck, touches, validate_plan
from histmig.apply.files import Ctx, patch_in_place, rewrite
from histmig.apply.options import ApplyOptions, ApplyResult, Prepared, RecoverResult
from histmig.apply.skipping import skips_of
from histmig.apply.sqlops import apply_db
from histmig.apply.tree import create, delete, rename, rmdir
from histmig.diagnostics import (HistmigError, NotFoundError, RefusedError, Skip,
                                 UnfinishedTransactionError, Warning)
from histmig.homes import Homes
from histmig.journal import Journal, new_txid, read_records, tx_root
from histmig.locks import GlobalLock, check_claude_json_lock, claude_json_lock, codex_maintenance_lock, ensure_private_dir

from histmig.apply import ApplyFailedError, check_no_unfinished, transactions


def apply_plan(plan, homes: Homes, *, options: ApplyOptions | None = None) -> ApplyResult:
    opts = options or ApplyOptions()
    if opts.tail_transform is None:   # appended lines get the command's own per-line edit
        from histmig.apply.tails import for_plan
        opts = dataclasses.replace(opts, tail_transform=for_plan(plan))
    roots = validate_plan(plan, homes)
    with GlobalLock(homes.state):
        check_no_unfinished(homes)
        preps = precheck(plan, homes, roots, opts)
        claude_json = os.path.realpath(homes.claude_json)
        if any(p.path == claude_json and p.skip is None for p in preps):
            check_claude_json_lock(homes.claude_json)    # refuse before anything is written
        result = ApplyResult(skips=list(plan.skips) + skips_of(preps),
                             warnings=list(plan.warnings))
        todo = [p for p in preps if p.skip is None]
        if not todo:
            return result
        with codex_maintenance_lock(homes.codex) if touches(todo, homes.codex) else _nothing():
            _run(plan, homes, todo, opts, result)
    return result


class _nothing:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


def _run(plan, homes: Homes, todo: list[Prepared], opts: ApplyOptions, result: ApplyResult) -> None:
    fs = fsio.current()
    try:
        journal = Journal.create(fs, homes.state, new_txid())
    except OSError as e:
        raise ApplyFailedError(f"cannot create the journal: {e.strerror}; nothing changed",
                               path=homes.state) from None
    result.txid = journal.txid
    ctx = Ctx(fs, journal, opts, result, claude_json=os.path.realpath(homes.claude_json),
              claude_json_name=str(homes.claude_json))
    try:
        journal.append("begin", op=plan.op, args=plan.args, argv=opts.argv or [], version=__version__,
                       roots=plan.roots)
        for prep, skip in _execute(ctx, todo):
            if skip is not None:
                _skipped(ctx, prep, skip)
            else:
                result.done.append(prep.path)
                if opts.on_commit is not None and prep.method != "sql":
                    opts.on_commit(prep.path)
        journal.append("commit", done=len(result.done), skipped=len(result.skips))
    except (OSError, HistmigError) as e:
        where = os.fsdecode(getattr(e, "filename", None) or getattr(e, "path", None) or "")
        where = where.removesuffix(" (temp)")
        _abort(fs, journal, e, where)
    finally:
        journal.close()
    _write_report(homes, result)


def _execute(ctx: Ctx, todo: list[Prepared]):
    """Run operations in plan order; all SQL operations on one database run as one transaction at
    the position of that database's first operation; consecutive file rewrites (or in-place
    patches) run in batches that share their fsyncs (:mod:`histmig.apply.batch`). SQL operations
    of a database already done do not end a batch (they have nothing left to do)."""
    seen_dbs: set[str] = set()
    i = 0
    while i < len(todo):
        prep = todo[i]
        if prep.path == ctx.claude_json and prep.method in ("replace", "inplace"):
            i += 1
            with claude_json_lock(ctx.fs, ctx.claude_json_name):   # Claude Code's own lock (rows 35-36)
                yield prep, _guard(prep, lambda: _STEP[prep.method](ctx, prep))
            continue
        if prep.method in _BATCHED and _STEP[prep.method] is _DEFAULT_STEP[prep.method]:
            group, passed, j = [], [], i
            while j < len(todo) and len(group) < batch.BATCH:
                q = todo[j]
                if q.method == prep.method and q.path != ctx.claude_json:
                    group.append(q)
                elif not (q.method == "sql" and q.path in seen_dbs):
                    break
                passed.append(q)
                j += 1
            outcome = dict(zip((q.n for q in group), _guard(prep, lambda: _BATCHED[prep.method](ctx, group))))
            yield from ((q, outcome.get(q.n)) for q in passed)
            i = j
            continue
        i += 1
        if prep.method == "sql":
            if prep.path in seen_dbs:
                yield prep, None
                continue
            seen_dbs.add(prep.path)
            group = [p for p in todo if p.method == "sql" and p.path == prep.path]
            yield prep, _guard(prep, lambda: apply_db(ctx, prep.path, group))
            continue
        yield prep, _guard(prep, lambda: _STEP[prep.method](ctx, prep))


def _guard(prep: Prepared, step):
    try:
        return step()
    except OSError as e:
        if not e.filename:
            e.filename = prep.path
        raise


_STEP = {"replace": rewrite, "inplace": patch_in_place, "create": create, "rename": rename, "delete": delete,
         "rmdir": rmdir}
_DEFAULT_STEP = dict(_STEP)
_BATCHED = {"replace": batch.replace_batch, "inplace": batch.inplace_batch}


def _skipped(ctx: Ctx, prep: Prepared, skip: Skip) -> None:
    ctx.journal.append("skip", n=prep.n, path=prep.path, reason=skip.reason)
    ctx.result.skips.append(skip)


def _abort(fs: fsio.FS, journal: Journal, err: Exception, where: str) -> None:
    what = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
    how = rollback.Undo(strict=False)
    try:
        rollback.revert_all(fs, journal.folder, how)
        journal.append("rolled-back", reason=f"{where}: {what}")
    except Exception as e2:
        raise UnfinishedTransactionError(
            f"{where}: {what}; rolling back also failed ({e2}); run histmig recover", path=where) from err
    if isinstance(err, HistmigError) and not isinstance(err, ApplyFailedError):
        raise type(err)(f"{err}; rolled back, nothing changed", path=err.path) from None
    raise ApplyFailedError(f"{what}; rolled back, nothing changed", path=where) from None


def _write_report(homes: Homes, result: ApplyResult) -> None:
    """``<state>/reports/<txid>.json``: the skips and warnings, for scripts (created 0600)."""
    folder = Path(homes.state) / "reports"
    try:
        ensure_private_dir(folder)
        fd = os.open(folder / f"{result.txid}.json", os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(orjson.dumps(result.to_dict(), option=orjson.OPT_INDENT_2))
    except OSError:
        result.warnings.append(Warning("report-not-written", "could not write the report", str(folder)))


# -- undo and recover -----------------------------------------------------------------------------
def _tx_folder(homes: Homes, txid: str | None) -> Path:
    txs = transactions(homes)
    if txid is None:
        committed = [t for t in txs if t.state in ("committed", "partly-undone")]
        if not committed:
            raise NotFoundError("no transaction to undo")
        return tx_root(homes.state) / committed[-1].txid
    match = [t for t in txs if t.txid == txid or t.txid.startswith(txid)]
    if len(match) != 1:
        raise NotFoundError(f"no transaction {txid}" if not match else f"{txid} is ambiguous")
    return tx_root(homes.state) / match[0].txid


def undo(homes: Homes, txid: str | None = None, *, keep_appended: bool = False,
         restore_deleted: bool = False, force: bool = False) -> ApplyResult:
    with GlobalLock(homes.state):
        check_no_unfinished(homes)
        folder = _tx_folder(homes, txid)
        state = rollback_state(folder)
        if state == "undone":
            raise RefusedError(f"transaction {folder.name} already undone")
        if state == "rolled-back":
            raise RefusedError(f"transaction {folder.name} was rolled back; nothing to undo")
        how = rollback.Undo(strict=True, keep_appended=keep_appended, restore_deleted=restore_deleted,
                            force=force)
        _undo_tx(fsio.current(), folder, how)
    return ApplyResult(txid=folder.name, done=how.restored, skips=how.skips, warnings=how.warnings)


def rollback_state(folder: Path) -> str:
    from histmig.journal import state_of
    return state_of(read_records(folder))


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
    """Roll back every unfinished apply; finish every interrupted undo. Idempotent."""
    res = RecoverResult()
    with GlobalLock(homes.state):
        fs = fsio.current()
        for tx in transactions(homes):
            if not tx.unfinished:
                continue
            folder = tx_root(homes.state) / tx.txid
            how = rollback.Undo(strict=tx.state == "undoing")
            if tx.state == "undoing":
                _undo_tx(fs, folder, how)
            else:
                rollback.revert_all(fs, folder, how)
                journal = Journal.reopen(fs, folder)
                try:
                    journal.append("rolled-back", reason="recover")
                finally:
                    journal.close()
            res.txids.append(tx.txid)
            res.restored.extend(how.restored)
            res.warnings.extend(how.warnings)
            res.warnings.extend(Warning("not-restored", s.reason, s.path) for s in how.skips)
    return res


