"""Issue 12, cases 1, 2, 3 and 5: undo is an inverse plan against the disk as it is now, one
session as one unit, and never loses what was written after the apply (docs/safety.md "Undo")."""
from __future__ import annotations

import hashlib
import os
import sqlite3
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from histmig import tools as registry
from histmig.apply import apply_plan
from histmig.apply.journal import list_transactions, new_txid, txid_sort_key
from histmig.verbs.convert import ConvertOptions
from histmig.verbs.convert.batches import plan_convert
from histmig.verbs.doctor import diagnose
from histmig.verbs.flip import plan_flip
from histmig.verbs.move import plan_move
from histmig.verbs.undo import pick_transaction
from histmig.verbs.undo.run import undo
from histmig.core.paths import claude_slug
from histmig.tools.codex import state as codex_state

from clirun import histmig
from codex_fixtures import dumps, home_with, rollout, tid, turn
from convert_fixtures import write_codex
from test_move_fixtures import claude_records, claude_session, homes, jl, sid

CODEX_DB_CODES = {"codex.db-provider-mismatch", "codex.offsets-stale", "codex.db-cwd-mismatch", "codex.rollout-no-row"}


def sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def row(db: Path, sql: str, *args):
    con = sqlite3.connect(db)
    try:
        return con.execute(sql, args).fetchall()
    finally:
        con.close()


def line_starts(data: bytes) -> set[int]:
    out, pos = {0}, 0
    for line in data.splitlines(keepends=True):
        pos += len(line)
        out.add(pos)
    return out


def codex_codes(h) -> set[str]:
    return {f.code for f in diagnose(h, tools=["codex"]).findings} & CODEX_DB_CODES


def continue_codex(path: Path, provider: str, cwd: str = "/w/proj") -> bytes:
    """What a resumed Codex turn appends: a turn whose turn_context and settings name the provider."""
    lines = [orjson.loads(dumps(o)) for o in turn(9, cwd)]
    lines.insert(0, {"timestamp": "2026-11-30T10:00:00.000Z", "type": "event_msg", "payload": {
        "type": "thread_settings_applied", "thread_settings": {"model": "gpt-5.5", "model_provider_id": provider,
                                                               "approval_policy": "never", "cwd": cwd}}})
    first = path.read_bytes().count(b"\n")             # paginated lines carry their ordinal (2nd key)
    data = b"".join(dumps({"timestamp": o["timestamp"], "ordinal": first + i,
                           **{k: v for k, v in o.items() if k != "timestamp"}}) for i, o in enumerate(lines))
    with open(path, "ab") as fh:
        fh.write(data)
    return data


# -- case 3: half-undone sessions -----------------------------------------------------------------
@pytest.mark.parametrize("new", ["my-provider", "ab"])
def test_case3_flip_then_resumed_session_is_undone_whole_file_rows_and_offsets_agree(tmp_path, new):
    h = homes()
    sessions = {tid(1): rollout(tid(1), turns=2), tid(2): rollout(tid(2))}
    paths = home_with(h.codex, sessions)
    res = apply_plan(plan_flip(h, "openai", new), h)
    assert res.exit_code == 0
    appended = continue_codex(paths[tid(1)], new)
    # Codex projects the new turn: a turns row at the old end of the file (post-apply coordinates)
    post = paths[tid(1)].read_bytes()
    db = h.codex / "thread_history_1.sqlite"
    con = sqlite3.connect(db)
    first = post.count(b"\n") - appended.count(b"\n")
    start = len(post) - len(appended) + len(appended.splitlines(keepends=True)[0])     # its task_started
    con.execute("INSERT INTO thread_turns VALUES (?,?,?,?,?,?,?)",
                (tid(1), "turn-9", first + 1, "completed", start, post.count(b"\n") - 1, len(post)))
    con.execute("UPDATE thread_history_projection_state SET next_rollout_byte_offset=?, next_rollout_ordinal=? "
                "WHERE thread_id=?", (len(post), post.count(b"\n"), tid(1)))
    con.commit()
    con.close()
    out = undo(h)
    assert out.exit_code == 0 and out.state == "undone" and not out.skips
    now = paths[tid(1)].read_bytes()
    assert now.startswith(sessions[tid(1)])                                  # the old bytes, exactly
    kept = [orjson.loads(line) for line in now[len(sessions[tid(1)]):].splitlines()]
    assert kept == [orjson.loads(line.replace(f'"model_provider_id":"{new}"'.encode(), b'"model_provider_id":"openai"'))
                    for line in appended.splitlines()]                     # every appended line, provider back
    assert paths[tid(2)].read_bytes() == sessions[tid(2)]
    assert row(h.codex / "state_5.sqlite", "SELECT model_provider FROM threads WHERE id=?", tid(1)) == [("openai",)]
    stored = codex_state.offsets_for(h, tid(1))
    assert stored["next"] == len(now)
    assert all(r["rollout_byte_offset"] in line_starts(now) for r in stored["turns"])
    assert codex_codes(h) == set()
    assert [t.state for t in list_transactions(h.state)] == ["undone", "committed"]


