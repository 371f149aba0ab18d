"""``histmig flip``: the planner (pure) and, where the apply engine is available, the real apply.

Planner tests execute a plan with a tiny in-test executor (patches spliced into the bytes, UPDATEs
run with sqlite3) so they prove what the plan *means*; the apply tests at the end prove the real
engine does the same and that undo restores bytes, mtimes and rows.
"""
from __future__ import annotations

import sqlite3
from pathlib import Path

import orjson
import pytest

from histmig.jsonio import zst
from histmig.tools import resolve_homes
from histmig.tools.codex import adapter as codex
from histmig.tools.codex.provider import marked_lines
from histmig.verbs.flip import plan_flip, provider_census
from histmig.core.plan import CreateFile, Plan, SqlShift, SqlUpdate, WriteFile
from histmig.core.shift import digests, shifter
from histmig.tools.codex import state as codex_state
from histmig.tools.codex import walk

from codex_fixtures import TS, home_with, rollout, session_meta, settings, tid, write_rollout


def homes(tmp_path):
    return resolve_homes(codex_home=tmp_path / ".codex", env={"HOME": str(tmp_path)})


def content(path: Path) -> bytes:
    return zst.decompress_all(path) if path.name.endswith(".zst") else path.read_bytes()


def patched(data: bytes, patches) -> bytes:
    out, pos = bytearray(), 0
    for p in sorted(patches, key=lambda p: p.offset):
        assert data[p.offset:p.offset + len(p.old)] == p.old
        out += data[pos:p.offset] + p.new
        pos = p.offset + len(p.old)
    return bytes(out + data[pos:])


def execute(plan: Plan) -> None:
    """What the plan means, without the safety machinery of apply."""
    for op in plan.operations:
        if isinstance(op, WriteFile):
            path = Path(op.path)
            new = op.new_bytes if op.new_bytes is not None else patched(content(path), op.patches)
            path.write_bytes(zst.compress(new, op.level) if op.compression == "zstd" else new)
        elif isinstance(op, CreateFile):
            Path(op.path).write_bytes(op.data)
        elif isinstance(op, SqlUpdate):
            con = sqlite3.connect(op.db)
            where = " AND ".join(f"{k} = ?" for k in op.key)
            row = con.execute(f"SELECT {', '.join(op.expect)} FROM {op.table} WHERE {where}", list(op.key.values())).fetchone()
            assert list(row) == list(op.expect.values())
            con.execute(f"UPDATE {op.table} SET {', '.join(f'{k} = ?' for k in op.set)} WHERE {where}",
                        [*op.set.values(), *op.key.values()])
            con.commit()
            con.close()
        elif isinstance(op, SqlShift):
            _shift(op)


def _shift(op: SqlShift) -> None:
    """A shift as its meaning: each matching row's offsets moved by the edits, checked against the
    planned count and digest first (histmig/core/shift.py)."""
    con = sqlite3.connect(op.db)
    cols = (*op.order, *op.columns)
    w = " AND ".join(f"{k} = ?" for k in op.where)
    rows = con.execute(f"SELECT {', '.join(cols)} FROM {op.table} WHERE {w}", list(op.where.values())).fetchall()
    assert digests(rows, len(op.order))[0] == op.expect
    moved = shifter(op.edits)
    for row in rows:
        key = row[:len(op.order)]
        con.execute(f"UPDATE {op.table} SET {', '.join(f'{c} = ?' for c in op.columns)} WHERE {w} AND "
                    + " AND ".join(f"{k} = ?" for k in op.order),
                    [*map(moved, row[len(op.order):]), *op.where.values(), *key])
    con.commit()
    con.close()


def providers_in(data: bytes, thread_id: str) -> list:
    """Every provider value Codex reads from a rollout: same-id session_meta and settings lines."""
    out = []
    for raw in data.splitlines():
        obj = orjson.loads(raw)
        p = obj.get("payload", {})
        if obj.get("type") == "session_meta" and p.get("id") == thread_id:
            out.append(p.get("model_provider"))
        if p.get("type") == "thread_settings_applied":
            out.append(p["thread_settings"]["model_provider_id"])
    return out


def row_provider(db: Path, thread_id: str) -> str:
    con = sqlite3.connect(db)
    try:
        return con.execute("SELECT model_provider FROM threads WHERE id = ?", (thread_id,)).fetchone()[0]
    finally:
        con.close()


