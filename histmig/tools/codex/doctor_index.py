"""doctor's index of rollouts it read: a repeat ``histmig doctor`` on an unchanged Codex home reads
no rollout again (docs/doctor.md, "The doctor index").

What one read of a rollout gives the checks (``doctor_data.read_rollout``) follows from two things
only: the file's bytes and its thread's rows in ``thread_history_1.sqlite``. A record is reused when
both are as they were:

- the file: ``(device, inode, size, mtime_ns)`` plus ``ctime_ns`` (which no program can set back, so a
  file rewritten in place with the same size and its old mtime restored is still read again);
- the rows: a digest of them, compared after the thread's one indexed query; when every history
  database (and its ``-wal`` file) has the key it had when the records were stored, even that query
  is skipped.

A key is only stored when its ctime is older than ``RACY_NS``: a file changed twice within one tick of
the file system's clock could otherwise keep its key (git's "racy clean" problem). Only reads without
an error and without an offset row kept (every row in line, no repair may edit the file) are stored, so
a record holds the thread's facts and nothing else; everything else is read again each time.

It is a cache in the state dir (``core/scanindex.py`` keeps and writes it): deleting it loses nothing,
a damaged record is a miss, and a failure to write it never fails doctor.
"""
from __future__ import annotations

import hashlib
import math
import os
import time
from typing import Any

import orjson

from histmig.core.scanindex import ScanIndex
from histmig.tools.codex.adapter import ThreadFacts
from histmig.tools.codex.doctor_scan import Needs

FILE_NAME = "doctor-index.json"
RACY_NS = 2_000_000_000       # far above any file system's timestamp tick
FACTS = ("id", "provider", "row_provider", "meta_cwd", "resume_cwd", "git_url", "history_base")
DBS = "\0history-dbs"         # the record of the history databases' keys (not a path)


def digest(needs: Needs | None) -> str | None:
    """What the rows a read was given look like (None: the thread has none): their JSON (a fifth
    of the cost of ``repr``), or their ``repr`` when JSON would not tell two values apart (a
    BLOB, an integer beyond 64 bits, and an infinite float, which JSON writes as null)."""
    if needs is None:
        return None
    try:
        text = orjson.dumps(needs.rows)
        # an infinite float is written as null: only a text with a null needs the values looked at
        if b"null" not in text or all(type(v) is not float or math.isfinite(v)
                                      for row in needs.rows for v in row[3].values()):
            return hashlib.blake2b(text, digest_size=16).hexdigest()
    except TypeError:                        # orjson.JSONEncodeError: bytes, a huge integer
        pass
    return "r" + hashlib.blake2b(repr(needs.rows).encode(), digest_size=16).hexdigest()


def _ctime(st: os.stat_result) -> int:
    return st.st_ctime_ns


def _stat(path: str) -> os.stat_result | None:
    try:
        return os.stat(path)
    except OSError:
        return None


def _db_keys(hists: list[str]) -> list:
    out = []
    for h in hists:
        keys = []
        for p in (h, h + "-wal"):
            st = _stat(p)
            keys.append(None if st is None else [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns])
        out.append([h, keys])
    return out


class DoctorIndex:
    """One doctor run's view of the index: ``lookup`` before the reads, ``store`` after, ``save`` once."""

    def __init__(self, state_dir: Any, hists: list[str]):
        self.index = ScanIndex.load(state_dir, name=FILE_NAME) if state_dir is not None else ScanIndex(None)
        self.now = time.time_ns()
        self.dbs = _db_keys(hists)
        old = self.index.record(DBS)
        self.dbs_same = isinstance(old, list) and len(old) == 5 and old[2] == {"dbs": self.dbs}
        self.index.touched.add(DBS)

    def stat(self, path: str) -> os.stat_result | None:
        return _stat(path)

    def lookup(self, path: str, st: os.stat_result | None, needs_of) -> ThreadFacts | None:
        """The facts stored for ``path`` when the file and its thread's rows are unchanged."""
        if st is None:
            return None
        fields = self.index.hit(path, st, ctx=_ctime(st))
        if fields is None:
            return None
        facts = _facts(fields.get("facts"))
        if facts is None:
            return None
        if not self.dbs_same and digest(needs_of(facts.id)) != fields.get("needs"):
            return None
        return facts

    def store(self, path: str, st: os.stat_result | None, facts: ThreadFacts | None, needs: str | None) -> None:
        """Remember a read (``facts`` None: one that must be read again next time, say so by
        dropping its record: a record kept would still match the file)."""
        data = None if facts is None or st is None or self._racy(st) else _stored(facts)
        if data is None:
            self.index.forget(path)
        else:
            self.index.store(path, st, {"facts": data, "needs": needs}, ctx=_ctime(st))

    def _racy(self, st: os.stat_result) -> bool:
        return _ctime(st) > self.now - RACY_NS or st.st_mtime_ns > self.now - RACY_NS

    def save(self) -> None:
        racy = any(k is not None and max(k[3], k[4]) > self.now - RACY_NS for _, keys in self.dbs for k in keys)
        if racy:
            self.index.forget(DBS)
        else:                                # (an unchanged record leaves the index unchanged)
            self.index.put(DBS, [[], None, {"dbs": self.dbs}, None, None])
        self.index.save(keep=self.index.touched)


def _stored(facts: ThreadFacts) -> dict | None:
    data = {k: getattr(facts, k) for k in FACTS}
    data["providers"] = sorted(facts.providers)
    try:
        if orjson.loads(orjson.dumps(data)) == data:
            return data
    except (TypeError, ValueError):
        pass
    return None                              # a value JSON does not carry exactly: read it again next time


def _facts(data: Any) -> ThreadFacts | None:
    if not isinstance(data, dict) or set(data) != {*FACTS, "providers"}:
        return None
    if not isinstance(data["id"], str) or not isinstance(data["providers"], list):
        return None
    if not (data["resume_cwd"] is None or isinstance(data["resume_cwd"], str)):
        return None
    facts = ThreadFacts()
    for k in FACTS:
        setattr(facts, k, data[k])
    facts.providers = set(data["providers"])
    return facts