def test_case3_move_then_resumed_codex_session_gets_its_cwd_back_in_every_line(tmp_path):
    h = homes()
    old, new = str(tmp_path / "proj"), str(tmp_path / "proj2")
    os.makedirs(new)
    data = rollout(tid(1), cwd=old)
    paths = home_with(h.codex, {tid(1): data})
    con = sqlite3.connect(h.codex / "state_5.sqlite")
    con.execute("UPDATE threads SET cwd=?", (old,))
    con.commit()
    con.close()
    assert apply_plan(plan_move(h, old, new, tools=["codex"]), h).exit_code == 0
    appended = continue_codex(paths[tid(1)], "openai", cwd=new)
    out = undo(h)
    assert out.exit_code == 0 and not out.skips
    now = paths[tid(1)].read_bytes()
    assert now.startswith(data) and len(now.splitlines()) == len((data + appended).splitlines())
    tail = [orjson.loads(x) for x in now[len(data):].splitlines()]
    assert [x["payload"]["cwd"] for x in tail if x["type"] == "turn_context"] == [old]
    assert new in tail[3]["payload"]["content"][0]["text"]           # text the user saw is never rewritten
    assert row(h.codex / "state_5.sqlite", "SELECT cwd FROM threads") == [(old,)]
    assert codex_codes(h) == set()


def test_case3_a_session_that_cannot_be_reverted_keeps_its_rows_too(tmp_path):
    h = homes()
    sessions = {tid(1): rollout(tid(1)), tid(2): rollout(tid(2))}
    paths = home_with(h.codex, sessions)
    apply_plan(plan_flip(h, "openai", "my-provider"), h)
    data = bytearray(paths[tid(1)].read_bytes())
    data[200:210] = b"x" * 10                                              # not an append: a rewrite
    paths[tid(1)].write_bytes(bytes(data))
    out = undo(h)
    assert out.exit_code == 3 and out.state == "partly-undone"
    assert [s.path for s in out.skips] == [str(paths[tid(1)])] and "--force" in out.skips[0].reason
    assert paths[tid(1)].read_bytes() == bytes(data)                        # file: as it is now
    assert row(h.codex / "state_5.sqlite", "SELECT model_provider FROM threads WHERE id=?",
               tid(1)) == [("my-provider",)]                                # row: agrees with the file
    assert paths[tid(2)].read_bytes() == sessions[tid(2)]
    assert [t.state for t in list_transactions(h.state)][0] == "partly-undone"
    r = histmig("log")
    assert "partly-undone" in r.stdout and f"kept: {paths[tid(1)]}: changed since the transaction" in r.stdout


# -- case 1: data loss ------------------------------------------------------------------------------
@pytest.fixture
def converted(isolated_homes, tmp_path):
    h = homes()
    for d in (h.codex, h.claude):
        d.mkdir(parents=True, exist_ok=True)
    proj = str(tmp_path / "work")
    os.makedirs(proj)
    write_codex(h.codex, proj)
    refs = list(registry.adapter("codex").discover(h))
    plan, _ = plan_convert(h, refs, ConvertOptions("claude-code", seed=7))
    res = apply_plan(plan, h)
    [created] = [Path(op.path) for op in plan.operations if op.kind == "create"]
    return h, res.txid, created


