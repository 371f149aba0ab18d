"""What a run holds grows with its sessions only by a few small facts each (issue 15: "scaling at 500 /
2,000 / 8,000 sessions stays linear with flat memory for every command"; docs/bench.md, "Scaling"):
convert applies at most BATCH_SESSIONS sessions per transaction, keeps ten resume lines (not every
outcome) and each --json object as its compact bytes, and the process's file-system facade keeps no
log of its operations."""
from __future__ import annotations

import json

from clirun import histmig
from convert_fixtures import homes, proj, write_codex  # (fixtures)

from histmig import api
from histmig.apply import fsio
from histmig.verbs.convert import ConvertOptions, Outcome, batches


def _sessions(homes, proj, n: int) -> None:
    for i in range(n):
        write_codex(homes.codex, proj, sid=f"019e9625-802f-7e91-840a-{i:012x}")


def test_a_transaction_holds_at_most_batch_sessions_sessions(homes, proj, monkeypatch):
    _sessions(homes, proj, 5)
    monkeypatch.setattr(batches, "BATCH_SESSIONS", 2)
    refs = api.convert_sessions(homes, "claude-code", all_=True)
    done = api.convert(homes, refs, ConvertOptions("claude-code"), apply=True)
    assert done.total.summary["converted"] == 5
    assert [len(t["done"]) for t in done.transactions] == [2, 2, 1]


def _hints(out: str) -> list[str]:
    return out.split("resume with:\n", 1)[1].splitlines()


def test_resume_hints_are_the_first_ten_and_a_count_unless_verbose(homes, proj, isolated_homes):
    _sessions(homes, proj, 12)
    r = histmig("convert", "--to", "claude-code", "--from", "codex", "--apply")
    assert r.exit_code == 0, r.stderr
    hints = _hints(r.stdout)
    assert len(hints) == 11 and hints[-1] == "  ... and 2 more (-v lists them all)"
    assert all(h.startswith("  cd ") for h in hints[:10])
    again = histmig("-v", "convert", "--to", "claude-code", "--from", "codex", "--again", "--apply")
    assert len([h for h in _hints(again.stdout) if h.startswith("  cd ")]) == 12


def test_json_outcomes_are_kept_as_their_bytes_and_given_back_in_order():
    from histmig.cli.convert import _Outcomes
    kept = _Outcomes()
    assert list(kept.items()) == []
    made = [Outcome("codex", f"id-{i}", f"/p/{i}", "skip", reason="r", code="unreadable") for i in range(3)]
    for o in made:
        kept.add(o)
    assert kept.buf.count(b"\n") == 3 and not kept.odd          # lines of bytes, not the outcomes or their dicts
    assert list(kept.items()) == [o.to_dict() for o in made]


def test_an_object_that_does_not_encode_fails_the_document_when_printed_as_before():
    from histmig.cli.convert import _Outcomes
    kept = _Outcomes()
    kept.add(Outcome("codex", "id", "/p/\udcff.jsonl", "skip", reason="r", code="unreadable"))   # (a non-UTF-8 name)
    assert [k["path"] for k in kept.items()] == ["/p/\udcff.jsonl"]


def test_convert_json_lists_every_session_in_order(homes, proj):
    _sessions(homes, proj, 3)
    order = [r.id for r in api.convert_sessions(homes, "claude-code", from_tool="codex")]
    r = histmig("convert", "--to", "claude-code", "--from", "codex", "--apply", "--json")
    doc = json.loads(r.stdout)
    assert [s["status"] for s in doc["sessions"]] == ["convert"] * 3
    assert [s["id"] for s in doc["sessions"]] == order
    assert list(doc) == ["schema", "dry_run", "plan", "sessions", "result"]


def test_the_process_facade_keeps_no_log_and_a_test_s_facade_does(monkeypatch):
    monkeypatch.delenv("HISTMIG_CRASH_AT", raising=False)
    quiet, spy = fsio.FS.from_env(), fsio.FS()
    for fs in (quiet, spy):
        fs._op("fsync", "/x")
    assert quiet.log is None and quiet.count == 1
    assert spy.log == [("fsync", "/x")]
