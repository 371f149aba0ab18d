"""Issue 19 acceptance with the real Codex and Claude Code (tests/e2e/versions.py) against the fake API:
sessions recorded under home A with projects under ``A/code``; ``pack --all``; ``unpack --rehome
A/code=B/code --apply`` into an empty home B: both clients list and continue every session from the
re-homed project folders with the earlier turns in the request. Unpacked into a home C with its own
history, C's files are untouched and ``undo`` removes exactly what was imported. A bundle with one
byte changed is refused before anything is written (docs/pack.md)."""
from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest

from .clients import Scratch, carried, claude_setup, claude_transcripts, codex_session_id, codex_setup, run_claude, run_codex
from .histmig_run import histmig, shown

pytestmark = pytest.mark.e2e
CODEX_ARGS = ("--disable", "responses_websockets")
PROJECTS = ("app", "lib")


def code(scratch: Scratch, name: str) -> Path:
    p = scratch.root / "code" / name
    p.mkdir(parents=True, exist_ok=True)
    return p


def record(clients, api, scratch: Scratch, tag: str) -> dict[str, tuple[str, str, str]]:
    """One Codex and one Claude Code session per project; -> marker -> (tool, session id, project)."""
    codex_setup(clients, scratch, api)
    claude_setup(scratch)
    out = {}
    for name in PROJECTS:
        marker = f"codex-{tag}-{name}-marker"
        run = run_codex(clients, scratch, api, f"RUN: echo {marker}", code(scratch, name), args=CODEX_ARGS).check()
        out[marker] = ("codex", codex_session_id(run), name)
        marker = f"claude-{tag}-{name}-marker"
        run_claude(clients, scratch, api, f"RUN: echo {marker}", code(scratch, name)).check()
        newest = claude_transcripts(scratch)[-1]
        out[marker] = ("claude-code", newest.stem, name)
    return out


def snapshot(scratch: Scratch) -> dict[str, str]:
    """Every file of both homes (content); the databases are compared by rows (:func:`threads`), and the
    empty lock files Codex and the write path take are left out."""
    out = {}
    for root in (scratch.codex_home, scratch.claude_dir):
        for p in sorted(root.rglob("*")):
            if p.is_file() and not p.name.endswith(("-wal", "-shm", ".sqlite", ".lock")) and "log" not in p.parts:
                out[str(p)] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def threads(scratch: Scratch) -> dict[str, tuple]:
    with sqlite3.connect(scratch.codex_home / "state_5.sqlite") as con:
        return {r[0]: r for r in con.execute("SELECT * FROM threads")}


def turns(scratch: Scratch) -> dict[str, list[tuple]]:
    """thread id -> its thread_history_1.sqlite turn offsets (the paginated projection, docs/specs/codex.md §10)."""
    db = scratch.codex_home / "thread_history_1.sqlite"
    if not db.exists():
        return {}
    with sqlite3.connect(db) as con:
        out: dict[str, list[tuple]] = {}
        for r in con.execute("SELECT thread_id, rollout_byte_offset, rollout_end_byte_offset FROM thread_turns"):
            out.setdefault(r[0], []).append(r[1:])
        return out


def resumed(clients, api, scratch: Scratch, tool: str, sid: str, folder: Path, prompt: str):
    if tool == "codex":
        return run_codex(clients, scratch, api, prompt, folder, resume=sid, args=CODEX_ARGS).check()
    return run_claude(clients, scratch, api, prompt, folder, resume=sid).check()


def continued(clients, api, scratch: Scratch, tool: str, folder: Path, prompt: str):
    """The client's own listing: Codex's ``resume --last`` and Claude's ``-c`` pick the newest session of the folder."""
    if tool == "codex":
        return run_codex(clients, scratch, api, prompt, folder, resume="last", args=CODEX_ARGS).check()
    return run_claude(clients, scratch, api, prompt, folder, continue_=True).check()