def test_case1_unchanged_converted_session_is_removed_with_a_copy_kept(converted):
    h, txid, created = converted
    data = created.read_bytes()
    out = undo(h, txid)
    assert out.exit_code == 0 and not created.exists()
    copies = [p for p in (h.state / "tx" / out.undo_txid / "b").iterdir()]
    assert any(p.read_bytes() == data for p in copies)


def test_case1_continued_conversion_is_kept_and_force_moves_it_to_the_trash(converted):
    h, txid, created = converted
    with open(created, "ab") as fh:
        fh.write(jl(claude_records(created.stem, "/w")[1:2]))
    continued = sha(created)
    out = undo(h, txid)
    assert out.exit_code == 3 and out.skips[0].code == "kept-continued" and created.exists()
    assert sha(created) == continued and "--force" in out.skips[0].reason
    out = undo(h, txid, force=True)
    assert out.exit_code == 0 and not created.exists()
    [trashed] = out.trash
    assert trashed.startswith(str(h.state / "trash" / txid)) and sha(Path(trashed)) == continued
    r = histmig("log")
    assert f"{txid}" in r.stdout and "undone" in r.stdout


# -- case 2: sessions dragged back -------------------------------------------------------------------
def test_case2_move_undo_leaves_a_session_started_after_the_apply_where_it_is(tmp_path):
    h = homes()
    old, new = str(tmp_path / "A"), str(tmp_path / "B")
    os.makedirs(new)
    first = claude_session(h, old, 1)
    before = first.read_bytes()
    assert apply_plan(plan_move(h, old, new, tools=["claude-code"]), h).exit_code == 0
    b_folder = h.claude / "projects" / claude_slug(new)
    fresh = b_folder / f"{sid(7)}.jsonl"
    fresh.write_bytes(jl(claude_records(sid(7), new)))                        # claude started in B
    out = undo(h)
    assert out.exit_code == 0 and not out.skips
    a_folder = h.claude / "projects" / claude_slug(old)
    assert (a_folder / first.name).read_bytes() == before
    assert fresh.exists() and fresh.read_bytes() == jl(claude_records(sid(7), new))
    assert sorted(os.listdir(b_folder)) == [fresh.name]


def test_case2_move_undo_of_a_continued_claude_session_keeps_the_new_turns(tmp_path):
    h = homes()
    old, new = str(tmp_path / "A"), str(tmp_path / "B")
    os.makedirs(new)
    first = claude_session(h, old, 1)
    before = first.read_bytes()
    apply_plan(plan_move(h, old, new, tools=["claude-code"]), h)
    moved = h.claude / "projects" / claude_slug(new) / first.name
    more = jl(claude_records(sid(1), new)[1:2])
    with open(moved, "ab") as fh:
        fh.write(more)
    out = undo(h)
    assert out.exit_code == 0
    back = h.claude / "projects" / claude_slug(old) / first.name
    now = back.read_bytes()
    assert now.startswith(before) and orjson.loads(now[len(before):])["cwd"] == old
    assert orjson.loads(now[len(before):])["message"] == orjson.loads(more)["message"]


# -- case 5: ordering and identity -------------------------------------------------------------------
def test_case5_transaction_ids_sort_by_time_within_the_same_second(tmp_path):
    h = homes()
    (h.state / "tx").mkdir(parents=True)
    ids = []
    for _ in range(50):
        ids.append(new_txid(h.state))
        (h.state / "tx" / ids[-1]).mkdir()
    assert sorted(ids, key=txid_sort_key) == ids == sorted(ids)
    assert txid_sort_key("20261130T050933Z-ffffff") < txid_sort_key("20261130T050933.000001Z-000000")


def test_case5_undo_picks_the_latest_of_two_quick_transactions_and_then_the_older(tmp_path):
    h = homes()
    sessions = {tid(1): rollout(tid(1))}
    paths = home_with(h.codex, sessions)
    first = apply_plan(plan_flip(h, "openai", "p1"), h).txid
    second = apply_plan(plan_flip(h, "p1", "p2"), h).txid
    assert txid_sort_key(first) < txid_sort_key(second)
    assert pick_transaction(h.state, None).name == second
    assert undo(h).txid == second
    assert undo(h).txid == first
    assert paths[tid(1)].read_bytes() == sessions[tid(1)]


