"""pack / unpack of what lies beside the session files (issue 19, docs/pack.md "What a session takes
with it"): Codex's thread_history_1.sqlite projection rows (offsets shifted when --rehome changes the
rollout) and history.jsonl prompt lines; Claude Code's ~/.claude.json project entry and history.jsonl
prompt lines; bundles from Windows paths."""
from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from histmig.cli.samples import install
from test_pack import REC, cli, snapshot

HIST_TABLES = ("thread_turns", "thread_items", "thread_history_projection_state")


def emptied_dbs(src: Path, dst: Path) -> None:
    """dst gets src's Codex databases with their tables and no rows (a home where Codex ran, with no threads)."""
    dst.mkdir(parents=True, exist_ok=True)
    for name in ("state_5.sqlite", "thread_history_1.sqlite"):
        shutil.copy2(src / name, dst / name)
        con = sqlite3.connect(dst / name)
        tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table' AND name != '_sqlx_migrations'")]
        for t in tables:
            con.execute(f"DELETE FROM {t}")
        con.commit()
        con.close()


def rows_of(db: Path, table: str) -> list[dict]:
    con = sqlite3.connect(db)
    con.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in con.execute(f"SELECT * FROM {table}")]
    finally:
        con.close()


def rollouts(home: Path) -> dict[str, Path]:
    return {p.name.split(".")[0][-36:]: p for p in (home / ".codex").rglob("rollout-*.jsonl*")}


def plain(p: Path) -> bytes:
    import zstandard
    data = p.read_bytes()
    return zstandard.ZstdDecompressor().stream_reader(data).read() if p.name.endswith(".zst") else data


def line_at(data: bytes, at: int) -> bytes:
    return data[at:data.index(b"\n", at) + 1] if at < len(data) else b""


@pytest.fixture
def codex_world(isolated_homes, tmp_path):
    a, b = tmp_path / "A", tmp_path / "B"
    install(a, tools=("codex", "claude-code"))
    emptied_dbs(a / ".codex", b / ".codex")
    ids = sorted(rollouts(a))
    # Codex's prompt history: two threads' prompts, and one of a thread that is not packed
    lines = [{"session_id": ids[0], "ts": 1796000000, "text": "first prompt"},
             {"session_id": "other-thread", "ts": 1796000001, "text": "not mine"},
             {"session_id": ids[1], "ts": 1796000002, "text": "ünïcode prompt"},
             {"session_id": ids[0], "ts": 1796000003, "text": "second prompt"}]
    (a / ".codex" / "history.jsonl").write_text("".join(json.dumps(x, ensure_ascii=False, separators=(",", ":")) + "\n"
                                                        for x in lines))
    return a, b, tmp_path / "out" / "h.tar.zst", ids


def pack_all(capsys, a: Path, bundle: Path, *more: str) -> dict:
    bundle.parent.mkdir(exist_ok=True)
    code, out, err = cli(capsys, "--home", str(a), "pack", *more, "-o", str(bundle))
    assert code == 0, out + err
    from test_pack import bundle_manifest
    return bundle_manifest(bundle)


def test_codex_projection_rows_and_prompt_lines_are_packed(capsys, codex_world):
    a, _b, bundle, ids = codex_world
    manifest = pack_all(capsys, a, bundle, "--all")
    by_id = {s["id"]: s for s in manifest["sessions"] if s["tool"] == "codex"}
    for t in ids:
        for table in HIST_TABLES:
            assert by_id[t]["rows"][table] and all(r["thread_id"] == t for r in by_id[t]["rows"][table])
    assert [json.loads(r["line"])["text"] for r in by_id[ids[0]]["rows"]["history.jsonl"]] == ["first prompt", "second prompt"]
    assert [json.loads(r["line"])["text"] for r in by_id[ids[1]]["rows"]["history.jsonl"]] == ["ünïcode prompt"]
    assert "history.jsonl" not in by_id[ids[2]]["rows"]


