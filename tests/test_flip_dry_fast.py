"""The fast dry run of ``histmig flip`` gives exactly what the slower code paths gave.

Speed work replaced: the os.walk + Path listing of rollouts (now os.scandir + str paths), the
64 KB-chunked line-1 reader (now one 32 KB os.read, growing), and the planned row updates of the
dry run (now counted with one query). Each test compares the new path with the old one, kept here
verbatim as the reference, on trees with every case the census reports.
"""
from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from histmig.core.diagnostics import HistmigInputError
from histmig.tools.codex import lines
from histmig.tools.codex import walk
from histmig.tools import resolve_homes
from histmig.verbs.flip import plan_flip

from clirun import histmig
from codex_fixtures import home_with, rollout, tid, write_rollout

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "histmig" / "samples" / "codex"


# ---- the old implementations, as references ------------------------------------------------

def old_walk_rollouts(root: Path, *, newest_first: bool = True):
    if not root.is_dir():
        return
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort(reverse=newest_first)
        for name in sorted(filenames, reverse=newest_first):
            if name.startswith("rollout-") and (name.endswith(".jsonl") or name.endswith(".jsonl.zst")):
                yield Path(dirpath) / name


def old_rollout_files(codex_home: Path, *, archived: bool = True, newest_first: bool = True):
    """The os.walk + Path listing, both roots at any depth (archived_sessions/<subfolder> included
    since the walker of tools/codex/walk.py decided so; flat before)."""
    roots = [(codex_home / "sessions", False)]
    if archived:
        roots.append((codex_home / "archived_sessions", True))
    for root, is_archived in roots:
        for path in old_walk_rollouts(root, newest_first=newest_first):
            if path.name.endswith(".zst"):
                if path.with_name(path.name[:-4]).exists():
                    continue
                yield str(path), is_archived, None
            else:
                zst = path.with_name(path.name + ".zst")
                # a dangling plain file does not shadow its .zst (walk.py); it used to name it
                yield str(path), is_archived, str(zst) if zst.exists() and path.exists() else None


def old_first_line(path: Path, *, limit: int = 64 * 1024 * 1024) -> bytes:
    """The first line as the stream reader reads it, 64 KB at a time (what ``first_line`` read for
    every file before its fd path; it still reads a ``.zst`` so): the oracle of the fast path."""
    return lines._first_line_stream(path, limit)


def outcome(fn, *args, **kw):
    try:
        return ("ok", fn(*args, **kw))
    except HistmigInputError as e:
        return ("error", str(e), e.path)


# ---- listing -------------------------------------------------------------------------------

def awkward_tree(codex_home: Path) -> None:
    """Every shape the listing must get right."""
    s = codex_home / "sessions"
    for d in ("2026/11/29", "2026/11/30", "2025/01/02/deeper"):
        (s / d).mkdir(parents=True)
    for name in ("rollout-2026-11-29T10-00-00-a.jsonl", "rollout-2026-11-29T10-00-00-b.jsonl",
                 "rollout-2026-11-29T10-00-00-b.jsonl.zst", "rollout-2026-11-29T10-00-00-c.jsonl.zst",
                 "notes.jsonl", "rollout-x.json"):
        (s / "2026/11/29" / name).write_bytes(b"{}\n")
    (s / "2026/11/30/rollout-2026-11-30T10-00-00-d.jsonl.zst").write_bytes(b"")
    (s / "2026/11/30/rollout-2026-11-30T10-00-00-d.jsonl").mkdir()          # a folder, not a file
    (s / "2026/11/30/rollout-2026-11-30T10-00-00-e.jsonl.zst").write_bytes(b"")
    (s / "2026/11/30/rollout-2026-11-30T10-00-00-e.jsonl").symlink_to(s / "missing")   # dangling
    (s / "2025/01/02/deeper/rollout-2025-01-02T10-00-00-f.jsonl").write_bytes(b"{}\n")
    (s / "rollout-2024-01-01T00-00-00-top.jsonl").write_bytes(b"{}\n")               # at the root
    (s / "linked").symlink_to(s / "2025")                                             # not entered
    a = codex_home / "archived_sessions"
    (a / "sub").mkdir(parents=True)
    (a / "rollout-2026-11-28T10-00-00-g.jsonl").write_bytes(b"{}\n")
    (a / "rollout-2026-11-28T10-00-00-h.jsonl.zst").write_bytes(b"")
    (a / "sub" / "rollout-2026-11-28T10-00-00-i.jsonl").write_bytes(b"{}\n")          # listed, archived


@pytest.mark.parametrize("newest_first", [True, False])
@pytest.mark.parametrize("archived", [True, False])
def test_rollout_listing_matches_the_os_walk_listing_in_order(tmp_path, archived, newest_first):
    home = tmp_path / ".codex"
    awkward_tree(home)
    old = list(old_rollout_files(home, archived=archived, newest_first=newest_first))
    assert list(walk.rollouts(home, archived=archived, newest_first=newest_first)) == old
    assert list(walk.rollouts(str(home), archived=archived, newest_first=newest_first)) == old
    assert len(old) == (10 if archived else 7)       # the fixture really has what it claims
    assert list(walk.rollouts(tmp_path / "nope")) == []