def assert_only_value_spans_changed(before: bytes, after: bytes, old: bytes, new: bytes) -> int:
    """Line by line: untouched lines identical; a changed line equals the original with ``old``
    replaced by ``new`` (plus, when shorter, spaces right after it) at one or more value spans."""
    a, b = before.splitlines(keepends=True), after.splitlines(keepends=True)
    assert len(a) == len(b)
    changed = 0
    for x, y in zip(a, b):
        if x == y:
            continue
        changed += 1
        pad = b" " * max(0, len(old) - len(new))
        assert x.replace(b":" + old, b":" + new + pad) == y
    return changed


# ---- selection ------------------------------------------------------------------------------

def test_only_sessions_of_old_are_flipped_and_others_are_counted(tmp_path):
    sessions = {tid(1): rollout(tid(1)), tid(2): rollout(tid(2), "other"), tid(3): rollout(tid(3))}
    paths = home_with(tmp_path / ".codex", sessions, provider_rows={tid(2): "other"})
    plan = plan_flip(homes(tmp_path), "openai", "my-provider")
    written = {Path(o.path) for o in plan.operations if isinstance(o, WriteFile)}
    assert written == {paths[tid(1)], paths[tid(3)]}
    assert plan.summary["sessions"] == 2 and plan.summary["other_providers"] == {"other": 1}
    assert plan.summary["state_rows"] == 2
    execute(plan)
    db = tmp_path / ".codex" / "state_5.sqlite"
    assert content(paths[tid(2)]) == sessions[tid(2)] and row_provider(db, tid(2)) == "other"
    for t in (tid(1), tid(3)):
        assert set(providers_in(content(paths[t]), t)) == {"my-provider"} and row_provider(db, t) == "my-provider"


def test_flip_updates_session_meta_settings_lines_and_the_row_together(tmp_path):
    """safety.md row 87."""
    t = tid(1)
    later_meta = session_meta(t, "openai")                      # an appended metadata copy, same id
    data = rollout(t, extra_lines=[later_meta, settings("openai")])
    paths = home_with(tmp_path / ".codex", {t: data})
    plan = plan_flip(homes(tmp_path), "openai", "my-provider")
    execute(plan)
    after = content(paths[t])
    assert providers_in(after, t) == ["my-provider"] * 4
    assert row_provider(tmp_path / ".codex" / "state_5.sqlite", t) == "my-provider"
    assert assert_only_value_spans_changed(data, after, b'"openai"', b'"my-provider"') == 4


def test_copied_parent_session_meta_with_another_id_is_left_alone(tmp_path):
    t, parent = tid(1), tid(50)
    data = rollout(t, extra_lines=[session_meta(parent, "openai")])
    paths = home_with(tmp_path / ".codex", {t: data})
    execute(plan_flip(homes(tmp_path), "openai", "my-provider"))
    last = content(paths[t]).splitlines()[-1]
    assert last == data.splitlines()[-1] and b'"openai"' in last


def test_unknown_line_types_stay_byte_identical(tmp_path):
    """safety.md row 89."""
    t = tid(1)
    data = rollout(t)
    paths = home_with(tmp_path / ".codex", {t: data})
    execute(plan_flip(homes(tmp_path), "openai", "my-provider"))
    before = [ln for ln in data.splitlines() if b'"token_usage_record"' in ln or b'"world_state"' in ln]
    after = [ln for ln in content(paths[t]).splitlines() if b'"token_usage_record"' in ln or b'"world_state"' in ln]
    assert before and before == after


# ---- lengths and offsets (safety.md row 86) ---------------------------------------------------

def _line_starts(data: bytes) -> set[int]:
    return {0} | {i + 1 for i, b in enumerate(data) if b == 10}


def test_shorter_provider_is_padded_in_place_and_offsets_need_no_change(tmp_path):
    t = tid(1)
    data = rollout(t, turns=3)
    paths = home_with(tmp_path / ".codex", {t: data})
    before = codex_state.offsets_for(homes(tmp_path), t)
    plan = plan_flip(homes(tmp_path), "openai", "ab")
    [write] = [o for o in plan.operations if isinstance(o, WriteFile)]
    assert write.in_place_ok and all(p.delta == 0 for p in write.patches)
    assert not [o for o in plan.operations if isinstance(o, SqlUpdate) and o.table != "threads"]
    execute(plan)
    after = content(paths[t])
    assert len(after) == len(data)
    assert assert_only_value_spans_changed(data, after, b'"openai"', b'"ab"') == 2
    assert set(providers_in(after, t)) == {"ab"}
    assert codex_state.offsets_for(homes(tmp_path), t) == before
    assert all(r["rollout_byte_offset"] in _line_starts(after) for r in before["turns"])