@pytest.mark.parametrize("rehome", [False, True])
def test_codex_unpack_inserts_projection_rows_with_offsets_on_the_same_lines(capsys, codex_world, rehome):
    a, b, bundle, ids = codex_world
    pack_all(capsys, a, bundle, "--all")
    new = b / "a-much-longer-project-folder-name" / "code"
    args = ["--rehome", f"{REC}={new}"] if rehome else []
    code, out, err = cli(capsys, "--home", str(b), "unpack", str(bundle), *args, "--apply")
    assert code == 0, out + err
    src, dst = rollouts(a), rollouts(b)
    for table in HIST_TABLES:
        assert {r["thread_id"] for r in rows_of(b / ".codex" / "thread_history_1.sqlite", table)} == set(ids)
    old_turns = {(r["thread_id"], r["turn_id"]): r for r in rows_of(a / ".codex" / "thread_history_1.sqlite", "thread_turns")}
    changed = 0
    for r in rows_of(b / ".codex" / "thread_history_1.sqlite", "thread_turns"):
        o = old_turns[(r["thread_id"], r["turn_id"])]
        before, after = plain(src[r["thread_id"]]), plain(dst[r["thread_id"]])
        for col in ("rollout_byte_offset", "rollout_end_byte_offset"):
            # the start of the same line (its number), in the re-homed rollout
            assert after[:r[col]].count(b"\n") == before[:o[col]].count(b"\n"), (col, r)
            assert r[col] == 0 or after[r[col] - 1:r[col]] == b"\n"
            if not rehome:
                assert line_at(after, r[col]) == line_at(before, o[col])
            changed += r[col] != o[col]
    assert changed if rehome else not changed
    for r in rows_of(b / ".codex" / "thread_history_1.sqlite", "thread_history_projection_state"):
        assert r["next_rollout_byte_offset"] == len(plain(dst[r["thread_id"]]))
    history = (b / ".codex" / "history.jsonl").read_text().splitlines()
    assert sorted(json.loads(x)["text"] for x in history) == ["first prompt", "second prompt", "ünïcode prompt"]
    # again: nothing added twice
    code, out, err = cli(capsys, "--home", str(b), "unpack", str(bundle), *args, "--apply")
    assert code == 0 and "nothing to do" in out + err
    assert (b / ".codex" / "history.jsonl").read_text().splitlines() == history


def test_codex_prompt_lines_merge_into_a_history_and_undo_takes_exactly_them_off(capsys, codex_world):
    a, b, bundle, ids = codex_world
    pack_all(capsys, a, bundle, "--all")
    own = b'{"session_id":"mine","ts":1,"text":"my own prompt"}\n'
    (b / ".codex" / "history.jsonl").write_bytes(own)
    before = snapshot(b)
    before_rows = {t: rows_of(b / ".codex" / "thread_history_1.sqlite", t) for t in HIST_TABLES}
    code, out, err = cli(capsys, "--home", str(b), "unpack", str(bundle))
    assert code == 0 and "shared file" in out, out + err
    code, out, err = cli(capsys, "--home", str(b), "unpack", str(bundle), "--apply")
    assert code == 0, out + err
    got = (b / ".codex" / "history.jsonl").read_bytes()
    assert got.startswith(own) and got.count(b"\n") == 4
    later = b'{"session_id":"mine","ts":2,"text":"typed after the unpack"}\n'
    with open(b / ".codex" / "history.jsonl", "ab") as fh:     # Codex appends a prompt meanwhile
        fh.write(later)
    code, out, err = cli(capsys, "--home", str(b), "undo")
    assert code == 0, out + err
    files = lambda snap: {k: v for k, v in snap.items() if not k.endswith(".sqlite")}  # noqa: E731 (db pages move)
    assert (b / ".codex" / "history.jsonl").read_bytes() == own + later       # exactly the unpacked lines off
    (b / ".codex" / "history.jsonl").write_bytes(own)
    assert files(snapshot(b)) == files(before)
    assert rows_of(b / ".codex" / "state_5.sqlite", "threads") == []
    assert {t: rows_of(b / ".codex" / "thread_history_1.sqlite", t) for t in HIST_TABLES} == before_rows


