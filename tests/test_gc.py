"""Issue 12, "the state dir stays small": ``histmig gc`` removes the backups of old finished
transactions, says which can no longer be undone, and ``log`` shows each transaction's backup size."""
from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path

import orjson
import pytest

from histmig.apply.gc import gc, gc_record, parse_age, plan_gc
from histmig.core.diagnostics import UsageError
from histmig.tools import resolve_homes
from histmig.apply.journal import JOURNAL, tx_root
from histmig.core.locks import GlobalLock

from clirun import histmig
from codex_fixtures import home_with, rollout, tid

DAY = 86400


def homes():
    return resolve_homes()


def state() -> Path:
    return Path(os.environ["HISTMIG_STATE_DIR"])


def codex() -> Path:
    return Path(os.environ["CODEX_HOME"])


def flipped() -> str:
    """A real committed flip (backups of both databases in b/); returns its txid."""
    home_with(codex(), {tid(1): rollout(tid(1)), tid(2): rollout(tid(2))})
    (codex() / "config.toml").write_text('[model_providers.mine]\nname = "m"\n')
    r = histmig("flip", "openai", "mine", "--apply", "--json")
    assert r.exit_code == 0, r.stderr
    return orjson.loads(r.stdout)["result"]["txid"]


def age(txid: str, days: float) -> None:
    """Make the transaction's journal look last written ``days`` ago."""
    t = time.time() - days * DAY
    os.utime(tx_root(state()) / txid / JOURNAL, (t, t))


def fake_tx(txid: str, kinds: list[str], *, days: float = 60, backup: bytes = b"x" * 1000) -> Path:
    """A transaction folder with the given records and one backup file."""
    folder = tx_root(state()) / txid
    (folder / "b").mkdir(parents=True)
    (folder / "b" / "1").write_bytes(backup)
    recs = [{"kind": k, "t": time.time_ns(), **({"op": "move"} if k == "begin" else {})} for k in kinds]
    (folder / JOURNAL).write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in recs))
    age(txid, days)
    return folder


def providers() -> list:
    con = sqlite3.connect(codex() / "state_5.sqlite")
    try:
        return con.execute("SELECT model_provider FROM threads ORDER BY id").fetchall()
    finally:
        con.close()


def test_gc_dry_run_lists_each_transaction_its_size_and_that_undo_goes():
    txid = flipped()
    age(txid, 40)
    backups = tx_root(state()) / txid / "b"
    before = sorted(p.name for p in backups.iterdir())
    r = histmig("gc")
    assert r.exit_code == 0, r.stderr
    assert txid in r.stdout and "can no longer be undone after gc" in r.stdout
    assert "would remove the backups of 1 transaction(s)" in r.stdout and "1 can no longer be undone" in r.stdout
    assert "dry run: nothing was removed" in r.stdout
    assert sorted(p.name for p in backups.iterdir()) == before and gc_record(backups.parent) is None


def test_gc_apply_removes_backups_and_log_and_undo_say_so():
    txid = flipped()
    age(txid, 40)
    size = sum(p.stat().st_size for p in (tx_root(state()) / txid / "b").iterdir())
    from histmig.cli.fmt import fmt_size
    assert f"backups {fmt_size(size)}" in histmig("log").stdout          # e.g. "backups 12.0K"
    logged = orjson.loads(histmig("log", "--json").stdout)["transactions"]
    assert logged[0]["backup_bytes"] == size and logged[0]["gc"] is None
    r = histmig("gc", "--apply")
    assert r.exit_code == 0, r.stderr
    assert "removed the backups of 1 transaction(s)" in r.stdout
    folder = tx_root(state()) / txid
    assert not (folder / "b").exists() and (folder / JOURNAL).is_file()
    assert gc_record(folder)["backup_bytes"] == size
    log = histmig("log")
    assert "committed" in log.stdout and "backups removed by gc; cannot be undone" in log.stdout
    logged = orjson.loads(histmig("log", "--json").stdout)["transactions"]
    assert logged[0]["backup_bytes"] == 0 and logged[0]["gc"]["backup_bytes"] == size
    rows = providers()
    for args in (["undo"], ["undo", txid[:12]]):
        u = histmig(*args)
        assert u.exit_code == 1
        assert f"transaction {txid}: backups removed by gc on" in u.stderr and "cannot be undone" in u.stderr
    assert providers() == rows == [("mine",), ("mine",)]
    again = histmig("gc", "--older-than", "0", "--apply")
    assert again.exit_code == 0 and "no backups to remove" in again.stdout


def test_gc_default_threshold_is_30_days_and_keeps_younger_ones():
    old = fake_tx("20260101T000000Z-aaaaaa", ["begin", "commit"], days=31)
    young = fake_tx("20260102T000000Z-bbbbbb", ["begin", "commit"], days=29)
    res = plan_gc(homes(), parse_age("30d"))
    assert [e.txid for e in res.entries] == [old.name] and res.kept_younger == 1
    r = histmig("gc", "--apply")
    assert r.exit_code == 0 and "kept: 1 younger than 30d" in r.stdout
    assert not (old / "b").exists() and (young / "b" / "1").exists()
    assert histmig("gc", "--older-than", "12h", "--apply").exit_code == 0
    assert not (young / "b").exists()


