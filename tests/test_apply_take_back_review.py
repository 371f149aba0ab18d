"""Review of the take-back (histmig/apply/takeback.py): a session or project folder is changed whole
also when the file skipped comes first in its batch, for every batch kind; and what a take-back
leaves (folders, journal records) is counted right by recover, rollback and undo."""
from __future__ import annotations

import os

from histmig.apply import apply_plan, fsio
from histmig.core.plan import Fingerprint, Patch, Plan, WriteFile
from histmig.verbs.undo.run import undo

from test_move_fixtures import homes
from test_undo_partial_tools import changed, tree

OLD, NEW = b'"provider":"openai"', b'"provider":"mine!!"'


def _session_files(h, n: int = 3):
    folder = h.codex / "sessions" / "s"
    folder.mkdir(parents=True)
    files = []
    for i in range(1, n + 1):
        p = folder / f"f{i}.jsonl"
        p.write_bytes(b'{"n":%d,' % i + OLD + b'}\n')
        os.utime(p, ns=(1_700_000_000_000_000_000 + i, 1_700_000_000_000_000_000 + i))
        files.append(p)
    return files


def _patches(h, files, *, in_place: bool) -> Plan:
    ops = [WriteFile(path=str(p), expect=Fingerprint.of(str(p)), patches=(Patch(p.read_bytes().index(OLD), OLD, NEW),),
                     in_place_ok=in_place, session={"tool": "review", "id": "s1"}) for p in files]
    return Plan("review", {}, [str(h.codex)], ops)


def test_a_file_retried_then_skipped_takes_back_its_mate_written_in_the_first_round():
    """One batch: f1 is appended to at its last check (retried in a second round with the new lines),
    f2 is replaced in the first round; in the second round f1 changes (not an append): f2 goes back."""
    h = homes()
    files = _session_files(h, 2)
    before = tree(h.codex)
    seen = []

    def race(label):
        if label != str(files[0]):
            return
        seen.append(label)
        if len(seen) == 1:
            with open(files[0], "ab") as fh:
                fh.write(b'{"appended":1}\n')
        elif len(seen) == 2:
            st = os.lstat(files[0])
            os.utime(files[0], ns=(st.st_atime_ns, st.st_mtime_ns + 1))
    fs = fsio.FS()
    fs.hooks["before-final-check"] = race
    with fsio.using(fs):
        res = apply_plan(_patches(h, files, in_place=False), h)
    assert len(seen) == 2 and res.exit_code == 3 and res.done == [], (res.done, res.skips)
    assert changed(before, tree(h.codex)) == {"sessions/s/f1.jsonl"}
    assert undo(h, res.txid).state == "undone" and changed(before, tree(h.codex)) == {"sessions/s/f1.jsonl"}
