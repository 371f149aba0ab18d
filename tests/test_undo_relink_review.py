"""Review of the undo inode rename (histmig/apply/batch.py "Putting an inode back"): scenarios the
first tests did not cover."""
from __future__ import annotations

import os
import time

import orjson
import pytest

from histmig.apply import apply_plan, fsio
from histmig.apply.journal import list_transactions
from histmig.core.plan import Fingerprint, Patch, Plan, WriteFile
from histmig.tools import resolve_homes
from histmig.verbs.undo.run import undo

from test_undo_settled import SECOND, edit_journal, stat_later

HOUR = 3600 * 10**9
OLD, NEW = b'"provider":"openai"', b'"provider":"mine!!"'


def _records(folder) -> list[dict]:
    return [orjson.loads(line) for line in (folder / "journal.jsonl").read_bytes().splitlines()]


def _two_file_session():
    """One session of two files (its unit: both), rewritten by one apply; the originals an hour old."""
    h = resolve_homes()
    folder = h.codex / "sessions" / "s"
    folder.mkdir(parents=True)
    old = time.time_ns() - HOUR
    paths, originals = [], {}
    for i in (1, 2):
        p = folder / f"f{i}.jsonl"
        data = b'{"n":%d,' % i + OLD + b'}\n'
        p.write_bytes(data)
        os.utime(p, ns=(old, old))
        paths.append(p)
        originals[p] = data
    ops = []
    for p in paths:
        at = originals[p].index(OLD)
        ops.append(WriteFile(path=str(p), expect=Fingerprint.of(str(p)), patches=(Patch(at, OLD, NEW),),
                             session={"tool": "review", "id": "s1"}))
    res = apply_plan(Plan("review", {}, [str(h.codex)], ops), h)
    assert res.exit_code == 0, res.skips
    return h, paths, originals, h.state / "tx" / res.txid


@pytest.mark.parametrize("settled", [False, True], ids=["temps", "inodes-put-back"])
def test_a_session_half_undone_after_a_rename_can_be_finished_by_a_second_undo(settled):
    """The second file of a session changes during the undo's apply (skipped), after the first was
    put back by renaming the apply's backup: the undo is partly done, and once the second file is
    left alone again, a second undo must finish the session (not report the renamed backup missing)."""
    h, (f1, f2), originals, folder = _two_file_session()
    if settled:
        stat_later(folder, SECOND)
    else:
        edit_journal(folder, lambda r: None if r["kind"] == "settled" else r)
    fs = fsio.FS()
    fired = []

    def touch_second(label):
        if label == str(f2) and not fired:
            fired.append(label)
            st = os.lstat(f2)
            os.utime(f2, ns=(st.st_atime_ns, st.st_mtime_ns + 1))   # changed: skipped by this undo
    fs.hooks["before-final-check"] = touch_second
    with fsio.using(fs):
        out = undo(h)
    assert fired and out.state == "partly-undone", (out.state, out.skips)
    assert f1.read_bytes() == originals[f1]                  # put back (its inode renamed into place)
    assert f2.read_bytes() != originals[f2]                  # skipped
    again = undo(h, folder.name)
    assert f2.read_bytes() == originals[f2], (again.state, again.skips, again.undo_txid)
    assert f1.read_bytes() == originals[f1]
    assert again.state == "undone", again.skips
    assert {t.txid: t.state for t in list_transactions(h.state)}[folder.name] == "undone"