def test_gc_never_touches_an_unfinished_transaction():
    applying = fake_tx("20260101T000000Z-aaaaaa", ["begin", "intent"], days=400)
    undoing = fake_tx("20260102T000000Z-bbbbbb", ["begin", "commit", "undo-start"], days=400)
    r = histmig("gc", "--older-than", "0", "--apply")
    assert r.exit_code == 0
    assert "2 unfinished (run histmig recover)" in r.stdout
    for folder in (applying, undoing):
        assert (folder / "b" / "1").read_bytes() == b"x" * 1000 and gc_record(folder) is None


def test_gc_of_undone_and_rolled_back_transactions_loses_nothing():
    undone = fake_tx("20260101T000000Z-aaaaaa", ["begin", "commit", "undo-start", "undone"])
    rolled = fake_tx("20260102T000000Z-bbbbbb", ["begin", "rolled-back"])
    res = gc(homes(), parse_age("30d"))
    assert {e.txid: e.loses_undo for e in res.entries} == {undone.name: False, rolled.name: False}
    r = histmig("gc", "--apply")
    assert "nothing lost" in r.stdout and "can no longer be undone" not in r.stdout
    log = histmig("log").stdout
    assert log.count("backups removed by gc") == 2 and "cannot be undone" not in log


def test_gc_removes_leftover_temps_and_counts_a_hard_linked_backup_once():
    folder = fake_tx("20260101T000000Z-aaaaaa", ["begin", "commit"], backup=b"y" * 4096)
    (folder / "t").mkdir()
    (folder / "t" / ".x.histmig-tmp").write_bytes(b"z" * 100)
    os.link(folder / "b" / "1", folder / "b" / "2")
    (e,) = plan_gc(homes(), 0).entries
    assert (e.backups.bytes, e.backups.files) == (4196, 2)
    gc(homes(), 0, apply=True)
    assert not (folder / "t").exists() and not (folder / "b").exists()


def test_gc_finishes_an_interrupted_gc_whatever_its_age(monkeypatch):
    """The gc record is durable before the first removal; a gc killed half-way is finished by the next."""
    folder = fake_tx("20260101T000000Z-aaaaaa", ["begin", "commit"], days=60)
    import shutil
    calls = []

    def dies(path, *a, **k):
        calls.append(path)
        raise KeyboardInterrupt        # stands in for a kill between the record and the removal
    with monkeypatch.context() as m, pytest.raises(KeyboardInterrupt):
        m.setattr(shutil, "rmtree", dies)
        gc(homes(), 0, apply=True)
    assert calls and gc_record(folder) is not None and (folder / "b" / "1").exists()
    assert "backups removed by gc; cannot be undone" in histmig("log").stdout
    r = histmig("gc", "--apply")          # the journal is young now (the gc record), but it is finished
    assert r.exit_code == 0 and "finishing an interrupted gc" in r.stdout
    assert not (folder / "b").exists()


def test_gc_apply_waits_for_no_one_under_the_global_lock():
    fake_tx("20260101T000000Z-aaaaaa", ["begin", "commit"])
    with GlobalLock(state()):
        r = histmig("gc", "--apply")
        assert r.exit_code == 1 and "another histmig is running" in r.stderr
        assert histmig("gc").exit_code == 0          # the dry run only reads
    assert histmig("gc", "--apply").exit_code == 0


@pytest.mark.parametrize("text,seconds", [("30d", 30 * DAY), ("12h", 43200), ("90m", 5400), ("45s", 45),
                                          ("2w", 14 * DAY), ("0", 0), ("0d", 0)])
def test_gc_older_than_forms(text, seconds):
    assert parse_age(text) == seconds


@pytest.mark.parametrize("text", ["30", "-1d", "1y", "abc", ""])
def test_gc_older_than_without_a_unit_is_a_usage_error(text):
    with pytest.raises(UsageError):
        parse_age(text)
    r = histmig("gc", "--older-than", text)
    assert r.exit_code == 2 and "give a number and a unit" in r.stderr


def test_gc_with_no_state_dir_says_so():
    r = histmig("gc", "--json")
    assert r.exit_code == 0 and orjson.loads(r.stdout)["transactions"] == []
    assert not state().exists()


def test_gc_does_not_say_an_undo_transaction_loses_its_undo():
    """An undo cannot itself be undone (verbs/undo refuses it), so removing its backups takes nothing away."""
    txid = flipped()
    r = histmig("undo", "--json")
    assert r.exit_code == 0, r.stderr
    [undo_txid] = [p.name for p in tx_root(state()).iterdir() if p.name != txid]
    age(txid, 40)
    age(undo_txid, 40)
    [entry] = [e for e in plan_gc(homes(), 30 * DAY).entries if e.txid == undo_txid]
    assert entry.op == "undo" and not entry.loses_undo
    out = histmig("gc").stdout
    line = next(x for x in out.splitlines() if x.startswith(undo_txid))
    assert "can no longer be undone" not in line
