"""Partial undos (a session kept) then finished, for OpenCode, Gemini CLI, Copilot CLI and Cline:
the kept session whole as the transaction left it (plus the change that kept it), the others back
byte for byte and row for row; once the reason is gone the next undo finishes the transaction, also
when the first undo's mark was lost (histmig/verbs/undo/coverage.py)."""
from __future__ import annotations

import os
import shutil
import sqlite3
import uuid
from pathlib import Path

import orjson
import pytest

from histmig import tools as registry
from histmig.apply import apply_plan
from histmig.apply.journal import list_transactions
from histmig.verbs.undo.run import undo

from test_move_fixtures import homes
from test_undo_settled import edit_journal

SAMPLES = Path(__file__).resolve().parent.parent / "histmig" / "samples"
DBS = (".db", ".sqlite", ".db-wal", ".db-shm", ".sqlite-wal", ".sqlite-shm", ".db-journal")


# -- what a home holds: every file's bytes and mtime, every folder, every database row -------------------
def tree(root: Path) -> dict:
    out: dict = {}
    for p in sorted(Path(root).rglob("*")) if Path(root).exists() else []:
        rel = str(p.relative_to(root))
        if p.is_symlink():
            out[rel] = ("link", os.readlink(p))
        elif p.is_dir():
            out[rel] = ("dir",)
        elif p.name.endswith(DBS):
            if p.name.endswith((".db", ".sqlite")):
                out[rel] = ("db", db_rows(p))
        else:
            out[rel] = (p.read_bytes(), p.stat().st_mtime_ns)
    return out


def db_rows(db: Path) -> dict:
    con = sqlite3.connect(db)
    try:
        tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")]
        return {t: sorted(map(repr, con.execute(f'SELECT * FROM "{t}"'))) for t in tables}
    finally:
        con.close()


def records(folder: Path) -> list[dict]:
    return [orjson.loads(x) for x in (folder / "journal.jsonl").read_bytes().splitlines()]


def states(h) -> dict:
    return {t.txid: t.state for t in list_transactions(h.state)}


def drop_mark(folder: Path) -> None:
    edit_journal(folder, lambda r: None if r["kind"] in ("undo-by", "undone", "undo-stopped") else r)


def changed(before: dict, after: dict) -> set:
    return {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)}


# -- convert --all into each tool: three Claude Code sessions of one project ------------------------------
def _claude_sources(h, proj: str) -> list:
    from convert_fixtures import write_claude
    for i in range(3):
        write_claude(h.claude, proj, sid=str(uuid.UUID(int=0xABC00 + i, version=4)))
    return list(registry.adapter("claude-code").discover(h))


def _target_home(h, tool: str) -> Path:
    if tool == "opencode":
        db = h.opencode / "opencode.db"
        db.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(SAMPLES / "opencode" / "resumed" / "opencode.db", db)
        return h.opencode
    return {"gemini": h.gemini, "copilot": h.copilot, "cline": h.cline}[tool]


def convert_three(tmp_path, tool: str):
    from histmig.verbs.convert import ConvertOptions
    from histmig.verbs.convert.batches import plan_convert
    h = homes()
    h.claude.mkdir(parents=True, exist_ok=True)
    root = _target_home(h, tool)
    root.mkdir(parents=True, exist_ok=True)
    proj = str(tmp_path / "work")
    os.makedirs(proj)
    refs = _claude_sources(h, proj)
    before = tree(root)
    plan, _ = plan_convert(h, refs, ConvertOptions(tool, seed=7))
    res = apply_plan(plan, h)
    assert res.exit_code == 0, res.skips
    folder = h.state / "tx" / res.txid
    return h, root, before, folder


