"""The rewrite's streamed path: a file untouched since the plan hashed it (same ctime) is read once
during apply, hashed on both sides while its temp is written, and checked against the plan's hash
before anything is replaced."""
from __future__ import annotations

import hashlib
import os

from histmig.apply import fsio
from histmig.apply import apply_plan
from histmig.verbs.undo.run import undo
from histmig.apply.journal import read_records, tx_root
from histmig.core.plan import Fingerprint, Patch, Plan, WriteFile
from test_apply_fixtures import NEW, OLD, homes, make_tree, no_temps


def _big_file(h):
    f = make_tree(h, n_claude=0, db=False)["files"][0]
    body = f.read_bytes() + b'{"pad":"' + b"x" * (3 << 20) + b'"}\n'
    f.write_bytes(body + b'{"cwd":"/a/proj"}\n')
    return f, body


def _op(f, body, expect):
    i = len(body) + len(b'{"cwd":"')
    return WriteFile(path=str(f), expect=expect, patches=(Patch(body.find(OLD), OLD, NEW),
                                                          Patch(i, OLD, b"/much/longer")))


def test_streamed_rewrite_writes_the_planned_bytes_journals_both_hashes_and_undoes():
    h = homes()
    f, body = _big_file(h)
    before = f.read_bytes()
    st0 = os.stat(f)
    fs = fsio.FS()
    with fsio.using(fs):
        res = apply_plan(Plan("move", {}, [str(h.codex)], [_op(f, body, Fingerprint.of(f))]), h)
    assert res.exit_code == 0
    after = f.read_bytes()
    assert after == body.replace(OLD, NEW, 1) + b'{"cwd":"/much/longer"}\n'
    assert os.stat(f).st_mtime_ns == st0.st_mtime_ns
    # streamed: no kernel copy and no verify re-read; the hashes come from the one pass
    assert not [n for n, _ in fs.log if n == "copy"]
    recs = read_records(tx_root(h.state) / res.txid)
    ready = [r for r in recs if r["kind"] == "ready"]
    assert len(ready) == 1
    assert ready[0]["post"] == {"sha256": hashlib.sha256(after).hexdigest(), "size": len(after)}
    assert ready[0]["pre_sha256"] == hashlib.sha256(before).hexdigest()
    intent = next(r for r in recs if r["kind"] == "intent")
    assert [r["kind"] for r in recs].index("ready") > [r["kind"] for r in recs].index("intent")
    assert intent["post"]["sha256"] is None       # not known before the temp is written
    assert no_temps(h.codex)
    undo(h, res.txid)
    assert f.read_bytes() == before


def test_streamed_rewrite_skips_a_file_whose_bytes_differ_from_the_plan_hash():
    """Same ctime yet other bytes cannot happen through the kernel; a plan whose hash does not
    match the file stands in for it: the temp is dropped and the file is skipped, unchanged."""
    h = homes()
    f, body = _big_file(h)
    before = f.read_bytes()
    fp = Fingerprint.of(f)
    wrong = Fingerprint(dev=fp.dev, ino=fp.ino, size=fp.size, mtime_ns=fp.mtime_ns, sha256="0" * 64,
                        ctime_ns=fp.ctime_ns)
    res = apply_plan(Plan("move", {}, [str(h.codex)], [_op(f, body, wrong)]), h)
    assert res.exit_code == 3
    assert [s.code for s in res.skips] == ["changed"]
    assert f.read_bytes() == before
    assert os.stat(f).st_nlink == 1
    assert no_temps(h.codex)


def test_a_file_touched_since_the_plan_is_digested_in_precheck_and_skipped_when_its_bytes_changed():
    """Another ctime means the plan's hash may be stale: precheck reads and hashes the file, as
    before the streamed path, and skips it (issue 12 case 6: named, exit 3, nothing written)."""
    h = homes()
    f, body = _big_file(h)
    fp = Fingerprint.of(f)
    data = bytearray(f.read_bytes())
    data[-3:-2] = b"Q"                      # same size; mtime put back, ctime moves
    f.write_bytes(bytes(data))
    os.utime(f, ns=(fp.mtime_ns, fp.mtime_ns))
    res = apply_plan(Plan("move", {}, [str(h.codex)], [_op(f, body, fp)]), h)
    assert res.exit_code == 3 and res.txid is None and res.skips[0].code == "changed"
    assert "changed since plan" in res.skips[0].reason
    assert f.read_bytes() == bytes(data)