def test_case5_undo_follows_a_rollout_codex_archived_since(tmp_path):
    h = homes()
    sessions = {tid(1): rollout(tid(1))}
    paths = home_with(h.codex, sessions)
    apply_plan(plan_flip(h, "openai", "my-provider"), h)
    archived = h.codex / "archived_sessions" / paths[tid(1)].name
    archived.parent.mkdir(parents=True)
    os.rename(paths[tid(1)], archived)                                       # what `codex archive` does
    out = undo(h)
    assert out.exit_code == 0 and not out.skips
    assert archived.read_bytes() == sessions[tid(1)] and not paths[tid(1)].exists()


def test_case5_older_convert_after_a_later_move_is_kept_and_names_the_move(converted, tmp_path):
    h, txid, created = converted
    cwd = orjson.loads(created.read_bytes().splitlines()[1])["cwd"]
    new = str(tmp_path / "moved")
    os.makedirs(new)
    move_tx = apply_plan(plan_move(h, cwd, new, tools=["claude-code"]), h).txid
    out = undo(h, txid)
    assert out.exit_code == 3 and out.skips[0].code == "later-transaction" and move_tx in out.skips[0].reason
    assert out.state == "partly-undone"
    assert undo(h, move_tx).exit_code == 0
    out = undo(h, txid)
    assert out.exit_code == 0 and not created.exists()


def test_case5_second_transaction_on_the_same_files_waits_for_the_later_one(tmp_path):
    h = homes()
    sessions = {tid(1): rollout(tid(1))}
    paths = home_with(h.codex, sessions)
    first = apply_plan(plan_flip(h, "openai", "p1"), h).txid
    second = apply_plan(plan_flip(h, "p1", "p2"), h).txid
    out = undo(h, first)
    assert out.exit_code == 3 and second in out.skips[0].reason
    assert b'"p2"' in paths[tid(1)].read_bytes()


# -- the inverse plan is data -------------------------------------------------------------------------
def test_undo_dry_run_prints_the_inverse_plan_and_writes_nothing(tmp_path):
    h = homes()
    paths = home_with(h.codex, {tid(1): rollout(tid(1))})
    apply_plan(plan_flip(h, "openai", "my-provider"), h)
    before = sha(paths[tid(1)]), sorted(os.listdir(h.state / "tx"))
    r = histmig("undo", "--dry-run")
    assert r.exit_code == 0 and "would rewrite" in r.stdout and "model_provider='openai'" in r.stdout
    assert "nothing written" in r.stdout
    assert (sha(paths[tid(1)]), sorted(os.listdir(h.state / "tx"))) == before
    r = histmig("undo", "--dry-run", "--json")
    assert orjson.loads(r.stdout)["plan"]["op"] == "undo"


def test_an_undo_transaction_is_not_undone_by_default_and_refuses_by_id(tmp_path):
    h = homes()
    home_with(h.codex, {tid(1): rollout(tid(1))})
    apply_plan(plan_flip(h, "openai", "my-provider"), h)
    out = undo(h)
    r = histmig("undo")
    assert r.exit_code == 1 and "no transaction to undo" in r.stderr
    r = histmig("undo", out.undo_txid)
    assert r.exit_code == 1 and "is an undo of" in r.stderr


def test_a_corrupted_backup_is_refused_by_undo_and_named(tmp_path):
    h = homes()
    paths = home_with(h.codex, {tid(1): rollout(tid(1))})
    txid = apply_plan(plan_flip(h, "openai", "my-provider"), h).txid
    for b in (h.state / "tx" / txid / "b").iterdir():
        if not b.name.endswith(".sqlite"):
            data = bytearray(b.read_bytes())
            data[10] ^= 1
            os.unlink(b)                                 # a hard link: write a new inode
            b.write_bytes(bytes(data))
    before = sha(paths[tid(1)])
    out = undo(h)
    assert out.exit_code == 3 and out.skips[0].code == "bad-backup" and "sha256" in out.skips[0].reason
    assert sha(paths[tid(1)]) == before


