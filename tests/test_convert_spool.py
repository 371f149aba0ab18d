"""Issue 12 case 9: convert streams the new session. Its lines go to a sink: counted for a dry run
(nothing written at all), spooled under ``<state>/spool/`` for --apply (copied in chunks, verified,
then removed), kept in memory for --plan-out up to a cap. Every mode gives the same bytes."""
from __future__ import annotations

import functools
import hashlib
from pathlib import Path

import pytest

from histmig import tools as registry
from histmig.apply import apply_plan
from histmig.toolkit.convert.sink import Hold, Sink, Spooled, SpoolDir
from histmig.core.diagnostics import HistmigError, RefusedError
from histmig.verbs.convert import ConvertOptions, Run, add_outcome, iter_convert, new_plan
from histmig.verbs.convert.batches import plan_convert
from histmig.core.plan import CreateFile, Plan

from clirun import histmig
from convert_fixtures import cli, homes, proj, CLAUDE_ID, write_claude, write_codex, write_mini  # noqa: F401 (fixtures)




def tree(root: Path) -> dict[str, bytes]:
    return {str(p): (p.read_bytes() if p.is_file() else b"/") for p in sorted(root.rglob("*"))}


def _planned(homes, target: str, sink) -> Plan:
    run = Run(homes, ConvertOptions(target, seed=7, now=1_780_000_000.0), sink)
    plan = new_plan(run)
    sources = [t for t in ("codex", "claude-code", "mini-cc") if t != target]
    for out, ops in iter_convert(run, [r for t in sources for r in registry.adapter(t).discover(homes)]):
        add_outcome(plan, out, ops)
    return plan


@pytest.mark.parametrize("target", ["codex", "claude-code", "mini-cc", "manifest"])
def test_case9_memory_count_and_spool_sinks_give_the_same_bytes(homes, proj, target):
    write_codex(homes.codex, proj)
    write_claude(homes.claude, proj)
    write_mini(homes.mini_cc, proj)
    kept = [op for op in _planned(homes, target, Sink).operations if isinstance(op, CreateFile)]
    counted = [op for op in _planned(homes, target, functools.partial(Sink, "count")).operations
               if isinstance(op, CreateFile)]
    spool = SpoolDir(homes.state)
    try:
        spooled = [op for op in _planned(homes, target, functools.partial(Sink, "spool", spool.path)).operations
                   if isinstance(op, CreateFile)]
        assert kept and len(kept) == len(counted) == len(spooled)
        for k, c, s in zip(kept, counted, spooled):
            assert k.path == c.path == s.path
            if s.data_path is None:          # small fixed files (manifest meta.json) stay bytes
                assert k.data == c.data == s.data and s.sha256 is None
                continue
            assert c.data == s.data == b""
            assert c.data_path is None and (c.sha256, c.size) == (s.sha256, s.size) == (k.digest(), k.nbytes)
            assert Path(s.data_path).read_bytes() == k.data
            assert Path(s.data_path).stat().st_mode & 0o777 == 0o600
        assert Path(spool.path).stat().st_mode & 0o777 == 0o700
    finally:
        spool.close()
    assert not Path(spool.path).exists()


def test_case9_dry_run_writes_nothing_not_even_a_spool(homes, proj, isolated_homes):
    write_claude(homes.claude, proj)
    before = tree(Path(isolated_homes["HOME"]))
    assert cli("convert", "--to", "codex", "--all") == 0
    assert cli("convert", "--to", "codex", "--all", "--json") == 0
    assert tree(Path(isolated_homes["HOME"])) == before


def test_case9_apply_copies_the_spool_removes_it_and_undo_still_removes_the_session(homes, proj):
    write_codex(homes.codex, proj)
    plan, _ = plan_convert(homes, list(registry.adapter("codex").discover(homes)), ConvertOptions("claude-code"))
    expected = {op.path: op.data for op in plan.operations}
    assert cli("convert", "--to", "claude-code", "--all", "--apply") == 0
    [ref] = registry.adapter("claude-code").discover(homes)
    made = Path(ref.path).read_bytes()
    assert made.count(b"\n") == next(iter(expected.values())).count(b"\n")   # ids differ (unseeded), lines do not
    spool = Path(homes.state) / "spool"
    assert not spool.exists() or not any(spool.iterdir())
    assert cli("undo") == 0
    assert not Path(ref.path).exists()