def _sessions_written(folder: Path) -> dict:
    """session id -> the journal intents of it (files created, rows inserted)."""
    out: dict = {}
    for r in records(folder):
        if r["kind"] != "intent":
            continue
        if r["method"] == "sql":
            for row in r.get("rows", []):
                if (row.get("session") or {}).get("id"):
                    out.setdefault(row["session"]["id"], []).append(("row", r["path"], row))
        elif (r.get("session") or {}).get("id"):
            out.setdefault(r["session"]["id"], []).append(("file", r["path"], r))
    return out


def _continue(h, tool: str, sid: str, written: list) -> None:
    """What the tool's client does when the user continues the converted session."""
    if tool == "opencode":
        con = sqlite3.connect(h.opencode / "opencode.db")
        con.execute("INSERT INTO message VALUES ('msg_ffffffffffffzzzzzzzzzzzzzz', ?, 1, 1, '{\"role\":\"user\"}')",
                    (sid,))
        con.commit()
        con.close()
        return
    files = [p for kind, p, _ in written if kind == "file"]
    main = next(p for p in files if p.endswith((".jsonl", ".messages.json")))
    if main.endswith(".jsonl"):
        with open(main, "ab") as fh:
            fh.write(b'{"type":"x","timestamp":"2026-12-03T10:00:00.000Z"}\n')
    else:
        data = orjson.loads(Path(main).read_bytes())
        data["messages"].append({"role": "user", "content": [{"type": "text", "text": "more"}]})
        Path(main).write_bytes(orjson.dumps(data))


def _reason_gone(h, tool: str) -> bool:
    """Whether the next undo needs --force: a continued file goes to the trash; OpenCode's rows are
    never forced away (docs/opencode.md), so the message the client added is removed instead."""
    if tool != "opencode":
        return True
    con = sqlite3.connect(h.opencode / "opencode.db")
    con.execute("DELETE FROM message WHERE id = 'msg_ffffffffffffzzzzzzzzzzzzzz'")
    con.commit()
    con.close()
    return False


TOOLS = ["opencode", "gemini", "copilot", "cline"]


def _pick(folder: Path, which: str) -> tuple[str, list]:
    """A converted session: the first one journaled (it made the shared folders / marker) or the last."""
    written = _sessions_written(folder)
    order = list(written)
    assert len(order) >= 3, written.keys()
    sid = order[0] if which == "first" else order[-1]
    return sid, written[sid]


@pytest.mark.parametrize("which", ["first", "last"])
@pytest.mark.parametrize("tool", TOOLS)
def test_convert_all_one_continued_kept_whole_then_forced(tmp_path, tool, which):
    h, root, before, folder = convert_three(tmp_path, tool)
    sid, written = _pick(folder, which)
    _continue(h, tool, sid, written)
    kept_now = tree(root)
    first = undo(h)
    assert first.state == "partly-undone", first.skips
    assert {s.code for s in first.skips} <= {"kept-continued", "session-skipped"}, first.skips
    now = tree(root)
    # the kept session: everything of it as the convert left it, plus the continuation
    for kind, path, _ in written:
        if kind == "file":
            rel = str(Path(path).relative_to(root))
            assert now.get(rel) == kept_now[rel], rel
    # the others: gone; whatever is left differs from before only by the kept session
    assert changed(before, now) <= changed(before, kept_now)
    # and the kept session is still found where it was recorded (Gemini: its project's marker stays)
    ours = _sessions_written(folder)
    assert {r.id: r.cwd for r in registry.adapter(tool).discover(h) if r.id in ours} == {sid: str(tmp_path / "work")}
    assert states(h)[folder.name] == "partly-undone"
    second = undo(h, folder.name, force=_reason_gone(h, tool))
    assert second.state == "undone", second.skips
    assert tree(root) == before, changed(before, tree(root))
    assert states(h)[folder.name] == "undone"


@pytest.mark.parametrize("tool", TOOLS)
def test_convert_lost_mark_after_kept_continued(tmp_path, tool):
    h, root, before, folder = convert_three(tmp_path, tool)
    sid, written = _pick(folder, "last")
    _continue(h, tool, sid, written)
    assert undo(h).state == "partly-undone"
    drop_mark(folder)
    assert states(h)[folder.name] == "committed"
    second = undo(h, folder.name, force=_reason_gone(h, tool))
    assert second.state == "undone", second.skips
    assert tree(root) == before, changed(before, tree(root))