def test_a_backup_changed_in_place_is_hashed_again_and_refused(tmp_path):
    """The apply's ``done`` record holds the hard-link backup's size, mtime and ctime (``bst``): undo
    compares such a backup without hashing it while they hold. Bytes changed in the same inode, its
    mtime set back, still move its ctime: the backup is hashed, found wrong and the session kept."""
    h = homes()
    paths = home_with(h.codex, {tid(1): rollout(tid(1)), tid(2): rollout(tid(2))})
    txid = apply_plan(plan_flip(h, "openai", "my-provider"), h).txid
    assert b'"bst"' in (h.state / "tx" / txid / "journal.jsonl").read_bytes()
    b = sorted(p for p in (h.state / "tx" / txid / "b").iterdir() if not p.name.endswith(".sqlite"))[0]
    st = os.stat(b)
    with open(b, "r+b") as fh:                      # same inode, same size, same mtime
        fh.seek(10)
        byte = fh.read(1)
        fh.seek(10)
        fh.write(bytes([byte[0] ^ 1]))
    os.utime(b, ns=(st.st_atime_ns, st.st_mtime_ns))
    before = {k: sha(p) for k, p in paths.items()}
    out = undo(h)
    assert out.exit_code == 3 and [s.code for s in out.skips] == ["bad-backup"] and "sha256" in out.skips[0].reason
    assert sum(sha(p) != before[k] for k, p in paths.items()) == 1     # the other session was undone


# -- the line diff behind it -----------------------------------------------------------------------
_line = st.binary(max_size=30).map(lambda b: b.replace(b"\n", b"") + b"\n")


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(_line, _line), max_size=12), st.lists(_line, max_size=4), st.sampled_from([1, 5, 64, 1 << 20]))
def test_diff_against_backup_restores_the_old_lines_and_keeps_the_tail(tmp_path, pairs, tail, chunk):
    """Property: whatever value edits a transaction made inside lines, the diff's patches turn
    the file back into the backup's bytes, followed by the appended tail unchanged (whatever the
    comparison chunk, so chunk edges fall everywhere)."""
    from histmig.verbs.undo import diff as undo_diff
    from histmig.verbs.undo.diff import diff_against_backup
    undo_diff.CHUNK = undo_diff.SMALL = chunk
    try:
        old, new = b"".join(a for a, _ in pairs), b"".join(b for _, b in pairs)
        f, b = tmp_path / "f", tmp_path / "b"
        f.write_bytes(new + b"".join(tail))
        b.write_bytes(old)
        d = diff_against_backup(str(f), str(b), len(new), hashlib.sha256(new).hexdigest(), len(old))
        data, shift = bytearray(f.read_bytes()), 0
        for p in d.patches:
            at = p.offset + shift
            assert bytes(data[at:at + len(p.old)]) == p.old
            data[at:at + len(p.old)] = p.new
            shift += p.delta
        assert bytes(data) == old + b"".join(tail) and d.tail_start == len(new)
        assert d.sha256 == hashlib.sha256(new + b"".join(tail)).hexdigest()
    finally:
        undo_diff.CHUNK, undo_diff.SMALL = 1 << 20, 1 << 16


def test_case2_claude_json_saved_by_claude_since_the_move_gets_only_its_project_key_back(tmp_path):
    """Claude Code rewrites ~/.claude.json at every start: undo re-keys NEW -> OLD in the file as
    it is now instead of putting the old bytes back over the client's changes."""
    import json
    h = homes()
    old, new = str(tmp_path / "A"), str(tmp_path / "B")
    os.makedirs(new)
    claude_session(h, old, 1)
    h.claude_json.write_text(json.dumps({"numStartups": 3, "projects": {old: {"hasTrustDialogAccepted": True}}}, indent=2))
    apply_plan(plan_move(h, old, new), h)
    saved = json.loads(h.claude_json.read_text())
    saved["numStartups"] = 4                                                  # Claude ran in B
    saved["projects"][new]["lastSessionId"] = sid(1)
    h.claude_json.write_text(json.dumps(saved, indent=2))
    out = undo(h)
    assert out.exit_code == 0 and not out.skips
    after = json.loads(h.claude_json.read_text())
    assert after == {"numStartups": 4, "projects": {old: {"hasTrustDialogAccepted": True, "lastSessionId": sid(1)}}}


