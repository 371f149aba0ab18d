"""Undo's durable writes are no more than its apply's (issue 15: "undo <= its apply"; docs/safety.md
"Undo"): the inverse plan goes through the same batch protocol (one sync of the temps and one of the
folders per batch, intents and dones journaled once per batch), every file it rewrites is backed up
by a hard link, never copied, as the apply's was, and the undone transaction's journal gets its
``undo-by`` and ``undone`` records with one fsync. Measured on the 2,000-session bench tree
(strace -f -c, docs/safety.md "What undo writes"): the apply 6 syncfs, 17 fsync, 20 fdatasync
(SQLite), writing 806 MB; its undo, each file's original inode renamed back into place, 4, 15, 20,
writing 23 MB. Here some files may be put back that way and some written as temps (the clock
decides which count as untouched): the counts hold either way."""
from __future__ import annotations

import os
import time
from collections import Counter

import pytest

from histmig.apply import apply_plan, batch, fsio
from histmig.apply.journal import JOURNAL, read_records
from histmig.verbs.flip import plan_flip
from histmig.verbs.undo.run import undo

from codex_fixtures import home_with, rollout, tid
from test_move_fixtures import homes

HOUR = 3600 * 10**9


class SyncCounter(fsio.FS):
    """The calls that reach the disk's flush, by the label of their first item: each ``fsync``,
    and each batch's one ``syncfs`` (``fsync_batch`` logs every item as an ``fsync`` op for crash
    points; it is one flush). Nothing is flushed (``skip_fsync``): only the protocol is compared."""

    def __init__(self) -> None:
        super().__init__(skip_fsync=True)
        self.flushes: list[str] = []

    def fsync(self, fd: int, label: str) -> None:
        self.flushes.append(label)
        super().fsync(fd, label)

    def fsync_batch(self, items) -> None:
        self.flushes.append(items[0][1])
        super().fsync_batch(items)


def _profile(run) -> tuple[list[str], Counter]:
    with fsio.using(SyncCounter()) as fs:
        run()
    return fs.flushes, Counter(name for name, _label in fs.log)


@pytest.mark.parametrize("per_batch", [64, 2])
def test_undo_of_a_flip_flushes_and_copies_no_more_than_the_flip(monkeypatch, per_batch):
    monkeypatch.setattr(batch, "BATCH", per_batch)      # 5 sessions: one batch, or three
    h = homes()
    paths = home_with(h.codex, {tid(i): rollout(tid(i), turns=2) for i in range(1, 6)})
    old = time.time_ns() - HOUR          # written long ago, as on a real disk (undo's settled stat)
    for p in paths.values():
        os.utime(p, ns=(old, old))
    res = {}
    flip_flushes, flip_ops = _profile(lambda: res.update(tx=apply_plan(plan_flip(h, "openai", "my-provider"), h)))
    undo_flushes, undo_ops = _profile(lambda: res.update(undo=undo(h)))
    assert res["undo"].state == "undone" and len(res["undo"].done) == len(res["tx"].done)
    undone_journal = str(h.state / "tx" / res["tx"].txid / JOURNAL)
    own = [label for label in undo_flushes if label != undone_journal]
    assert len(own) <= len(flip_flushes), (own, flip_flushes)
    assert undo_flushes.count(undone_journal) == 1          # undo-by and undone: one write, one fsync
    assert undo_ops["copy"] == flip_ops["copy"] == 0          # backups are hard links, none copied
    assert undo_ops["link"] == flip_ops["link"] == len(paths)
    for name in ("fsync", "replace", "rename"):
        assert undo_ops[name] <= flip_ops[name] + (name == "fsync"), (name, undo_ops[name], flip_ops[name])
    kinds = [r["kind"] for r in read_records(h.state / "tx" / res["tx"].txid)]
    assert kinds[-2:] == ["undo-by", "undone"]