def test_case9_plan_out_embeds_the_data_and_refuses_over_the_cap(homes, proj, isolated_homes, monkeypatch):
    write_claude(homes.claude, proj)
    out = Path(isolated_homes["HOME"]) / "plan.json"
    assert cli("convert", "--to", "codex", CLAUDE_ID[:8], "--plan-out", str(out)) == 0
    [op] = [o for o in Plan.loads(out.read_bytes()).operations if isinstance(o, CreateFile)]
    assert op.data and op.data_path is None and b"data_path" not in out.read_bytes()
    out.unlink()
    monkeypatch.setattr("histmig.verbs.convert.batches.BATCH_BYTES", 100)
    before = tree(Path(isolated_homes["HOME"]))
    res = histmig("convert", "--to", "codex", CLAUDE_ID[:8], "--plan-out", out)
    assert res.exit_code == 1 and "error: --plan-out embeds each converted file in the plan" in res.stderr
    assert "Traceback" not in res.stderr
    assert tree(Path(isolated_homes["HOME"])) == before


def test_case9_a_plan_file_naming_a_spool_file_is_refused(tmp_path):
    op = CreateFile(str(tmp_path / "x.jsonl"), b"", data_path=str(tmp_path / "spool"), sha256="0" * 64, size=3)
    plan = Plan(op="convert", args={}, roots=[str(tmp_path)], operations=[op])
    assert {"data_path", "sha256", "size"} <= plan.to_dict()["operations"][0].keys()
    with pytest.raises(RefusedError, match="names a spool file"):
        Plan.loads(plan.dumps())
    plain = CreateFile(str(tmp_path / "y"), b"abc")
    assert "data_path" not in plain.to_dict() and "size" not in plain.to_dict()


def test_case9_a_spool_file_changed_after_planning_is_refused_and_rolled_back(homes, proj):
    write_codex(homes.codex, proj)
    spool = SpoolDir(homes.state)
    try:
        run = Run(homes, ConvertOptions("claude-code"), functools.partial(Sink, "spool", spool.path))
        plan = new_plan(run)
        for out, ops in iter_convert(run, list(registry.adapter("codex").discover(homes))):
            add_outcome(plan, out, ops)
        [op] = [o for o in plan.operations if isinstance(o, CreateFile)]
        with open(op.data_path, "r+b") as fh:
            fh.write(b"X")                        # same size, other bytes
        with pytest.raises(HistmigError, match="rolled back"):
            apply_plan(plan, homes)
        assert not Path(op.path).exists()
    finally:
        spool.close()


def test_case9_a_dry_run_plan_without_its_data_is_never_applied(homes, proj):
    write_codex(homes.codex, proj)
    run = Run(homes, ConvertOptions("claude-code"), functools.partial(Sink, "count"))
    plan = new_plan(run)
    for out, ops in iter_convert(run, list(registry.adapter("codex").discover(homes))):
        add_outcome(plan, out, ops)
    [op] = [o for o in plan.operations if isinstance(o, CreateFile)]
    assert op.data_path is None and op.size > 0
    with pytest.raises(HistmigError):
        apply_plan(plan, homes)
    assert not Path(op.path).exists()


def test_case9_spooled_sha_is_the_files_sha(tmp_path):
    s = Sink("spool", str(tmp_path))
    for line in (b"a\n", b"bc\n"):
        s.write(line)
    res = s.result()
    assert isinstance(res, Spooled) and res.size == 5
    assert res.sha256 == hashlib.sha256(b"a\nbc\n").hexdigest() == hashlib.sha256(Path(res.path).read_bytes()).hexdigest()


