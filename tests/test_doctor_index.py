"""doctor's index (tools/codex/doctor_index.py): a repeat doctor on an unchanged Codex home reads no
rollout, and a stale record never hides a finding: every run's findings are those of a run without
the index (docs/doctor.md, "The doctor index")."""
from __future__ import annotations

import dataclasses
import os
import sqlite3
import time
from pathlib import Path

import pytest

from codex_fixtures import home_with, rollout, tid, write_rollout
from histmig.cli import samples
from histmig.core.scanindex import read_document, write_document
from histmig.tools.codex import doctor_data, doctor_index
from histmig.verbs.doctor import diagnose


@pytest.fixture
def world(codex_world, monkeypatch):
    """``codex_world`` with the racy window shut: files written by the test just now count as settled
    (the window itself has its own test)."""
    monkeypatch.setattr(doctor_index, "RACY_NS", 0)
    homes, codex, proj = codex_world
    (codex / "config.toml").write_text('model_provider = "my-provider"\n[model_providers.my-provider]\nname = "x"\n')
    return codex_world


def report(homes):
    return diagnose(homes, tools=["codex"]).to_dict()


def unindexed(homes, tmp_path):
    """The findings of a run without an index (an empty state dir of its own)."""
    other = tmp_path / f"state-{time.monotonic_ns()}"
    return diagnose(dataclasses.replace(homes, state=other), tools=["codex"]).to_dict()


def no_reads(monkeypatch):
    def boom(*a, **k):
        raise AssertionError("a rollout was read")
    monkeypatch.setattr(doctor_data, "scan_rollout", boom)


def records(homes) -> dict:
    file = homes.state / doctor_index.FILE_NAME
    if not file.exists():
        return {}
    data = read_document(file)
    return {p: r for p, r in data["records"].items() if p != doctor_index.DBS}


def settle():
    """Let the file system's clock tick, so the next change gets a new ctime."""
    time.sleep(0.05)


def _home(codex, proj):
    paths = home_with(codex, {tid(1): rollout(tid(1), "my-provider", cwd=proj),
                              tid(2): rollout(tid(2), "openai", cwd=proj, turns=3),
                              tid(3): rollout(tid(3), "my-provider", cwd="/gone/away")},
                      provider_rows={tid(1): "my-provider", tid(2): "openai", tid(3): "my-provider"},
                      archived={tid(2)}, compressed={tid(3)})
    return paths


def test_second_run_reads_no_rollout_and_finds_the_same(world, monkeypatch, tmp_path):
    homes, codex, proj = world
    _home(codex, proj)
    first = report(homes)
    assert len(records(homes)) == 3
    no_reads(monkeypatch)
    assert report(homes) == first
    monkeypatch.undo()
    assert unindexed(homes, tmp_path) == first


def test_a_file_rewritten_in_place_with_its_size_and_mtime_kept_is_read_again(world, tmp_path):
    homes, codex, proj = world
    path = _home(codex, proj)[tid(1)]
    before = report(homes)
    st = path.stat()
    data = path.read_bytes()
    assert data.count(b'"my-provider"') >= 1
    settle()
    path.write_bytes(data.replace(b'"my-provider"', b'"xy-provider"'))    # same size
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))                    # the old mtime back
    assert path.stat().st_size == st.st_size and path.stat().st_mtime_ns == st.st_mtime_ns
    after = report(homes)
    assert after != before and "codex.provider-hidden" in after["counts"]
    assert after == unindexed(homes, tmp_path)


def test_changed_offset_rows_are_checked_again(world, tmp_path):
    homes, codex, proj = world
    _home(codex, proj)
    assert "codex.offsets-stale" not in report(homes)["counts"]
    settle()
    con = sqlite3.connect(codex / "thread_history_1.sqlite")
    con.execute("UPDATE thread_turns SET rollout_byte_offset = rollout_byte_offset + 7 WHERE thread_id = ?", (tid(1),))
    con.commit()
    con.close()
    first = report(homes)
    assert first["counts"].get("codex.offsets-stale") == 1
    assert first == unindexed(homes, tmp_path)
    # the database is unchanged now: the thread whose rows are off must not come back from an old record
    assert report(homes) == first
    assert str(_home_path(codex, tid(1))) not in records(homes)


def _home_path(codex: Path, thread: str) -> Path:
    return next(p for p in codex.rglob(f"*{thread}*"))


def test_a_grown_file_is_read_again(world, tmp_path):
    homes, codex, proj = world
    path = _home(codex, proj)[tid(1)]
    report(homes)
    settle()
    with open(path, "ab") as fh:     # a later turn_context in another folder: resume's cwd changes
        fh.write(b'{"timestamp":"t","type":"turn_context","payload":{"cwd":"/elsewhere/now"}}\n')
    after = report(homes)
    assert "/elsewhere/now" in str(after)
    assert after == unindexed(homes, tmp_path)


def test_replaced_file_and_new_file_are_read(world, tmp_path):
    homes, codex, proj = world
    paths = _home(codex, proj)
    report(homes)
    settle()
    tmp = paths[tid(1)].with_suffix(".tmp")
    tmp.write_bytes(rollout(tid(1), "openai", cwd=proj))
    os.replace(tmp, paths[tid(1)])                                         # another inode
    write_rollout(codex, tid(4), rollout(tid(4), "openai", cwd=proj))
    after = report(homes)
    assert after == unindexed(homes, tmp_path)
    assert "codex.provider-hidden" in after["counts"]


def test_files_changed_within_the_racy_window_are_not_stored(codex_world):
    homes, codex, proj = codex_world
    _home(codex, proj)
    report(homes)                                    # every file was written just now
    assert records(homes) == {}


def test_a_damaged_index_is_ignored_and_rewritten(world, tmp_path):
    homes, codex, proj = world
    _home(codex, proj)
    first = report(homes)
    (homes.state / doctor_index.FILE_NAME).write_text('{"version": 1, "records": {"x": [1, 2, 3')
    assert report(homes) == first
    assert len(records(homes)) == 3
    data = read_document(homes.state / doctor_index.FILE_NAME)
    for rec in data["records"].values():             # every stored record damaged: each one is a miss
        rec[2] = {"facts": {"id": 7}, "needs": None}
    write_document(homes.state / doctor_index.FILE_NAME, data)
    assert report(homes) == first == unindexed(homes, tmp_path)


@pytest.mark.parametrize("case", [c for c in samples.cases("codex")], ids=lambda c: c.name)
def test_codex_samples_warm_equals_cold(case, tmp_path, monkeypatch):
    import shutil
    monkeypatch.setattr(doctor_index, "RACY_NS", 0)
    root = tmp_path / "root"
    shutil.copytree(case, root / "codex" / case.name)
    homes = samples.install(tmp_path / "home", root=root, include_broken=True, tools=("codex",))
    cold = report(homes)
    assert report(homes) == cold == unindexed(homes, tmp_path)
