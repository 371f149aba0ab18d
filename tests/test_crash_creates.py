"""Crash consistency of ``convert --apply`` (the batched creates of histmig/apply/creates.py).

A create batch's ``done`` records are written without an fsync of their own: the next batch's
intent fsync or the ``commit`` record's fsync makes them durable (docs/safety.md, "What the write
path guarantees"). These tests crash a real ``convert --apply`` before every counted operation, then
take the power-loss view of the journal: every byte written after its last fsync is lost (the created
files are kept as the crash left them, renames included, the harshest mix for recover). ``recover``
must then leave the tool homes exactly as before, or, when the durable journal says ``commit``,
every converted file complete.
"""
from __future__ import annotations

import os
import shutil

import pytest

from clirun import histmig
from codex_fixtures import home_with, rollout, tid
from histmig.apply import check_no_unfinished, fsio, recover
from histmig.apply.journal import JOURNAL, list_transactions, read_records
from histmig.tools import resolve_homes
from test_apply_fixtures import no_temps, snapshot

ARGV = ["convert", "--to", "claude-code", "--from", "codex", "--all", "--apply"]


class _PowerCut(fsio.FS):
    """Dies (``os._exit``: no rollback runs) just before counted operation ``k``, after writing the
    journal's durable size (what its last fsync covered) to ``note``."""

    def __init__(self, k: int, note: str):
        super().__init__(skip_fsync=True)
        self.k, self.note, self.synced = k, note, 0

    def _op(self, name, label):
        if self.count + 1 == self.k:
            with open(self.note, "w") as fh:
                fh.write(str(self.synced))
            os._exit(9)
        super()._op(name, label)

    def fsync(self, fd, label):
        super().fsync(fd, label)
        if str(label).endswith(JOURNAL):
            self.synced = os.fstat(fd).st_size

    def fsync_batch(self, items):
        super().fsync_batch(items)
        for fd, label in items:
            if str(label).endswith(JOURNAL):
                self.synced = os.fstat(fd).st_size


def _tree(h) -> None:
    for d in (h.codex, h.claude, h.state, h.home / "w"):
        shutil.rmtree(d, ignore_errors=True)
    h.claude.mkdir(parents=True)
    cwd = str(h.home / "w" / "proj")
    home_with(h.codex, {tid(i): rollout(tid(i), turns=2, cwd=cwd) for i in range(1, 4)})


def _user(h) -> dict:
    state = os.path.relpath(h.state, h.home).split("/")[0] + "/"
    return {r: v for r, v in snapshot(h.home).items() if not (r + "/").startswith(state)}


def _crash_at(h, k: int, note: str) -> int:
    """Run the convert in a forked child that dies before operation ``k``; its exit status."""
    pid = os.fork()
    if pid == 0:     # pragma: no cover - the child
        code = 1
        try:
            with fsio.using(_PowerCut(k, note)):
                code = histmig(*ARGV).exit_code
        finally:
            os._exit(code)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


def _cut_journal(h, note: str) -> tuple[int, int]:
    """Drop the unsynced tail of the journal; (done records lost, creates renamed without a
    durable done)."""
    txs = list((h.state / "tx").glob("*")) if (h.state / "tx").exists() else []
    if len(txs) != 1 or not (txs[0] / JOURNAL).exists():
        return 0, 0
    (tx,) = txs
    before = read_records(tx)
    with open(tx / JOURNAL, "r+b") as fh:
        fh.truncate(int(open(note).read()))
    after = read_records(tx)
    kept = {r["n"] for r in after if r["kind"] == "done"}
    lost = sum(r["kind"] == "done" and r["n"] not in kept for r in before)
    renamed = sum(r["kind"] == "intent" and r["n"] not in kept and os.path.exists(r["path"]) for r in after)
    return lost, renamed


@pytest.mark.slow
def test_power_loss_of_the_journals_unsynced_tail_at_every_operation_recovers(tmp_path):
    h = resolve_homes()
    _tree(h)
    with fsio.using(fsio.FS(skip_fsync=True)) as spy:
        assert histmig(*ARGV).exit_code == 0
    post = _user(h)
    n_ops = spy.count
    assert n_ops > 20
    exercised = 0
    for k in range(1, n_ops + 1):
        _tree(h)
        pre = _user(h)
        note = str(tmp_path / f"synced-{k}")
        assert _crash_at(h, k, note) == 9, k
        lost, renamed = _cut_journal(h, note)
        exercised += bool(lost and renamed)
        committed = [t.state for t in list_transactions(h.state)] == ["committed"]
        with fsio.using(fsio.FS(skip_fsync=True)):
            recover(h)
            assert recover(h).nothing, k
            check_no_unfinished(h)
        if committed:
            assert _user(h).keys() == post.keys(), k
        else:
            assert _user(h) == pre, f"crash before operation {k} ({spy.log[k - 1]}): not rolled back"
        assert no_temps(h.home), k
    assert exercised, "no crash point lost a done record of a renamed file: the test proves nothing"


def test_a_create_batch_syncs_its_intents_not_its_dones():
    """One journal fsync per batch (the intents; the first one also makes ``begin`` durable)
    besides ``commit``; the temps and the folders each one batch sync."""
    h = resolve_homes()
    _tree(h)
    with fsio.using(fsio.FS(skip_fsync=True)) as spy:
        assert histmig(*ARGV).exit_code == 0
    names = [(n, label.endswith(JOURNAL)) for n, label in spy.log]
    journal_fsyncs = [i for i, (n, j) in enumerate(names) if n == "fsync" and j]
    assert len(journal_fsyncs) == 2       # the batch's intents (and begin with them), commit
    assert spy.log.index(("write", spy.log[journal_fsyncs[0]][1])) < journal_fsyncs[0]
    last_rename = max(i for i, (n, _) in enumerate(names) if n == "rename")
    writes_after = [i for i, (n, j) in enumerate(names) if n == "write" and j and i > last_rename]
    assert len(writes_after) == 2         # the dones (not synced) and the commit
    assert journal_fsyncs[-1] > writes_after[-1]


def test_batches_of_creates_each_sync_their_intents(monkeypatch):
    from histmig.apply import engine
    monkeypatch.setitem(engine._BATCH_SIZE, "create", 2)      # 3 sessions: two batches
    h = resolve_homes()
    _tree(h)
    with fsio.using(fsio.FS(skip_fsync=True)) as spy:
        assert histmig(*ARGV).exit_code == 0
    journal_fsyncs = [n for n, label in spy.log if n == "fsync" and label.endswith(JOURNAL)]
    assert len(journal_fsyncs) == 3       # each batch's intents (begin with the first), commit
    assert len(list(h.claude.rglob("*.jsonl"))) == 3


def test_batch_size_keeps_half_the_descriptors_for_the_rest_of_the_run():
    from histmig.apply.creates import batch_size
    assert batch_size(1024) == 384              # the common soft limit
    assert batch_size(20000) == 1024            # capped
    assert batch_size(256) == 64                # never below 64 (64 files + 64 folders < 256)
    assert batch_size(-1) == 1024               # RLIM_INFINITY


def test_rewrite_batch_keeps_a_third_of_the_descriptors():
    """A rewrite holds source, temp and folder descriptors (histmig/apply/batch.py BATCH)."""
    from histmig.apply.creates import batch_size
    assert batch_size(1024, per_file=3) == 256
    assert batch_size(20000, per_file=3) == 1024
    assert batch_size(256, per_file=3) == 64