def test_longer_provider_shifts_every_offset_of_the_thread(tmp_path):
    t, other = tid(1), tid(2)
    data = rollout(t, turns=3)
    paths = home_with(tmp_path / ".codex", {t: data, other: rollout(other, "zz")})
    untouched = codex_state.offsets_for(homes(tmp_path), other)
    plan = plan_flip(homes(tmp_path), "openai", "my-provider")
    [write] = [o for o in plan.operations if isinstance(o, WriteFile)]
    assert not write.in_place_ok
    execute(plan)
    after = content(paths[t])
    stored = codex_state.offsets_for(homes(tmp_path), t)
    starts = _line_starts(after)
    assert stored["next"] == len(after)
    assert len(stored["turns"]) == 3
    assert all(r["rollout_byte_offset"] in starts and r["rollout_end_byte_offset"] in starts for r in stored["turns"])
    # each turn still starts at its task_started line
    for r in stored["turns"]:
        line = after[r["rollout_byte_offset"]:].split(b"\n", 1)[0]
        assert b'"task_started"' in line and r["turn_id"].encode() in line
    assert codex_state.offsets_for(homes(tmp_path), other) == untouched


# ---- file kinds ------------------------------------------------------------------------------

def test_compressed_rollout_is_patched_through_its_decompressed_bytes(tmp_path):
    t = tid(1)
    data = rollout(t)
    paths = home_with(tmp_path / ".codex", {t: data}, compressed={t})
    plan = plan_flip(homes(tmp_path), "openai", "my-provider")
    [write] = [o for o in plan.operations if isinstance(o, WriteFile)]
    assert write.compression == "zstd" and write.level == 3 and not write.in_place_ok
    assert plan.summary["compressed"] == 1
    execute(plan)
    assert set(providers_in(content(paths[t]), t)) == {"my-provider"}


def test_archived_sessions_are_included_unless_excluded(tmp_path):
    t = tid(1)
    home_with(tmp_path / ".codex", {t: rollout(t)}, archived={t})
    assert plan_flip(homes(tmp_path), "openai", "x-y").summary["archived"] == 1
    plan = plan_flip(homes(tmp_path), "openai", "x-y", archived=False)
    assert plan.summary["sessions"] == 0 and not [o for o in plan.operations if isinstance(o, WriteFile)]


def test_shadowed_zst_is_reported_and_left_alone(tmp_path):
    t = tid(1)
    paths = home_with(tmp_path / ".codex", {t: rollout(t)})
    shadow = write_rollout(tmp_path / ".codex", t, rollout(t), compressed=True)
    plan = plan_flip(homes(tmp_path), "openai", "my-provider")
    assert [o.path for o in plan.operations if isinstance(o, WriteFile)] == [str(paths[t])]
    assert any(w.code == "zst-shadowed" and w.path == str(shadow) for w in plan.warnings)


def test_pre_envelope_rollout_is_skipped_and_named(tmp_path):
    legacy = tmp_path / ".codex/sessions/2025/08/11/rollout-2025-08-11T16-19-51-5973b6c0-94b8-487b-a530-2aeb6098ae0e.jsonl"
    legacy.parent.mkdir(parents=True)
    legacy.write_bytes(b'{"id":"5973b6c0-94b8-487b-a530-2aeb6098ae0e","timestamp":"2025-08-11T16:19:51.140Z"}\n')
    plan = plan_flip(homes(tmp_path), "openai", "my-provider")
    assert [s.code for s in plan.skips] == ["pre-envelope"] and plan.skips[0].path == str(legacy)
    assert not plan.operations


def test_session_without_provider_counts_as_the_default_and_gets_one(tmp_path):
    t = tid(1)
    data = rollout(t, omit_provider=True, paginated=False)
    paths = home_with(tmp_path / ".codex", {t: data})
    plan = plan_flip(homes(tmp_path), "openai", "my-provider")
    assert plan.summary["assumed_provider"] == 1 and "count as 'openai'" in plan.summary["assumed_note"]
    execute(plan)
    meta = orjson.loads(content(paths[t]).splitlines()[0])["payload"]
    assert meta["model_provider"] == "my-provider"
    # with another configured default the same session is not OLD's
    (tmp_path / ".codex" / "config.toml").write_text('model_provider = "zz"\n[model_providers.zz]\nname = "zz"\n')
    write_rollout(tmp_path / ".codex", t, data)
    assert plan_flip(homes(tmp_path), "openai", "my-provider").summary["other_providers"] == {"zz": 1}