# ---- Claude Code: ~/.claude.json project entry, history.jsonl prompt lines ----------------------

INTERACTIVE = "319df6a0-2049-4339-acfe-a86bdc392277"      # the sample typed in the terminal UI: history.jsonl


@pytest.fixture
def claude_world(isolated_homes, tmp_path):
    a, b = tmp_path / "A", tmp_path / "B"
    install(a, tools=("claude-code",))
    # the samples hook put .claude.json at ~/.claude.json, where Claude keeps it without CLAUDE_CONFIG_DIR
    (b / ".claude").mkdir(parents=True)
    own = {"numStartups": 3, "hasCompletedOnboarding": True,
           "projects": {"/home/b/mine": {"allowedTools": ["Bash"], "hasTrustDialogAccepted": True}}, "userID": "b"}
    (b / ".claude.json").write_text(json.dumps(own, indent=2))
    (b / ".claude" / "history.jsonl").write_text(json.dumps({"display": "mine", "pastedContents": {}, "timestamp": 1,
                                                             "project": "/home/b/mine", "sessionId": "b-own"},
                                                            separators=(",", ":")) + "\n")
    return a, b, tmp_path / "out" / "c.tar.zst"


def test_claude_project_entry_and_prompt_lines_are_packed(capsys, claude_world):
    a, _b, bundle = claude_world
    manifest = pack_all(capsys, a, bundle, "--tool", "claude-code", "--all")
    entry = json.loads((a / ".claude.json").read_text())["projects"][f"{REC}/app"]
    by_id = {s["id"]: s for s in manifest["sessions"]}
    app = [s for s in manifest["sessions"] if s["cwd"] == f"{REC}/app"]
    assert app and all(s["rows"][".claude.json"] == [{"key": f"{REC}/app", "value": entry}] for s in app)
    lines = (a / ".claude" / "history.jsonl").read_text().splitlines()
    assert [r["line"] for r in by_id[INTERACTIVE]["rows"]["history.jsonl"]] == lines
    assert all("history.jsonl" not in s["rows"] for s in manifest["sessions"] if s["id"] != INTERACTIVE)


def test_claude_unpack_adds_the_rehomed_entry_and_lines_beside_the_homes_own_and_undo_takes_them_off(capsys, claude_world):
    a, b, bundle = claude_world
    pack_all(capsys, a, bundle, "--tool", "claude-code", "--all")
    new = "/home/b/code"
    cfg, hist = b / ".claude.json", b / ".claude" / "history.jsonl"
    raw_cfg, raw_hist = cfg.read_bytes(), hist.read_bytes()
    code, out, err = cli(capsys, "--home", str(b), "unpack", str(bundle), "--rehome", f"{REC}={new}", "--apply")
    assert code == 0, out + err
    entry = json.loads((a / ".claude.json").read_text())["projects"][f"{REC}/app"]
    got = json.loads(cfg.read_text())
    assert got == {**json.loads(raw_cfg), "projects": {**json.loads(raw_cfg)["projects"], f"{new}/app": entry}}
    now = cfg.read_bytes()       # one insertion: every byte of the file as it was, before and after it
    head = next(i for i in range(len(raw_cfg) + 1) if i == len(raw_cfg) or now[i] != raw_cfg[i])
    assert now.endswith(raw_cfg[head:]) and len(now) > len(raw_cfg)
    lines = hist.read_bytes()
    assert lines.startswith(raw_hist)
    added = [json.loads(x) for x in lines[len(raw_hist):].splitlines()]
    src = [json.loads(x) for x in (a / ".claude" / "history.jsonl").read_text().splitlines()]
    assert added == [{**x, "project": f"{new}/app"} for x in src]
    # again: nothing new
    code, out, err = cli(capsys, "--home", str(b), "unpack", str(bundle), "--rehome", f"{REC}={new}")
    assert code == 0 and "nothing to do" in out + err
    code, out, err = cli(capsys, "--home", str(b), "undo")
    assert code == 0, out + err
    assert cfg.read_bytes() == raw_cfg and hist.read_bytes() == raw_hist


