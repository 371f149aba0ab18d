"""Hostile and broken input for the six newer tools (Pi, Qwen Code, Gemini CLI, OpenCode, Copilot CLI,
Cline): each case is a real recorded sample with one thing broken, run through the CLI in-process
(docs/specs safety §6: a named file, never a traceback, nothing written outside the roots)."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from histmig.cli import samples
from histmig.tools import resolve_homes, tool as tool_row
from tests.clirun import histmig

SAMPLES = Path(samples.__file__).resolve().parents[1] / "samples"


def install(tool: str, case: str = "plain") -> Path:
    """One sample case of ``tool`` copied into its (isolated) home; returns that home."""
    home = Path(tool_row(tool).home(resolve_homes()))
    shutil.copytree(SAMPLES / tool / case, home, dirs_exist_ok=True)
    return home


def only(home: Path, pattern: str) -> Path:
    (path,) = home.glob(pattern)
    return path


def no_traceback(*args: str):
    """Run the CLI; an unexpected exception propagates out of ``run_guarded`` and fails the test."""
    r = histmig(*args)
    assert "Traceback" not in r.stderr
    return r


# ---- Cline: whole-file JSON read by the stdlib parser on its fallback path ----------------------------

CLINE_MESSAGES = "data/sessions/*/*.messages.json"
READS = [("show", "{path}"), ("show", "{path}", "--format", "native"), ("show", "{path}", "--format", "json"),
         ("search", "hello", "--tools"), ("export", "--all", "--to", "html", "--out", "{out}"),
         ("export", "--all", "--to", "atif", "--out", "{out}"), ("doctor", "--tool", "{tool}"),
         ("convert", "--to", "claude-code", "--from", "{tool}", "--all", "--apply", "--include-active")]


def run_reads(tool: str, path: Path, out: Path) -> list:
    return [no_traceback(*(a.format(path=path, out=out, tool=tool) for a in cmd)) for cmd in READS]


def test_cline_deeply_nested_messages_file_is_named_not_a_traceback(tmp_path):
    path = only(install("cline"), CLINE_MESSAGES)
    path.write_text('{"messages":' + "[" * 100000)
    r = no_traceback("show", str(path))
    assert r.exit_code == 1 and str(path) in r.stderr and "recursion" in r.stderr
    run_reads("cline", path, tmp_path / "out")


def test_cline_lone_surrogate_message_is_an_opaque_record(tmp_path):
    """``"\\ud800"`` parses with ``json`` but cannot be encoded: that message is set aside as a JSONL line
    holding one is (``invalid UTF-8``), the others read, and the file's bytes stay the same."""
    path = only(install("cline"), CLINE_MESSAGES)
    path.write_bytes(path.read_bytes().replace(b"FAKE-ANSWER", b"FAKE-\\ud800ANSWER"))
    before = path.read_bytes()
    results = run_reads("cline", path, tmp_path / "out")
    assert results[0].exit_code == 0 and "Say hello" in results[0].stdout
    assert "lone surrogate" in results[1].stdout
    assert path.read_bytes() == before


def test_cline_corrupt_timestamp_is_no_time():
    from histmig.tools.cline.adapter import iso
    assert iso(1e300) is None and iso(float("nan")) is None and iso(10 ** 400) is None


# ---- Gemini CLI ---------------------------------------------------------------------------------------

GEMINI_CHAT = "tmp/*/chats/*.jsonl"


@pytest.mark.parametrize("old, new", [(b'"messages":[', b'"messages":7,"x":['),
                                      (b'"thoughts":[]', b'"thoughts":7'),
                                      (b'"content":[{"text":"Say hello', b'"content":7,"x":[{"text":"Say hello')])
def test_gemini_wrongly_typed_lists_are_read_as_empty(tmp_path, old, new):
    path = only(install("gemini"), GEMINI_CHAT)
    assert old in path.read_bytes()
    path.write_bytes(path.read_bytes().replace(old, new))
    assert no_traceback("scan").exit_code == 0
    for r in run_reads("gemini", path, tmp_path / "out"):
        assert r.exit_code in (0, 1, 3)