def test_case2_undo_removes_the_folders_the_move_created_once_they_are_empty_again(tmp_path):
    h = homes()
    old, new = str(tmp_path / "a/app"), str(tmp_path / "b/app")
    first = claude_session(h, old, 1)
    keep = h.claude / "projects" / claude_slug(new)
    keep.mkdir(parents=True)
    (keep / f"{sid(5)}.jsonl").write_bytes(jl(claude_records(sid(5), new)))     # a merge: file by file
    before = sorted(p.relative_to(h.claude) for p in (h.claude / "projects").rglob("*"))
    apply_plan(plan_move(h, old, new, tools=["claude-code"]), h)
    out = undo(h)
    assert out.exit_code == 0 and not out.skips and first.exists()
    assert sorted(p.relative_to(h.claude) for p in (h.claude / "projects").rglob("*")) == before


def test_case2_config_toml_rewritten_since_the_move_gets_only_its_project_key_back(tmp_path):
    """Codex's config.toml changed since a move (a client saved a setting): undo re-keys the project
    NEW -> OLD in the file as it is now; the change stays (Codex's undo hook, tools/codex/undo.py)."""
    h = homes()
    old, new = str(tmp_path / "A"), str(tmp_path / "B")
    os.makedirs(new)
    home_with(h.codex, {tid(1): rollout(tid(1), cwd=old)})
    cfg = h.codex / "config.toml"
    cfg.write_text(f'model = "gpt-5.5"\n\n[projects."{old}"]\ntrust_level = "trusted"\n')
    apply_plan(plan_move(h, old, new), h)
    assert f'[projects."{new}"]' in cfg.read_text()
    cfg.write_text(cfg.read_text().replace('model = "gpt-5.5"', 'model = "gpt-5.5-codex"'))
    out = undo(h)
    assert out.exit_code == 0 and not out.skips
    assert cfg.read_text() == f'model = "gpt-5.5-codex"\n\n[projects."{old}"]\ntrust_level = "trusted"\n'


def test_case2_config_toml_rewritten_since_a_flip_with_set_config_gets_its_provider_back(tmp_path):
    h = homes()
    home_with(h.codex, {tid(1): rollout(tid(1))})
    cfg = h.codex / "config.toml"
    cfg.write_text('# c\n[model_providers.mine]\nname = "m"\n')
    apply_plan(plan_flip(h, "openai", "mine", set_config=True), h)
    assert 'model_provider = "mine"' in cfg.read_text()
    cfg.write_text(cfg.read_text().replace("# c\n", "# c, saved by a client\n"))
    out = undo(h)
    assert out.exit_code == 0 and not out.skips
    assert cfg.read_text() == '# c, saved by a client\nmodel_provider = "openai"\n\n[model_providers.mine]\nname = "m"\n'


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=600), st.binary(max_size=600), st.binary(max_size=600), st.sampled_from([1, 4, 256]))
def test_common_prefix_and_suffix_agree_with_a_byte_loop(head, a, b, xor_bytes):
    """The diff's span finder (halving, then one XOR of the rest) against the obvious byte loop,
    whatever the stretch it hands to the XOR."""
    from histmig.verbs.undo import diff as undo_diff
    x, y = head + a + head, head + b + head
    n = min(len(x), len(y))
    pre = next((i for i in range(n) if x[i] != y[i]), n)
    suf = next((i for i in range(n) if x[len(x) - 1 - i] != y[len(y) - 1 - i]), n)
    saved, undo_diff._XOR_BYTES = undo_diff._XOR_BYTES, xor_bytes
    try:
        assert undo_diff.common_prefix(x, y, n) == pre
        assert undo_diff.common_suffix(x, y, n) == suf
        assert undo_diff.common_suffix(x, y, n - pre) == min(suf, n - pre)
    finally:
        undo_diff._XOR_BYTES = saved
