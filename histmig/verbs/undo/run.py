"""Run an undo: plan it against the disk now, apply the inverse plan through the journaled write
path (its own transaction: crash-safe, rolled back on error), then record in the undone
transaction's journal what was reverted and what was kept."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from histmig.apply import fsio
from histmig.apply import ApplyOptions, ApplyResult, apply_plan, check_no_unfinished
from histmig.core.diagnostics import EXIT_OK, EXIT_SKIPPED, Skip, Warning
from histmig.apply.journal import mark_undo
from histmig.core.locks import GlobalLock, ensure_private_dir
from histmig.verbs.undo import inverse_line_edit, pick_transaction, plan_and_begin
from histmig.verbs.undo.coverage import reverted
from histmig.core.plan import Plan, Rename


@dataclass
class UndoResult:
    txid: str                          # the transaction undone
    undo_txid: str | None = None       # the transaction that undid it (None: nothing to write)
    plan: Plan | None = None
    done: list[str] = field(default_factory=list)
    skips: list[Skip] = field(default_factory=list)
    warnings: list[Warning] = field(default_factory=list)
    trash: list[str] = field(default_factory=list)
    state: str = ""

    @property
    def exit_code(self) -> int:
        return EXIT_SKIPPED if self.skips else EXIT_OK

    def to_dict(self) -> dict[str, Any]:
        return {"txid": self.txid, "undo_txid": self.undo_txid, "state": self.state, "done": self.done,
                "skips": [s.to_dict() for s in self.skips], "warnings": [w.to_dict() for w in self.warnings],
                "trash": self.trash, "exit_code": self.exit_code}


def undo(homes, txid: str | None = None, *, force: bool = False, restore_deleted: bool = False,
         dry_run: bool = False, argv: list[str] | None = None, keep_appended: bool = True) -> UndoResult:
    """``keep_appended`` is accepted for old callers: appended lines are always kept."""
    with GlobalLock(homes.state):
        check_no_unfinished(homes)
        folder = pick_transaction(homes.state, txid, homes.roots())
        plan, begin = plan_and_begin(homes, folder, force=force, restore_deleted=restore_deleted)
    res = UndoResult(txid=folder.name, plan=plan, skips=list(plan.skips), warnings=list(plan.warnings))
    if dry_run:
        return res
    trash = [op.dst for op in plan.operations if isinstance(op, Rename) and "/trash/" in op.dst]
    if trash:
        ensure_private_dir(homes.state / "trash")
        ensure_private_dir(homes.state / "trash" / folder.name)
    applied = ApplyResult()
    if plan.operations:
        # the inverse plan was made from whole-file reads moments ago (verbs/undo/diff.py)
        opts = ApplyOptions(tail_transform=inverse_line_edit(begin), argv=argv, trust_plan_hash=True)
        applied = apply_plan(plan, homes, options=opts)
    skipped = {s.path for s in applied.skips}
    res.undo_txid, res.done = applied.txid, applied.done
    res.skips = res.skips + [s for s in applied.skips if s not in plan.skips]
    res.warnings = res.warnings + [w for w in applied.warnings if w not in plan.warnings]
    res.trash = [p for p in trash if p not in skipped]
    with GlobalLock(homes.state):
        mark_undo(fsio.current(), folder, by=applied.txid, ns=reverted(plan, skipped),
                  kept=[s.to_dict() for s in res.skips])
    res.state = "partly-undone" if res.skips else "undone"
    return res
