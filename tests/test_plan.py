"""Plan serialisation: every operation kind round-trips; an edited body is refused."""
from __future__ import annotations

import pytest

from histmig.core.diagnostics import RefusedError
from histmig.core.plan import (CreateFile, Delete, Fingerprint, Patch, Plan, Rename, SqlDelete, SqlInsert, SqlUpdate,
                          WriteFile)


def _plan() -> Plan:
    fp = Fingerprint(dev=1, ino=2, size=3, mtime_ns=4, sha256="ab")
    ops = [WriteFile("/r/a", fp, patches=(Patch(0, b"x", b"\xffy"),), in_place_ok=True,
                     session={"tool": "codex", "id": "t"}, reason="flip"),
           WriteFile("/r/z.jsonl.zst", fp, new_bytes=b"\0new", compression="zstd", level=5),
           CreateFile("/r/n/b", b"data", mode=0o644, mtime_ns=9),
           Rename("/r/p", "/r/q", Fingerprint(dev=1, ino=5)),
           Delete("/r/d", fp),
           SqlUpdate("/r/s.sqlite", "threads", {"id": "t"}, {"cwd": "/b"}, {"cwd": "/a"}),
           SqlInsert("/r/s.sqlite", "threads", {"id": "u", "cwd": "/b"}),
           SqlDelete("/r/s.sqlite", "threads", {"id": "v"}, 1)]
    return Plan("move", {"old": "/a"}, ["/r"], ops, summary={"files": 2})


def test_every_operation_kind_round_trips():
    p = _plan()
    q = Plan.loads(p.dumps())
    assert q.operations == p.operations and q.roots == p.roots and q.summary == p.summary


def test_edited_plan_body_is_refused():
    data = _plan().dumps().replace(b'"/r/q"', b'"/etc/q"')
    with pytest.raises(RefusedError, match="body hash mismatch"):
        Plan.loads(data)


def test_unknown_operation_kind_is_refused():
    import hashlib
    import orjson
    from histmig.core.plan import _canonical
    d = _plan().to_dict()
    d.pop("sha256")
    d["operations"].append({"kind": "chmod"})
    d["sha256"] = hashlib.sha256(_canonical(d)).hexdigest()
    with pytest.raises(RefusedError, match="unknown operation kind"):
        Plan.loads(orjson.dumps(d))