# ---- line 1 --------------------------------------------------------------------------------

K = 1024
LINE_LENGTHS = [0, 1, 100, 32 * K - 1, 32 * K, 32 * K + 1, 64 * K - 1, 64 * K, 64 * K + 1, 96 * K, 128 * K + 5, 200 * K]


@pytest.mark.parametrize("limit", [10, 40 * K, 64 * K, 100 * K, 128 * K, 64 * 1024 * 1024])
def test_first_line_matches_the_chunked_reader_for_every_length_and_limit(tmp_path, limit):
    for n in LINE_LENGTHS:
        for tail in (b"\n" + b"x" * 50 + b"\n", b""):         # a terminated line, and one without newline
            path = tmp_path / f"rollout-{n}-{len(tail)}.jsonl"
            path.write_bytes(b"a" * n + tail)
            assert outcome(lines.first_line, path, limit=limit) == outcome(old_first_line, path, limit=limit), (n, tail)
            assert outcome(lines.first_line, str(path), limit=limit) == outcome(old_first_line, path, limit=limit)


def test_first_line_refuses_what_the_stream_reader_refuses(tmp_path):
    target = tmp_path / "real.jsonl"
    target.write_bytes(b"{}\n")
    link = tmp_path / "rollout-link.jsonl"
    link.symlink_to(target)
    folder = tmp_path / "rollout-dir.jsonl"
    folder.mkdir()
    for path in (link, folder, tmp_path / "missing.jsonl"):
        got = outcome(lines.first_line, path)
        assert got[0] == "error" and got == outcome(old_first_line, path)


def test_head_obj_strips_bom_and_crlf_like_before_and_names_broken_lines(tmp_path):
    meta = orjson.dumps({"type": "session_meta", "payload": {"id": "x", "model_provider": "p"}})
    cases = {"bom.jsonl": b"\xef\xbb\xbf" + meta + b"\r\n", "crlf.jsonl": meta + b"\r\r\n",
             "broken.jsonl": meta[:-5] + b"\n", "dup.jsonl": b'{"a":1,"a":2}\n', "bomonly.jsonl": b"\xef\xbb\xbf\n"}
    for name, data in cases.items():
        path = tmp_path / name
        path.write_bytes(data + b'{"next":1}\n')
        body = old_first_line(path).rstrip(b"\r\n").removeprefix(b"\xef\xbb\xbf")
        try:
            expected = orjson.loads(body)
        except orjson.JSONDecodeError:
            expected = None
        obj, meta_obj, err = lines.head_obj(path)
        assert obj == expected, name
        assert (err is not None and err.startswith("line 1 unreadable")) == (expected is None), name
    assert lines.head_obj(tmp_path / "bom.jsonl")[1] == {"id": "x", "model_provider": "p"}


# ---- the dry run: counted rows == planned rows -----------------------------------------------

def homes(tmp_path):
    return resolve_homes(codex_home=tmp_path / ".codex", env={"HOME": str(tmp_path)})


def edge_home(tmp_path) -> Path:
    """Broken line 1, pre-envelope, shadowed .zst, archived, a fork, no recorded provider, rows
    that are stale, missing, NULL or already NEW, and a second state DB."""
    home = tmp_path / ".codex"
    sessions = {tid(i): rollout(tid(i)) for i in range(1, 6)}
    sessions[tid(6)] = rollout(tid(6), "zz")
    sessions[tid(7)] = rollout(tid(7), omit_provider=True, paginated=False)
    parent = sessions[tid(1)]
    base = {"thread_id": tid(1), "end_ordinal_exclusive": 5, "end_byte_offset": parent.index(b"\n") + 1 + 100}
    sessions[tid(8)] = rollout(tid(8), "zz", meta_more={"history_base": base})
    home_with(home, sessions, archived={tid(2)}, compressed={tid(3)},
              provider_rows={tid(6): "zz", tid(8): "zz", tid(4): "my-provider"})
    write_rollout(home, tid(5), sessions[tid(5)], compressed=True)            # shadowed by the plain one
    broken = write_rollout(home, tid(9), rollout(tid(9)))
    broken.write_bytes(broken.read_bytes()[:200] + b"\n")
    legacy = home / "sessions/2025/08/11/rollout-2025-08-11T16-19-51-5973b6c0-94b8-487b-a530-2aeb6098ae0e.jsonl"
    legacy.parent.mkdir(parents=True)
    legacy.write_bytes(b'{"id":"5973b6c0-94b8-487b-a530-2aeb6098ae0e","timestamp":"2025-08-11T16:19:51.140Z"}\n')
    con = sqlite3.connect(home / "state_5.sqlite")
    con.execute("DELETE FROM threads WHERE id = ?", (tid(7),))                 # no row
    con.execute("INSERT INTO threads (id, rollout_path, model_provider) VALUES (?, 'x', 'openai')", (tid(99),))
    con.commit()
    con.close()
    second = home / "sqlite"
    second.mkdir()
    shutil.copy(home / "state_5.sqlite", second / "state_5.sqlite")
    con = sqlite3.connect(second / "state_5.sqlite")
    con.execute("DELETE FROM threads WHERE id = ?", (tid(1),))
    con.commit()
    con.close()
    return home