@pytest.mark.timeout(60)
def test_gemini_fifo_project_marker_does_not_hang():
    home = install("gemini")
    marker = only(home, "tmp/*/.project_root")
    marker.unlink()
    os.mkfifo(marker)
    assert no_traceback("scan").exit_code == 0
    assert no_traceback("move", "/tmp/histmig-rec/work/app", "/tmp/histmig-rec/work/b", "--tool", "gemini").exit_code == 0


@pytest.mark.parametrize("registry", ["[" * 100000, '{"projects": {"/a": "app",', '{"projects": ["/x", 3]}'])
def test_gemini_move_with_unusable_projects_json_warns_and_keeps_it(registry):
    home = install("gemini")
    (home / "projects.json").write_text(registry)
    r = no_traceback("move", "/tmp/histmig-rec/work/app", "/tmp/histmig-rec/work/b", "--tool", "gemini",
                     "--apply", "--include-active")
    assert r.exit_code == 0 and "unparseable-file" in r.stderr and str(home / "projects.json") in r.stderr
    assert (home / "projects.json").read_text() == registry
    assert only(home, "tmp/*/.project_root").read_text() == "/tmp/histmig-rec/work/b"


# ---- Qwen Code ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("sid", ["../../../../escape", "a/b", "abc\\u0000def", "x" * 5000])
def test_qwen_doctor_never_suggests_a_rename_to_a_content_id_that_is_not_a_uuid(sid):
    path = only(install("qwen"), "projects/*/chats/*.jsonl")
    path.write_bytes(path.read_bytes().replace(path.stem.encode(), sid.encode()))
    r = no_traceback("doctor", "--tool", "qwen")
    assert r.exit_code == 1 and "qwen.id-mismatch" in r.stdout and "nothing safe to rename to" in r.stdout
    assert "mv " + str(path) not in r.stdout


# ---- OpenCode -----------------------------------------------------------------------------------------

def _db_symlinked_out(tmp_path) -> tuple[Path, bytes]:
    """The OpenCode database moved outside every home, a symlink to it left in the home."""
    db = install("opencode", "resumed") / "opencode.db"
    outside = tmp_path / "outside" / "opencode.db"
    outside.parent.mkdir()
    db.rename(outside)
    db.symlink_to(outside)
    return outside, outside.read_bytes()


@pytest.mark.parametrize("argv", [
    ("move", "/tmp/histmig-rec-opencode/work/app", "/tmp/histmig-rec-opencode/work/b", "--tool", "opencode"),
    ("convert", "--to", "opencode", "--from", "claude-code", "--all")])
def test_opencode_database_symlinked_outside_the_homes_is_not_written(tmp_path, argv):
    outside, before = _db_symlinked_out(tmp_path)
    install("claude-code")
    r = no_traceback(*argv, "--apply", "--include-active")
    assert r.exit_code == 3 and "symlink to outside the roots" in r.stderr
    assert outside.read_bytes() == before and not list(outside.parent.glob("*-wal"))


