"""Plans applied directly (docs/safety.md, "Plans applied directly"): the planner took no whole-file
hash (``Fingerprint.spans``); the apply checks identity, size, mtime, ctime and each patch's old bytes,
and hashes the file while it writes it. A plan written with --plan-out keeps its whole-file hashes."""
from __future__ import annotations

import dataclasses
import os

import orjson

from histmig.apply import ApplyOptions, apply_plan
from histmig.apply.journal import read_records, tx_root
from histmig.core.plan import Fingerprint, Plan
from histmig.verbs.move import plan_move
from clirun import histmig
from test_apply_fixtures import NEW, OLD, homes, make_tree, move_plan, post_bytes


def direct(plan: Plan) -> Plan:
    """``plan`` as a planner that hashes nothing makes it (same stat, no sha256, spans=True)."""
    ops = [dataclasses.replace(op, expect=Fingerprint(dev=op.expect.dev, ino=op.expect.ino, size=op.expect.size,
                                                      mtime_ns=op.expect.mtime_ns, ctime_ns=os.lstat(op.path).st_ctime_ns,
                                                      spans=True))
           for op in plan.operations]
    return dataclasses.replace(plan, operations=ops)


def test_a_direct_plan_is_streamed_and_journals_both_hashes():
    h = homes()
    files = make_tree(h, n_claude=0, db=False)["files"]
    pre = [f.read_bytes() for f in files]
    res = apply_plan(direct(move_plan(h, files)), h)
    assert res.exit_code == 0 and [f.read_bytes() for f in files] == [post_bytes(p) for p in pre]
    recs = read_records(tx_root(h.state) / res.txid)
    ready = [r for r in recs if r["kind"] == "ready"]
    assert len(ready) == len(files) and all(r["pre_sha256"] and r["post"]["sha256"] for r in ready)


def test_a_direct_plan_skips_a_file_whose_ctime_moved():
    h = homes()
    f, g = make_tree(h, n_claude=0, db=False)["files"][:2]
    pre_f, pre_g = f.read_bytes(), g.read_bytes()
    plan = direct(move_plan(h, [f, g]))
    os.chmod(f, 0o640)          # ctime moves; size and mtime do not; no hash to prove the bytes
    res = apply_plan(plan, h)
    assert res.exit_code == 3 and [(s.path, s.code) for s in res.skips] == [(str(f), "changed")]
    assert "changed since plan (ctime)" in res.skips[0].reason
    assert f.read_bytes() == pre_f and g.read_bytes() == post_bytes(pre_g)


def test_a_direct_plan_with_allow_appended_checks_the_spans():
    h = homes()
    f = make_tree(h, n_claude=0, db=False)["files"][0]
    pre = f.read_bytes()
    plan = direct(move_plan(h, [f]))
    extra = b'{"type":"turn_context","payload":{"cwd":"' + OLD + b'"}}\n'
    with open(f, "ab") as fh:
        fh.write(extra)
    assert [s.code for s in apply_plan(plan, h).skips] == ["grew"]
    opts = ApplyOptions(allow_appended=True, tail_transform=lambda op, tail: tail.replace(OLD, NEW))
    res = apply_plan(plan, h, options=opts)
    assert res.exit_code == 0 and f.read_bytes() == post_bytes(pre + extra)


def test_a_direct_plan_whose_span_changed_is_skipped():
    h = homes()
    f = make_tree(h, n_claude=0, db=False)["files"][0]
    pre = f.read_bytes()
    plan = direct(move_plan(h, [f]))
    extra = b'{"x":1}\n'
    with open(f, "r+b") as fh:          # an edited span, then an append: only the spans can tell
        fh.seek(pre.find(OLD))
        fh.write(b"X")
        fh.seek(0, 2)
        fh.write(extra)
    res = apply_plan(plan, h, options=ApplyOptions(allow_appended=True))
    assert res.exit_code == 3 and res.skips[0].code == "changed"
    assert f.read_bytes()[len(pre):] == extra


def test_plan_out_plans_keep_whole_file_hashes_and_direct_plans_do_not(tmp_path):
    h = homes()
    make_tree(h, n_codex=2, n_claude=1, db=False)
    hashed = plan_move(h, OLD.decode(), NEW.decode())
    spans = plan_move(h, OLD.decode(), NEW.decode(), hash_files=False)
    writes = [op for op in hashed.operations if op.kind == "write"]
    assert writes and all(op.expect.sha256 and not op.expect.spans for op in writes)
    assert all(op.expect.sha256 is None and op.expect.spans for op in spans.operations if op.kind == "write")
    assert [op.patches for op in spans.operations if op.kind == "write"] == [op.patches for op in writes]
    out = tmp_path / "plan.json"
    assert histmig("move", OLD.decode(), NEW.decode(), "--plan-out", str(out)).exit_code == 0
    ops = orjson.loads(out.read_bytes())["operations"]
    assert all("sha256" in op["expect"] and "spans" not in op["expect"] for op in ops if op["kind"] == "write")