def test_claude_entry_already_there_is_kept_and_a_missing_config_is_left_to_claude(capsys, claude_world):
    a, b, bundle = claude_world
    pack_all(capsys, a, bundle, "--tool", "claude-code", "--all")
    cfg = b / ".claude.json"
    mine = {"projects": {f"{REC}/app": {"allowedTools": ["mine"]}}}
    cfg.write_text(json.dumps(mine))
    code, out, err = cli(capsys, "--home", str(b), "unpack", str(bundle), "--apply")
    assert code == 0, out + err
    assert json.loads(cfg.read_text()) == mine
    assert cli(capsys, "--home", str(b), "undo")[0] == 0
    cfg.unlink()
    code, out, err = cli(capsys, "--home", str(b), "unpack", str(bundle), "--apply")
    assert code == 0, out + err
    assert not cfg.exists()          # Claude Code writes its own at its first start


def test_undo_takes_the_added_entry_out_of_a_config_claude_saved_since(capsys, claude_world):
    a, b, bundle = claude_world
    pack_all(capsys, a, bundle, "--tool", "claude-code", "--all")
    cfg = b / ".claude.json"
    new = "/home/b/code"
    code, out, err = cli(capsys, "--home", str(b), "unpack", str(bundle), "--rehome", f"{REC}={new}", "--apply")
    assert code == 0, out + err
    saved = json.loads(cfg.read_text())      # Claude Code starts and saves its config again
    saved["numStartups"] = 4
    cfg.write_text(json.dumps(saved, indent=2))
    code, out, err = cli(capsys, "--home", str(b), "undo")
    assert code == 0, out + err
    got = json.loads(cfg.read_text())
    assert got["numStartups"] == 4 and list(got["projects"]) == ["/home/b/mine"]


# ---- a bundle from Windows paths (--rehome 'C:\Users\x=/home/x') ----------------------------------

WIN = "C:\\Users\\x\\code"


def windows(value):
    """Every string that *is* a path under REC as Windows records it (backslashes, drive letter)."""
    if isinstance(value, str) and (value == REC or value.startswith(REC + "/")):
        return WIN + value[len(REC):].replace("/", "\\")
    if isinstance(value, dict):
        return {k: windows(v) for k, v in value.items()}
    if isinstance(value, list):
        return [windows(v) for v in value]
    return value


def windows_lines(data: bytes) -> bytes:
    import orjson
    out = []
    for raw in data.splitlines():
        try:
            out.append(orjson.dumps(windows(orjson.loads(raw))))
        except orjson.JSONDecodeError:
            out.append(raw)
    return b"".join(x + b"\n" for x in out)


def windows_home(a: Path) -> None:
    """The installed samples as if recorded on Windows under C:\\Users\\x\\code."""
    import zstandard
    from histmig.core.paths import claude_slug
    for p in [*a.rglob("*.jsonl"), *a.rglob("*.jsonl.zst")]:
        if p.name.endswith(".zst"):
            data = zstandard.ZstdDecompressor().stream_reader(p.read_bytes()).read()
            p.write_bytes(zstandard.ZstdCompressor(level=3).compress(windows_lines(data)))
        else:
            p.write_bytes(windows_lines(p.read_bytes()))
    cfg = json.loads((a / ".claude.json").read_text())
    cfg["projects"] = {windows(k).replace("\\", "/"): v for k, v in cfg["projects"].items()}
    (a / ".claude.json").write_text(json.dumps(cfg, indent=2))
    for d in list((a / ".claude" / "projects").iterdir()):
        cwd = next(json.loads(x)["cwd"] for f in d.glob("*.jsonl") for x in f.read_text().splitlines() if '"cwd"' in x)
        d.rename(d.with_name(claude_slug(cwd)))
    con = sqlite3.connect(a / ".codex" / "state_5.sqlite")
    for tid, cwd in con.execute("SELECT id, cwd FROM threads").fetchall():
        con.execute("UPDATE threads SET cwd = ? WHERE id = ?", (windows(cwd), tid))
    con.commit()
    con.close()
    con = sqlite3.connect(a / ".codex" / "thread_history_1.sqlite")   # the rewritten lines moved the offsets
    for t in HIST_TABLES:
        con.execute(f"DELETE FROM {t}")
    con.commit()
    con.close()