# -- move of a project holding three sessions in each tool -----------------------------------------------
def _index_rows(h, tool: str, old: str, folder: Path) -> None:
    """The index rows the clients keep (convert writes none: the client adds its row on resume)."""
    sids = list(_sessions_written(folder))
    if tool == "copilot":
        con = sqlite3.connect(h.copilot / "session-store.db")
        con.execute("CREATE TABLE sessions (id TEXT PRIMARY KEY, cwd TEXT, summary TEXT)")
        con.executemany("INSERT INTO sessions VALUES (?, ?, 's')", [(s, old) for s in sids])
    else:
        (h.cline / "data" / "db").mkdir(parents=True)
        con = sqlite3.connect(h.cline / "data" / "db" / "sessions.db")
        con.execute("CREATE TABLE sessions (session_id TEXT PRIMARY KEY, cwd TEXT NOT NULL, workspace_root TEXT NOT NULL)")
        con.executemany("INSERT INTO sessions VALUES (?, ?, ?)", [(s, old, old) for s in sids])
    con.commit()
    con.close()


def move_three(tmp_path, tool: str):
    """Three sessions of ``tool`` recorded in OLD (converted there), then ``move OLD NEW``."""
    from histmig.verbs.move import plan_move
    h, root, _, convert_tx = convert_three(tmp_path, tool)
    old, new = str(tmp_path / "work"), str(tmp_path / "work2")
    if tool in ("copilot", "cline"):
        _index_rows(h, tool, old, convert_tx)
    os.rename(old, new)
    before = tree(root)
    res = apply_plan(plan_move(h, old, new, tools=[tool]), h)
    assert res.exit_code == 0, res.skips
    folder = h.state / "tx" / res.txid
    moved = {s: w for s, w in _sessions_written(folder).items()}
    assert len(moved) >= 3 or tool == "gemini", moved.keys()
    return h, root, before, folder, old, new


def _spoil(h, tool: str, folder: Path, new: str):
    """Change one moved session in a way that is not an append; returns (its paths and rows, the
    function that puts it back as the move left it)."""
    sid, written = next(iter(_sessions_written(folder).items()))
    if tool == "opencode":
        db = h.opencode / "opencode.db"
        con = sqlite3.connect(db)
        con.execute("UPDATE session SET directory = ? WHERE id = ?", (new + "/elsewhere", sid))
        con.commit()
        con.close()

        def back():
            c = sqlite3.connect(db)
            c.execute("UPDATE session SET directory = ? WHERE id = ?", (new, sid))
            c.commit()
            c.close()
        return sid, back
    path = Path(next(p for kind, p, _ in written if kind == "file"))
    data, st = path.read_bytes(), path.stat()
    i = data.index(new.encode())
    path.write_bytes(data[:i] + b"X" + data[i + 1:])

    def back():
        path.write_bytes(data)
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    return sid, back


def _session_state(h, root: Path, tool: str, sid: str, folder: Path) -> dict:
    """Everything of one session: its files (bytes, mtime) and its rows in every database of the home."""
    out = {}
    for kind, path, _row in _sessions_written(folder)[sid]:
        if kind == "file":
            p = Path(path)
            out[path] = (p.read_bytes(), p.stat().st_mtime_ns) if p.exists() else None
    for db in root.rglob("*"):
        if db.name.endswith((".db", ".sqlite")):
            for table, rows in db_rows(db).items():
                out[f"{db}:{table}"] = sorted(r for r in rows if sid in r)
    return out


def without(snap: dict, sid: str, paths: set) -> dict:
    """A tree without one session: its files, and its rows in every table."""
    out = {}
    for k, v in snap.items():
        if k in paths:
            continue
        out[k] = ("db", {t: [r for r in rows if sid not in r] for t, rows in v[1].items()}) if v[0] == "db" else v
    return out