def test_case9_a_killed_runs_spool_folder_is_removed_by_the_next_run(homes, proj):
    import subprocess
    import sys
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True).stdout.strip()
    base = Path(homes.state) / "spool"
    orphan = base / f"{dead}-abc"
    orphan.mkdir(parents=True)
    (orphan / "x.part").write_bytes(b"partial")
    write_codex(homes.codex, proj)
    assert cli("convert", "--to", "claude-code", "--all", "--apply") == 0
    assert not orphan.exists() and not any(base.iterdir())


def test_issue15_a_hold_keeps_small_files_in_memory_within_its_budget(tmp_path):
    """--apply's sinks (verbs/convert/batches.py): a converted file within the hold's budget stays
    bytes (no spool file); one over the per-file cap, or past the budget, is spooled as before."""
    hold = Hold(cap=10, file_cap=6)

    def sink(*lines):
        s = Sink("spool", str(tmp_path), hold=hold)
        for line in lines:
            s.write(line)
        return s.result()
    assert sink(b"abc\n") == b"abc\n" and hold.used == 4
    big = sink(b"abcd\n", b"ef\n")                 # 8 bytes > file_cap: spooled, both lines
    assert isinstance(big, Spooled) and Path(big.path).read_bytes() == b"abcd\nef\n"
    assert big.sha256 == hashlib.sha256(b"abcd\nef\n").hexdigest() and big.size == 8
    assert sink(b"xyz\n") == b"xyz\n" and hold.used == 8
    late = sink(b"uvw\n")                          # 8 + 4 > cap: spooled
    assert isinstance(late, Spooled) and Path(late.path).read_bytes() == b"uvw\n"
    hold.release()
    assert sink(b"uvw\n") == b"uvw\n" and len(list(tmp_path.iterdir())) == 2


def test_extend_puts_a_sinks_bytes_after_anothers_in_every_mode(tmp_path):
    """Sink.extend (Cline's writer: the header, which names the last message's time, goes in front of
    the messages once they are written): the same bytes as writing them in order, the appended sink's
    spool file removed; a dry run's (count) adds the size only."""
    hold = Hold(cap=1 << 20, file_cap=16)

    def joined(make):
        body, out = make(), make()
        for line in (b"bbbb\n", b"cccccc\n"):
            body.write(line)
        out.write(b"head\n")
        out.extend(body)
        out.write(b"tail\n")
        assert body.fh is None and not body.parts and (body.path is None or not Path(body.path).exists())
        return out.result()
    want = b"head\nbbbb\ncccccc\ntail\n"
    assert joined(Sink) == want
    assert joined(lambda: Sink("spool", str(tmp_path), hold=Hold())) == want                 # held
    for make in (lambda: Sink("spool", str(tmp_path)), lambda: Sink("spool", str(tmp_path), hold=hold)):
        res = joined(make)                                    # spooled (the second: past the hold's file cap)
        assert isinstance(res, Spooled) and Path(res.path).read_bytes() == want
        assert res.sha256 == hashlib.sha256(want).hexdigest() and res.size == len(want)
        Path(res.path).unlink()
    assert joined(functools.partial(Sink, "count")).size == len(want)
    assert not list(tmp_path.iterdir())


def test_a_converted_cline_session_has_the_same_bytes_in_every_sink_mode(homes, proj, isolated_homes):
    write_codex(homes.codex, proj)
    write_claude(homes.claude, proj)
    kept = [op for op in _planned(homes, "cline", Sink).operations if isinstance(op, CreateFile)]
    counted = [op for op in _planned(homes, "cline", functools.partial(Sink, "count")).operations
               if isinstance(op, CreateFile)]
    spool = SpoolDir(homes.state)
    try:
        spooled = [op for op in _planned(homes, "cline", functools.partial(Sink, "spool", spool.path)).operations
                   if isinstance(op, CreateFile)]
        assert len(kept) == len(counted) == len(spooled) == 4          # two sessions: a manifest and messages each
        for k, c, s in zip(kept, counted, spooled):
            assert k.path == c.path == s.path and k.nbytes == c.nbytes == s.nbytes
            if s.data_path is None:                                     # the manifest: bytes
                assert k.data == c.data == s.data
            else:                                                       # the messages: through the sinks
                assert Path(s.data_path).read_bytes() == k.data and s.sha256 == k.digest()
    finally:
        spool.close()