def test_fork_pointing_into_a_growing_file_skips_it_by_name(tmp_path):
    parent, child = tid(1), tid(2)
    pdata = rollout(parent)
    base = {"thread_id": parent, "end_ordinal_exclusive": 5, "end_byte_offset": pdata.index(b"\n") + 1 + 100}
    home_with(tmp_path / ".codex", {parent: pdata, child: rollout(child, "zz", meta_more={"history_base": base})})
    plan = plan_flip(homes(tmp_path), "openai", "my-provider")
    assert [s.code for s in plan.skips] == ["fork-offsets"] and str(child) in plan.skips[0].reason
    assert plan.summary["sessions"] == 0 and not plan.operations
    # a same-length flip does not move the fork's offset: allowed
    assert plan_flip(homes(tmp_path), "openai", "ab").summary["sessions"] == 1


# ---- dry run, warnings, config ---------------------------------------------------------------

def test_dry_run_plans_rows_from_heads_without_file_patches(tmp_path):
    t = tid(1)
    home_with(tmp_path / ".codex", {t: rollout(t)})
    plan = plan_flip(homes(tmp_path), "openai", "my-provider", exact=False)
    assert plan.summary["sessions"] == 1 and plan.summary["state_rows"] == 1 and plan.summary["exact"] is False
    assert not [o for o in plan.operations if isinstance(o, WriteFile)]


def test_warnings_for_undefined_target_and_a_different_base_url(tmp_path):
    t = tid(1)
    home_with(tmp_path / ".codex", {t: rollout(t)})
    codes = {w.code for w in plan_flip(homes(tmp_path), "openai", "nowhere").warnings}
    assert {"provider-not-defined", "encrypted-content-bound", "config-provider-differs"} <= codes
    (tmp_path / ".codex" / "config.toml").write_text(
        'model_provider = "mine"\nopenai_base_url = "http://h/v1"\n[model_providers.mine]\nname = "m"\nbase_url = "http://h/v1"\n')
    assert not {w.code for w in plan_flip(homes(tmp_path), "openai", "mine").warnings}


def test_set_config_adds_the_config_edit(tmp_path):
    t = tid(1)
    home_with(tmp_path / ".codex", {t: rollout(t)})
    (tmp_path / ".codex" / "config.toml").write_text('# c\n[model_providers.mine]\nname = "m"\n')
    plan = plan_flip(homes(tmp_path), "openai", "mine", set_config=True)
    [cfg] = [o for o in plan.operations if isinstance(o, WriteFile) and o.path.endswith("config.toml")]
    assert cfg.new_bytes == b'# c\nmodel_provider = "mine"\n\n[model_providers.mine]\nname = "m"\n'


def test_plan_after_execution_is_empty_and_plan_survives_a_save(tmp_path):
    t = tid(1)
    home_with(tmp_path / ".codex", {t: rollout(t)})
    plan = plan_flip(homes(tmp_path), "openai", "my-provider")
    assert Plan.loads(plan.dumps()).operations == plan.operations
    execute(plan)
    assert plan_flip(homes(tmp_path), "openai", "my-provider").operations == []


def test_strip_encrypted_retypes_bound_items_so_codex_does_not_send_them(tmp_path):
    t = tid(1)
    compacted = {"timestamp": TS, "type": "compacted", "payload": {"message": "", "replacement_history": [
        {"type": "reasoning", "summary": [], "encrypted_content": "gAAAA-old"},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "kept"}]}]}}
    data = rollout(t, extra_lines=[compacted])
    paths = home_with(tmp_path / ".codex", {t: data})
    plan = plan_flip(homes(tmp_path), "openai", "my-provider", strip_encrypted=True)
    assert any(w.code == "encrypted-stripped" and w.detail.startswith("3 ") for w in plan.warnings)
    execute(plan)
    after = content(paths[t])
    assert b"gAAAA" not in after
    objs = [orjson.loads(ln) for ln in after.splitlines()]
    assert len(objs) == len(data.splitlines())                     # no line removed: ordinals intact
    assert [o.get("ordinal") for o in objs] == list(range(len(objs)))
    stripped = [o["payload"] for o in objs if o["payload"].get("type") == "histmig_stripped_reasoning"]
    assert len(stripped) == 2 and all(r["encrypted_content"] is None and r["summary"] for r in stripped)
    history = next(o for o in objs if o["type"] == "compacted")["payload"]["replacement_history"]
    assert [i["type"] for i in history] == ["histmig_stripped_reasoning", "message"]
    assert not [o for o in objs if o["payload"].get("type") == "reasoning"]
    assert codex_state.offsets_for(homes(tmp_path), t)["next"] == len(after)