def assert_counted_equals_planned(h, old, new, **kw):
    full = plan_flip(h, old, new, exact=False, **kw)
    counted = plan_flip(h, old, new, exact=False, counts_only=True, **kw)
    assert counted.summary == full.summary
    assert counted.warnings == full.warnings and counted.skips == full.skips
    assert len(counted.operations) + counted.summary["state_rows"] == len(full.operations)
    return full


@pytest.mark.parametrize("kw", [{}, {"archived": False}, {"set_config": True, "strip_encrypted": True}])
def test_counted_dry_run_equals_the_planned_one_on_every_edge_case(tmp_path, kw):
    edge_home(tmp_path)
    h = homes(tmp_path)
    full = assert_counted_equals_planned(h, "openai", "my-provider", **kw)
    codes = {w.code for w in full.warnings} | {s.code for s in full.skips}
    assert {"zst-shadowed", "row-not-flipped", "no-state-row", "unreadable", "pre-envelope"} <= codes
    assert full.summary["assumed_provider"] == 1 and full.summary["state_rows"] >= 5
    assert_counted_equals_planned(h, "zz", "openai", **kw)


def test_counted_dry_run_handles_a_threads_table_without_the_provider_column(tmp_path):
    home = tmp_path / ".codex"
    home_with(home, {tid(1): rollout(tid(1))})
    con = sqlite3.connect(home / "state_5.sqlite")
    con.executescript("CREATE TABLE t2 AS SELECT id, rollout_path FROM threads; DROP TABLE threads;"
                      "ALTER TABLE t2 RENAME TO threads;")
    con.close()
    full = assert_counted_equals_planned(homes(tmp_path), "openai", "my-provider")
    assert full.summary["state_rows"] == 0 and full.summary["sessions"] == 1


@pytest.mark.parametrize("sample", sorted(p.name for p in SAMPLES.iterdir()) if SAMPLES.is_dir() else [])
def test_counted_dry_run_equals_the_planned_one_on_the_real_client_samples(tmp_path, sample):
    shutil.copytree(SAMPLES / sample, tmp_path / ".codex")
    full = assert_counted_equals_planned(homes(tmp_path), "openai", "my-provider")
    assert full.summary["sessions"] >= 1


def test_counted_dry_run_equals_the_planned_one_on_a_generated_history(tmp_path):
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        from gen_codex import generate
    finally:
        sys.path.remove(str(ROOT / "bench"))
    stats = generate(tmp_path, 60, 3)
    full = assert_counted_equals_planned(homes(tmp_path), "openai", "my-provider")
    assert full.summary["sessions"] == stats["openai"]


def test_cli_json_dry_run_reports_the_planned_operation_count(tmp_path):
    home = edge_home(tmp_path)
    (home / "config.toml").write_text('[model_providers.my-provider]\nname = "mine"\n')   # else refused (case 7)
    full = plan_flip(homes(tmp_path), "openai", "my-provider", exact=False, set_config=True)
    r = histmig("--codex-home", home, "flip", "openai", "my-provider", "--set-config", "--json")
    assert r.exit_code == 3, r.stderr
    out = orjson.loads(r.stdout)["plan"]
    assert out["operations"] == len(full.operations) and out["summary"] == orjson.loads(orjson.dumps(full.summary))
    assert [s["path"] for s in out["skips"]] == [s.path for s in full.skips]


# ---- imports -------------------------------------------------------------------------------

def test_a_dry_run_does_not_import_the_apply_machinery(tmp_path):
    """The dry run is benchmarked against `find | head -qn1`; apply's modules cost ~17 ms."""
    home = tmp_path / ".codex"
    home_with(home, {tid(1): rollout(tid(1))})
    probe = ("import sys\nfrom histmig.cli.common import run_guarded\nfrom histmig.cli import cli\n"
             "code = run_guarded(cli, ['--codex-home', sys.argv[1], 'flip', 'openai', 'my-provider', '--force'])\n"
             "print(sorted(m for m in sys.modules if m.split('.')[:2] in (['histmig', 'apply'], ['histmig', 'journal'],"
             " ['histmig', 'fsio'], ['histmig', 'model']) or m == 'histmig.cli.tx'), code)\n")
    env = dict(os.environ, HOME=str(tmp_path), CODEX_HOME=str(home))
    out = subprocess.run([sys.executable, "-c", probe, str(home)], capture_output=True, text=True, env=env,
                         cwd=tmp_path, check=True).stdout
    assert "would flip 1 session" in out
    loaded = out.strip().splitlines()[-1]
    assert loaded.startswith("[") and "histmig.apply" not in loaded and "histmig.apply.journal" not in loaded \
        and "histmig.cli.tx'" not in loaded, loaded