def test_a_bundle_from_windows_paths_unpacks_into_a_posix_home(capsys, isolated_homes, tmp_path):
    from histmig.core.paths import claude_slug
    a, b = tmp_path / "A", tmp_path / "B"
    install(a, tools=("codex", "claude-code"))
    windows_home(a)
    (a / ".claude" / "history.jsonl").write_bytes(windows_lines((a / ".claude" / "history.jsonl").read_bytes()))
    assert (a / ".claude" / "projects" / "C--Users-x-code-app").is_dir()
    manifest = pack_all(capsys, a, tmp_path / "out" / "w.tar.zst", "--all")
    assert {s["cwd"][:len(WIN)] for s in manifest["sessions"]} == {WIN}
    (b / ".claude").mkdir(parents=True)
    (b / ".claude.json").write_text("{}")
    emptied_dbs(a / ".codex", b / ".codex")
    new = b / "code"
    (new / "app").mkdir(parents=True)
    code, out, err = cli(capsys, "--home", str(b), "unpack", str(tmp_path / "out" / "w.tar.zst"),
                         "--rehome", f"C:\\Users\\x\\code={new}", "--apply")
    assert code == 0, out + err
    code, out, _ = cli(capsys, "--home", str(b), "scan", "--json")
    sessions = json.loads(out)["sessions"]
    assert len(sessions) == 12 and all(s["cwd"].startswith(f"{new}/") for s in sessions), [s["cwd"] for s in sessions]
    assert {s["cwd"] for s in sessions} >= {f"{new}/app", f"{new}/my app/データ"}
    folders = {p.name for p in (b / ".claude" / "projects").iterdir()}
    assert folders == {claude_slug(f"{new}/app"), claude_slug(f"{new}/my app/データ")}, folders
    for p in [*(b / ".claude").rglob("*.jsonl"), *(b / ".codex" / "sessions").rglob("*.jsonl")]:
        for line in p.read_bytes().splitlines():
            rec = json.loads(line)
            for cwd in (rec.get("cwd"), (rec.get("payload") or {}).get("cwd") if isinstance(rec.get("payload"), dict) else None,
                        rec.get("project")):
                assert cwd is None or cwd.startswith(str(new)), (p, cwd)
    assert {r["cwd"] for r in rows_of(b / ".codex" / "state_5.sqlite", "threads")} <= {f"{new}/app", f"{new}/my app/データ"}
    assert list(json.loads((b / ".claude.json").read_text())["projects"]) == [f"{new}/app"]


def test_a_windows_rehome_needs_a_folder_of_this_machine():
    from histmig.core.diagnostics import UsageError
    from histmig.toolkit.winpath import windows_pathmap
    pm = windows_pathmap("C:\\Users\\x", "/home/x")
    assert pm.rebase("C:\\Users\\x\\code\\app") == "/home/x/code/app"
    assert pm.rebase("c:/users/X/code") == "/home/x/code"       # Windows paths: any case, either separator
    assert pm.rebase("C:\\Users\\xy") is None and pm.rebase("/Users/x") is None
    for old, new in (("C:\\", "/home/x"), ("C:\\Users\\x", "D:\\y")):
        with pytest.raises(UsageError):
            windows_pathmap(old, new)