def _corrupt(db: Path, how: str) -> None:
    if how == "garbage":
        db.write_bytes(b"\x13\x37" * 4096)
    elif how == "text":
        db.write_text("this is not a database\n")
    elif how == "truncated":
        db.write_bytes(db.read_bytes()[:len(db.read_bytes()) // 3])


@pytest.mark.parametrize("how", ["garbage", "text", "truncated"])
def test_opencode_unreadable_database_is_named_by_scan_doctor_move_and_convert(how):
    """It used to pass for "no database": scan and doctor said nothing, convert said "run opencode once"."""
    db = install("opencode", "resumed") / "opencode.db"
    _corrupt(db, how)
    install("claude-code")
    before = db.read_bytes()
    assert "unreadable" in no_traceback("scan", "--tool", "opencode").stdout
    r = no_traceback("doctor", "--tool", "opencode")
    assert r.exit_code == 1 and "opencode.unreadable" in r.stdout
    r = no_traceback("move", "/tmp/histmig-rec-opencode/work/app", "/tmp/x", "--tool", "opencode", "--apply")
    assert "db-unreadable" in r.stderr and str(db) in r.stderr
    r = no_traceback("convert", "--to", "opencode", "--from", "claude-code", "--all", "--apply")
    assert r.exit_code == 3 and "cannot be read" in r.stderr and "run opencode once" not in r.stderr
    assert db.read_bytes() == before


def _rows(db: Path, *sql: tuple) -> None:
    import sqlite3
    con = sqlite3.connect(db)
    for stmt, args in sql:
        con.execute(stmt, args)
    con.commit()
    con.close()


FIRST = "(SELECT min(rowid) FROM {})"


@pytest.mark.parametrize("sql", [
    [("UPDATE part SET data = ? WHERE rowid = " + FIRST.format("part"), ("[" * 100000,)),
     ("UPDATE message SET data = ? WHERE rowid = " + FIRST.format("message"), ('{"a":' * 50000,))],
    [("UPDATE session SET time_updated = ?, time_created = ?", (1e300, float("inf")))],
    [("UPDATE session SET directory = ?, title = ?", (b"/tmp/\xff\xfe", b"\xff")),
     ("UPDATE part SET data = ? WHERE rowid = " + FIRST.format("part"), (b'{"type":"text","text":"\xff"}',))],
], ids=["deep-json", "time-out-of-range", "blob-cells"])
def test_opencode_hostile_rows_read_without_traceback(tmp_path, sql):
    db = install("opencode", "resumed") / "opencode.db"
    _rows(db, *sql)
    sid = no_traceback("scan", "--tool", "opencode", "--json")
    assert sid.exit_code == 0
    for cmd in READS:
        args = [a.format(path="ses_dcde07d8", out=tmp_path / "out", tool="opencode") for a in cmd]
        assert no_traceback(*args).exit_code in (0, 1, 3)


# ---- move: a recorded cwd under OLD that must not become a folder -------------------------------------

def _set_cwd(tool: str, home: Path, bad: str) -> str:
    """Point the sample's session at ``bad`` (a path under its cwd) where ``tool`` records the cwd;
    returns the sample's cwd (OLD)."""
    import json
    old = {"pi": "/tmp/histmig-rec-pi/work/app"}.get(tool, "/tmp/histmig-rec/work/app")
    files = {"pi": "sessions/*/*.jsonl", "qwen": "projects/*/chats/*.jsonl", "cline": "data/sessions/*/*.json",
             "copilot": "session-state/*/workspace.yaml", "gemini": "*/app/.project_root"}[tool]
    for path in home.glob(files):
        enc = json.dumps(old) if tool != "gemini" else old
        new = json.dumps(old + bad) if tool != "gemini" else old + bad
        if tool == "copilot":
            enc, new = "cwd: " + old, "cwd: " + old + bad
        path.write_text(path.read_text().replace(enc, new))
    if tool == "gemini":
        (home / "projects.json").write_text(json.dumps({"projects": {old + bad: "app"}}))
    return old


@pytest.mark.parametrize("tool", ["pi", "qwen", "gemini", "copilot", "cline"])
@pytest.mark.parametrize("bad", ["/../../../../../escape", "/" + "L" * 5000])
def test_move_refuses_a_recorded_cwd_that_would_be_unusable_under_new(tmp_path, tool, bad):
    home = install(tool)
    old = _set_cwd(tool, home, bad)
    before = {p: p.read_bytes() for p in home.rglob("*") if p.is_file()}
    r = no_traceback("move", old, str(tmp_path / "new"), "--tool", tool, "--apply", "--include-active")
    assert r.exit_code == 3 and "skip: " in r.stderr
    assert {p: p.read_bytes() for p in home.rglob("*") if p.is_file()} == before
    assert not (tmp_path / "new").exists() and not (tmp_path / "escape").exists()


@pytest.mark.parametrize("tool", ["pi", "qwen"])
def test_move_skips_a_session_whose_new_folder_name_would_be_too_long(tmp_path, tool):
    """A 300-byte cwd is a valid path, but Pi's and Qwen's folder name for it is over 255 bytes: that
    session is skipped (exit 3), not the whole move failing with ENAMETOOLONG (exit 1)."""
    home = install(tool)
    old = _set_cwd(tool, home, "/" + "M" * 300)
    r = no_traceback("move", old, str(tmp_path / "new"), "--tool", tool, "--apply", "--include-active")
    assert r.exit_code == 3 and "over 255 bytes" in r.stderr


def test_opencode_move_refuses_a_dotdot_directory(tmp_path):
    db = install("opencode", "resumed") / "opencode.db"
    _rows(db, ("UPDATE session SET directory = directory || '/../../../escape'", ()))
    before = db.read_bytes()
    r = no_traceback("move", "/tmp/histmig-rec-opencode/work/app", str(tmp_path / "new"), "--tool", "opencode",
                     "--apply")
    assert r.exit_code == 3 and "'..' component" in r.stderr and db.read_bytes() == before


# ---- FIFOs named like the small files the readers open whole ------------------------------------------

@pytest.mark.timeout(120)
@pytest.mark.parametrize("tool, pattern", [("pi", "settings.json"), ("copilot", "session-state/*/workspace.yaml"),
                                           ("cline", "data/sessions/*/*_?????.json"), ("gemini", "settings.json"),
                                           ("gemini", "projects.json"), ("gemini", "history/*/.project_root")])
def test_a_fifo_named_like_a_small_file_never_blocks(tmp_path, tool, pattern):
    home = install(tool)
    path = home / pattern if "*" not in pattern else only(home, pattern)
    path.unlink(missing_ok=True)
    os.mkfifo(path)
    for args in [("scan",), ("doctor", "--tool", tool), ("search", "hello"),
                 ("export", "--all", "--to", "markdown", "--out", str(tmp_path / "md")),
                 ("move", "/tmp/histmig-rec/work/app", str(tmp_path / "new"), "--tool", tool, "--apply"),
                 ("convert", "--to", "claude-code", "--from", tool, "--all")]:
        assert no_traceback(*args).exit_code in (0, 1, 3)


def test_read_regular_refuses_a_fifo_and_a_file_over_its_limit(tmp_path):
    from histmig.core.diagnostics import HistmigInputError
    from histmig.jsonio.regular import read_regular
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "big").write_bytes(b"x" * 100)
    with pytest.raises(HistmigInputError, match="not a regular file"):
        read_regular(tmp_path / "fifo")
    with pytest.raises(HistmigInputError, match="over 99 bytes"):
        read_regular(tmp_path / "big", 99)
    assert read_regular(tmp_path / "big", 100) == b"x" * 100


@pytest.mark.parametrize("json_out", [(), ("--json",)])
def test_export_all_skips_an_unreadable_opencode_database_and_exports_the_rest(tmp_path, json_out):
    """Named with exit 3; before, the unreadable database stopped the whole export (exit 1)."""
    _corrupt(install("opencode", "resumed") / "opencode.db", "garbage")
    install("claude-code")
    r = no_traceback("export", "--all", "--to", "html", "--out", str(tmp_path / "out"), *json_out)
    assert r.exit_code == 3 and "opencode.db" in (r.stdout + r.stderr)
    assert list((tmp_path / "out" / "claude-code").glob("*.html"))


def test_pi_session_whose_header_has_a_duplicate_cwd_key_is_named_not_left_silently(tmp_path):
    """safety §6: a duplicate target key skips the file. Pi's header is the line a move edits: with
    two ``cwd`` keys the session cannot be edited safely; it stays, and the move names it (before: it
    was left behind without a word, to vanish from the project's listing after the ``mv``)."""
    home = install("pi")
    old = _set_cwd("pi", home, "")
    path = next(p for p in home.rglob("*.jsonl") if old.encode() in p.read_bytes().split(b"\n", 1)[0])
    head, rest = path.read_bytes().split(b"\n", 1)
    enc = b'"cwd":"' + old.encode() + b'"'
    path.write_bytes(head.replace(enc, enc + b"," + enc, 1) + b"\n" + rest)
    r = no_traceback("move", old, str(tmp_path / "new"), "--tool", "pi", "--apply", "--include-active")
    assert r.exit_code == 3 and f"skip: {path}: line 1: duplicate key 'cwd'" in r.stderr
    assert path.read_bytes().split(b"\n", 1)[0].count(enc) == 2