MOVE_TOOLS = ["opencode", "copilot", "cline"]


@pytest.mark.parametrize("lost", [False, True], ids=["mark", "lost-mark"])
@pytest.mark.parametrize("tool", MOVE_TOOLS)
def test_move_one_session_kept_whole_then_finished(tmp_path, tool, lost):
    h, root, before, folder, old, new = move_three(tmp_path, tool)
    sid, back = _spoil(h, tool, folder, new)
    kept_now = _session_state(h, root, tool, sid, folder)
    first = undo(h)
    assert first.state == "partly-undone", first.skips
    assert _session_state(h, root, tool, sid, folder) == kept_now         # the kept one: whole, as it was
    # the others, and every shared file and row: back as before the move
    mine = {str(Path(p).relative_to(root)) for kind, p, _ in _sessions_written(folder)[sid] if kind == "file"}
    assert without(tree(root), sid, mine) == without(before, sid, mine)
    if lost:
        drop_mark(folder)
        assert states(h)[folder.name] == "committed"
    back()
    second = undo(h, folder.name)
    assert second.state == "undone", second.skips
    assert tree(root) == before, changed(before, tree(root))
    assert states(h)[folder.name] == "undone"


# -- Gemini CLI: a move re-keys projects.json (one file, every project) and both markers of each slug ---
def _gemini_moved(tmp_path):
    from histmig.cli import samples
    from histmig.verbs.move import plan_move
    h = samples.install(tmp_path / "home", tools=("gemini",))     # app (3 sessions) and project (1)
    before = tree(h.gemini)
    new = str(tmp_path / "w2")
    res = apply_plan(plan_move(h, "/tmp/histmig-rec/work", new), h)
    assert res.exit_code == 0, res.skips
    return h, before, new, h.state / "tx" / res.txid


def _registry(h) -> dict:
    return orjson.loads((h.gemini / "projects.json").read_bytes())["projects"]


def _spoil_marker(h):
    marker = h.gemini / "tmp" / "app" / ".project_root"
    left, st = marker.read_bytes(), marker.stat()
    marker.write_bytes(left.replace(b"w2", b"W2"))                 # not an append: kept

    def back():
        marker.write_bytes(left)
        os.utime(marker, ns=(st.st_atime_ns, st.st_mtime_ns))
    return back


@pytest.mark.parametrize("lost", [False, True], ids=["mark", "lost-mark"])
def test_gemini_move_marker_kept_then_the_second_undo_finishes(tmp_path, lost):
    h, before, new, folder = _gemini_moved(tmp_path)
    back = _spoil_marker(h)
    first = undo(h)
    assert first.state == "partly-undone", first.skips
    # one unit (the registry and every marker the move re-keyed): the other project waits with it
    assert (h.gemini / "tmp" / "project" / ".project_root").read_text() == f"{new}/my app/データ"
    assert (h.gemini / "history" / "project" / ".project_root").read_text() == f"{new}/my app/データ"
    assert _registry(h).get(f"{new}/my app/データ") == "project"
    if lost:
        drop_mark(folder)
    back()
    second = undo(h, folder.name)
    assert second.state == "undone", second.skips
    assert tree(h.gemini) == before, changed(before, tree(h.gemini))


def test_gemini_move_kept_project_keeps_its_other_marker_and_registry_key(tmp_path):
    """The registry and the markers a move re-keyed are one unit (tools/gemini/move.py ``_unit_id``): with
    one marker changed since, its project's other marker and registry key stay as the move left them."""
    h, before, new, folder = _gemini_moved(tmp_path)
    _spoil_marker(h)
    assert undo(h).state == "partly-undone"
    assert _registry(h).get(f"{new}/app") == "app", _registry(h)
    assert (h.gemini / "history" / "app" / ".project_root").read_text() == f"{new}/app"
