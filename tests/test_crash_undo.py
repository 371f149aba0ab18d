"""Crash consistency of ``undo``, up to and including the records it leaves in the undone
transaction's journal (``undo-by`` and ``undone``: one write and one fsync, histmig/apply/journal.py
``mark_undo``). An undo of a flip is crashed before every counted operation, then each journal
loses every byte written after its last fsync (the power-loss view; files are kept as the crash
left them). ``recover`` and one more ``undo`` must then leave every session file exactly as before
the flip, and the flip ``undone``: nothing the undo did or was asked to do is lost. Run twice:
without the flip's ``settled`` stats (undo writes temps) and with them a second old (undo renames
the flip's backups, the original inodes, into place: histmig/apply/batch.py "Putting an inode
back")."""
from __future__ import annotations

import os
import shutil
import sqlite3
import time

import pytest

from clirun import histmig
from codex_fixtures import home_with, rollout, tid
from histmig.apply import apply_plan, check_no_unfinished, fsio, recover
from histmig.apply.journal import JOURNAL, list_transactions
from histmig.tools import resolve_homes
from histmig.verbs.flip import plan_flip
from test_apply_fixtures import no_temps, snapshot
from test_undo_settled import SECOND, edit_journal, stat_later

HOUR = 3600 * 10**9


class _PowerCut(fsio.FS):
    """Dies (``os._exit``: no rollback runs) just before counted operation ``k``, after writing
    each journal's durable size (what its last fsync covered) to ``note``."""

    def __init__(self, k: int, note: str):
        super().__init__(skip_fsync=True)
        self.k, self.note, self.synced = k, note, {}

    def _op(self, name, label):
        if self.count + 1 == self.k:
            with open(self.note, "w") as fh:
                fh.write("\n".join(f"{size} {path}" for path, size in self.synced.items()))
            os._exit(9)
        super()._op(name, label)

    def fsync(self, fd, label):
        super().fsync(fd, label)
        self._note(fd, label)

    def fsync_batch(self, items):
        super().fsync_batch(items)
        for fd, label in items:
            self._note(fd, label)

    def _note(self, fd, label):
        if str(label).endswith(JOURNAL):
            self.synced[str(label)] = os.fstat(fd).st_size


def _flipped(h, settled: bool) -> tuple[dict, str]:
    """A fresh tree, flipped; the session files before the flip and the flip's txid. ``settled``: as
    if the flip had taken its last stats a second later (its files then count as untouched); else
    without them (how many count as untouched would depend on the clock, and so would the undo's
    operations, which the crash points count)."""
    for d in (h.codex, h.state):
        shutil.rmtree(d, ignore_errors=True)
    paths = home_with(h.codex, {tid(i): rollout(tid(i), turns=2) for i in range(1, 4)})
    old = time.time_ns() - HOUR
    for p in paths.values():
        os.utime(p, ns=(old, old))
    before = _files(h)
    txid = apply_plan(plan_flip(h, "openai", "my-provider"), h).txid
    if settled:
        stat_later(h.state / "tx" / txid, SECOND)
    else:         # no stats (an older journal): every file written as a temp, whatever the clock did
        edit_journal(h.state / "tx" / txid, lambda r: None if r["kind"] == "settled" else r)
    return before, txid


def _files(h) -> dict:
    """Every file under the Codex home (bytes, mode, mtime); a database by its rows (its pages
    are SQLite's to lay out)."""
    out = {r: v for r, v in snapshot(h.codex).items() if v[0] == "file" and ".sqlite" not in r}
    for db in sorted(h.codex.glob("*.sqlite")):
        con = sqlite3.connect(db)
        try:
            out[db.name] = list(con.iterdump())
        finally:
            con.close()
    return out


def _crash_at(k: int, note: str) -> int:
    pid = os.fork()
    if pid == 0:     # pragma: no cover - the child
        code = 1
        try:
            with fsio.using(_PowerCut(k, note)):
                code = histmig("undo").exit_code
        finally:
            os._exit(code)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


def _cut_journals(note: str) -> None:
    """Every journal fsynced so far back to its durable size (any other was never fsynced after
    the crash's last write of it: the undone flip's journal before its mark is such a one only
    if the mark was written; its size then is what the flip's commit made durable)."""
    for line in open(note).read().splitlines():
        size, path = line.split(" ", 1)
        with open(path, "r+b") as fh:
            fh.truncate(int(size))


@pytest.mark.slow
@pytest.mark.parametrize("settled", [False, True], ids=["temps", "inodes-put-back"])
def test_undo_crashed_at_every_operation_recovers_and_loses_nothing(tmp_path, settled):
    h = resolve_homes()
    before, txid = _flipped(h, settled)
    flipped = _files(h)
    assert flipped != before
    flip_journal = h.state / "tx" / txid / JOURNAL
    with fsio.using(fsio.FS(skip_fsync=True)) as spy:
        assert histmig("undo").exit_code == 0
    assert _files(h) == before
    n_ops = spy.count
    left = [n for n in os.listdir(h.state / "tx" / txid / "b") if not n.endswith(".sqlite")]
    assert (left == []) == settled, left          # settled: every backup renamed into place
    assert n_ops > 20 and spy.log[-1] == ("fsync", str(flip_journal))    # the mark is the last step
    lost_mark = 0
    for k in range(1, n_ops + 1):
        before, txid = _flipped(h, settled)
        flipped = _files(h)
        flip_size = (h.state / "tx" / txid / JOURNAL).stat().st_size    # durable: the flip committed
        note = str(tmp_path / f"synced-{k}")
        assert _crash_at(k, note) == 9, k
        if not any(str(h.state / "tx" / txid) in line for line in open(note).read().splitlines()):
            with open(h.state / "tx" / txid / JOURNAL, "r+b") as fh:
                fh.truncate(flip_size)        # the mark's write (if any) was never fsynced
        _cut_journals(note)
        with fsio.using(fsio.FS(skip_fsync=True)):
            recover(h)
            assert recover(h).nothing, k
            check_no_unfinished(h)
        now = _files(h)
        assert now in (before, flipped), f"crash before operation {k} ({spy.log[k - 1]}): half undone"
        states = {t.txid: t.state for t in list_transactions(h.state)}
        undo_committed = "committed" in [st for t, st in states.items() if t != txid]
        lost_mark += undo_committed and states[txid] == "committed"
        if states[txid] != "undone":          # rolled back, or committed with its mark lost: again
            assert histmig("undo", txid).exit_code == 0, k
        assert _files(h) == before, k
        assert {t.txid: t.state for t in list_transactions(h.state)}[txid] == "undone", k
        assert no_temps(h.home), k
    assert lost_mark, "no crash point lost the mark of a committed undo: the test proves nothing"