def test_pack_then_unpack_into_an_empty_home_with_rehome(clients, fake_api, tmp_path):
    a = Scratch(tmp_path / "A").create()
    sessions = record(clients, fake_api, a, "a")
    bundle = tmp_path / "history.tar.zst"
    res = histmig(a, "pack", "--all", "-o", str(bundle))
    assert res.returncode == 0, shown(res)
    assert "packed 4 session(s)" in res.stdout, res.stdout

    b = Scratch(tmp_path / "B").create()
    codex_setup(clients, b, fake_api)
    claude_setup(b)
    for name in PROJECTS:
        code(b, name)
    rehome = f"{a.root / 'code'}={b.root / 'code'}"
    dry = histmig(b, "unpack", str(bundle), "--rehome", rehome)
    assert dry.returncode == 0 and "checksums verified" in dry.stdout, shown(dry)
    done = histmig(b, "unpack", str(bundle), "--rehome", rehome, "--apply")
    assert done.returncode == 0, shown(done)
    listed = histmig(b, "scan", "--cwd", str(b.root / "code"))
    assert listed.returncode == 0 and "4 sessions" in listed.stdout, shown(listed)

    for marker, (tool, sid, name) in sessions.items():
        run = resumed(clients, fake_api, b, tool, sid, b.root / "code" / name, f"in B, after {marker}")
        assert any(carried(r, marker) for r in run.model_requests()), (tool, sid, run.stderr[-2000:])
    for marker, (tool, _sid, name) in sessions.items():
        run = continued(clients, fake_api, b, tool, b.root / "code" / name, f"continue in B {name}")
        assert any(carried(r, f"in B, after {marker}") for r in run.model_requests()), (tool, name, run.stderr[-2000:])


def test_unpack_merges_into_a_home_with_history_and_undo_removes_it(clients, fake_api, tmp_path):
    a = Scratch(tmp_path / "A").create()
    sessions = record(clients, fake_api, a, "a")
    bundle = tmp_path / "history.tar.zst"
    assert histmig(a, "pack", "--all", "-o", str(bundle)).returncode == 0

    c = Scratch(tmp_path / "C").create()
    own = record(clients, fake_api, c, "c")              # C's own history, in C/code/app and C/code/lib
    before, rows = snapshot(c), threads(c)
    rehome = f"{a.root / 'code'}={c.root / 'code'}"
    done = histmig(c, "unpack", str(bundle), "--rehome", rehome, "--apply")
    assert done.returncode == 0, shown(done)
    after = snapshot(c)
    assert {k: after.get(k) for k in before} == before       # nothing of C's own touched
    assert len(after) > len(before)
    now = threads(c)
    assert {k: now[k] for k in rows} == rows and len(now) == len(rows) + 2     # the two Codex threads added
    packed_codex = {sid for tool, sid, _ in sessions.values() if tool == "codex"}
    projected = turns(c)
    for sid in packed_codex:          # the projection rows came along, pointing at line starts of the placed rollout
        assert projected.get(sid), (sid, sorted(projected))
        rollout = next((c.codex_home / "sessions").rglob(f"*{sid}.jsonl"))
        body = rollout.read_bytes()
        for start, end in projected[sid]:
            assert start and body[start - 1:start] == b"\n" and body[end - 1:end] == b"\n", (sid, start, end)
    undone = histmig(c, "undo")
    assert undone.returncode == 0, shown(undone)
    assert snapshot(c) == before and threads(c) == rows       # exactly what was imported is gone
    assert not packed_codex & set(turns(c))

    again = histmig(c, "unpack", str(bundle), "--rehome", rehome, "--apply")
    assert again.returncode == 0, shown(again)
    for marker, (tool, sid, name) in {**sessions, **own}.items():
        run = resumed(clients, fake_api, c, tool, sid, c.root / "code" / name, f"in C, after {marker}")
        assert any(carried(r, marker) for r in run.model_requests()), (tool, sid, run.stderr[-2000:])


def test_a_bundle_with_one_byte_changed_is_refused_before_anything_is_written(clients, fake_api, tmp_path):
    a = Scratch(tmp_path / "A").create()
    record(clients, fake_api, a, "a")
    bundle = tmp_path / "history.tar.zst"
    assert histmig(a, "pack", "--all", "-o", str(bundle)).returncode == 0
    raw = bytearray(bundle.read_bytes())
    raw[len(raw) // 3] ^= 0x01
    bundle.write_bytes(bytes(raw))
    b = Scratch(tmp_path / "B").create()
    before = snapshot(b)
    res = histmig(b, "unpack", str(bundle), "--rehome", f"{a.root / 'code'}={b.root / 'code'}", "--apply")
    assert res.returncode == 1 and str(bundle) in res.stderr and "nothing written" in res.stderr, shown(res)
    assert snapshot(b) == before