def test_provider_census_counts_files_and_rows(tmp_path):
    home_with(tmp_path / ".codex", {tid(1): rollout(tid(1)), tid(2): rollout(tid(2), "zz"),
                                    tid(3): rollout(tid(3), omit_provider=True)}, provider_rows={tid(2): "zz"})
    c = provider_census(homes(tmp_path))
    assert c["files"] == {"openai": 2, "zz": 1} and c["assumed"] == 1 and c["configured"] == "openai"
    assert list(c["state_dbs"].values()) == [{"openai": 2, "zz": 1}]


def test_marked_lines_finds_lines_across_chunk_boundaries():
    import io
    lines = [b'{"x":"' + b"a" * n + b'"}\n' for n in (10, 2_000_000, 5)]
    lines.insert(2, b'{"type":"session_meta","n":1}\n')
    data = b"".join(lines) + b'{"type":"session_meta"}'
    hits = list(marked_lines(io.BytesIO(data), (b'"session_meta"',)))
    assert [(off, data[off:off + len(raw)] == raw) for off, raw in hits] == [
        (data.index(b'{"type":"session_meta","n"'), True), (data.rindex(b'{"type"'), True)]


# ---- the real apply engine and undo ---------------------------------------------------------

def _snapshot(codex_home: Path) -> dict:
    out = {}
    for p in sorted(codex_home.rglob("*")):
        if p.is_file() and p.suffix != ".sqlite" and not p.name.endswith(("-wal", "-shm")):
            st = p.stat()          # databases are compared by their rows (_rows)
            out[str(p)] = (p.read_bytes(), st.st_mtime_ns, st.st_mode)
    return out


def _rows(codex_home: Path) -> list:
    con = sqlite3.connect(codex_home / "state_5.sqlite")
    h = sqlite3.connect(codex_home / "thread_history_1.sqlite")
    try:
        return [con.execute("SELECT id, model_provider FROM threads ORDER BY id").fetchall(),
                h.execute("SELECT * FROM thread_turns ORDER BY thread_id, turn_id").fetchall(),
                h.execute("SELECT * FROM thread_history_projection_state ORDER BY thread_id").fetchall()]
    finally:
        con.close()
        h.close()


@pytest.mark.parametrize("new", ["my-provider", "ab"])
def test_apply_flips_files_and_rows_and_undo_restores_bytes_mtimes_rows(tmp_path, new):
    from histmig.apply import ApplyOptions, apply_plan
    from histmig.verbs.undo.run import undo
    codex_home = tmp_path / ".codex"
    sessions = {tid(1): rollout(tid(1), turns=3), tid(2): rollout(tid(2), "zz"), tid(3): rollout(tid(3))}
    paths = home_with(codex_home, sessions, provider_rows={tid(2): "zz"}, compressed={tid(3)}, archived={tid(3)})
    before, rows_before = _snapshot(codex_home), _rows(codex_home)
    ino = paths[tid(1)].stat().st_ino
    h = homes(tmp_path)
    plan = plan_flip(h, "openai", new)
    expected = patched(sessions[tid(1)], next(o for o in plan.operations if isinstance(o, WriteFile)
                                              and o.path == str(paths[tid(1)])).patches)
    res = apply_plan(plan, h, options=ApplyOptions())
    assert res.exit_code == 0 and not res.skips
    assert paths[tid(1)].read_bytes() == expected
    assert paths[tid(1)].stat().st_mtime_ns == before[str(paths[tid(1)])][1]
    if len(new) <= len("openai"):
        assert paths[tid(1)].stat().st_ino == ino          # same-length patch kept the inode
    assert set(providers_in(content(paths[tid(3)]), tid(3))) == {new}
    assert paths[tid(3)].name.endswith(".zst") and paths[tid(3)].stat().st_mtime_ns == before[str(paths[tid(3)])][1]
    stored = codex_state.offsets_for(h, tid(1))
    assert stored["next"] == len(expected)
    assert all(r["rollout_byte_offset"] in _line_starts(expected) for r in stored["turns"])
    assert row_provider(codex_home / "state_5.sqlite", tid(1)) == new
    assert plan_flip(h, "openai", new).operations == []     # applying twice does nothing the second time
    undo(h, res.txid)
    assert _snapshot(codex_home) == before and _rows(codex_home) == rows_before


def test_cli_flip_apply_then_undo_round_trip(tmp_path):
    from histmig.cli import main as _main  # noqa: F401  (import check)
    from click.testing import CliRunner
    from histmig.cli import cli
    codex_home = tmp_path / ".codex"
    home_with(codex_home, {tid(1): rollout(tid(1)), tid(2): rollout(tid(2), "zz")}, provider_rows={tid(2): "zz"})
    (codex_home / "config.toml").write_text('[model_providers.my-provider]\nname = "m"\n')
    before, rows_before = _snapshot(codex_home), _rows(codex_home)
    runner = CliRunner()
    base = ["--codex-home", str(codex_home), "--state-dir", str(tmp_path / "state")]
    dry = runner.invoke(cli, [*base, "flip", "openai", "my-provider"], standalone_mode=False)
    assert dry.exception is None and "would flip 1 session (0 compressed, 0 archived); state db: 1 row" in dry.output
    assert _snapshot(codex_home) == before and not (tmp_path / "state").exists()
    done = runner.invoke(cli, [*base, "flip", "openai", "my-provider", "--apply", "--set-config"], standalone_mode=False)
    assert done.exception is None and done.return_value == 0, done.output
    assert 'model_provider = "my-provider"' in (codex_home / "config.toml").read_text()
    assert row_provider(codex_home / "state_5.sqlite", tid(1)) == "my-provider"
    undone = runner.invoke(cli, [*base, "undo"], standalone_mode=False)
    assert undone.exception is None
    assert _snapshot(codex_home) == before and _rows(codex_home) == rows_before


SAMPLES = Path(__file__).resolve().parent.parent / "histmig" / "samples" / "codex"
SAMPLE_HOMES = sorted(p.name for p in SAMPLES.iterdir() if (p / "state_5.sqlite").exists()) if SAMPLES.is_dir() else []


@pytest.mark.parametrize("new", ["my-provider", "ab"])
@pytest.mark.parametrize("sample", SAMPLE_HOMES)
def test_flip_of_real_client_homes_keeps_every_offset_on_a_line_start(tmp_path, sample, new):
    """Homes recorded with the real Codex 0.171.0 (samples/codex): after apply, every changed line
    differs only at the provider values, the rows say NEW, and every stored offset of the thread
    points at a line start with the projection at the end of the file."""
    import shutil
    from histmig.apply import ApplyOptions, apply_plan
    codex_home = tmp_path / ".codex"
    shutil.copytree(SAMPLES / sample, codex_home)
    h = homes(tmp_path)
    logical = [(Path(p), a, Path(z) if z else None)            # a shadowed .zst is not a session of its own
               for p, a, z in walk.rollouts(codex_home)]
    before = {path: content(path) for path, _a, _s in logical}
    shadowed = {z: z.read_bytes() for _p, _a, z in logical if z is not None}
    plan = plan_flip(h, "openai", new)
    assert plan.summary["sessions"] == len(before) and not plan.skips
    assert {w.path for w in plan.warnings if w.code == "zst-shadowed"} == {str(z) for z in shadowed}
    res = apply_plan(plan, h, options=ApplyOptions())
    assert res.exit_code == 0, res.skips
    assert all(z.read_bytes() == data for z, data in shadowed.items())
    for path, data in before.items():
        after = content(path)
        thread_id = codex.parse_name(path.name)[1]
        assert set(providers_in(after, thread_id)) == {new}
        assert assert_only_value_spans_changed(data, after, b'"openai"', f'"{new}"'.encode()) >= 2
        assert row_provider(codex_home / "state_5.sqlite", thread_id) == new
        stored = codex_state.offsets_for(h, thread_id)
        starts = _line_starts(after)
        assert stored["turns"] and stored["next"] == len(after)
        assert all(r["rollout_byte_offset"] in starts and r["rollout_end_byte_offset"] in starts for r in stored["turns"])
