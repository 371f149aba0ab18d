"""The one Codex rollout walker (histmig/tools/codex/walk.py) and the four verbs that list through it.

The rules are tested on the walker; the ``archived_sessions/<subfolder>`` decision (listed, archived:
docs/formats.md "Which Codex files are rollouts") is tested in scan, flip, move and doctor, which
must all see the same rollouts.
"""
from __future__ import annotations

import builtins
import io
import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from histmig.cli import cli
from histmig.tools import resolve_homes
from histmig.core.plan import WriteFile
from histmig.tools.codex import doctor_data, walk
from histmig.verbs.doctor import diagnose
from histmig.verbs.flip import plan_flip
from histmig.verbs.move import plan_move

from codex_fixtures import rollout, state_db, tid

STAMP = "rollout-2026-11-29T10-00-00-"


def touch(path: Path, data: bytes = b"{}\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def names(home: Path, **kw) -> list[tuple[str, bool, str | None]]:
    """The walk as ``(path relative to the home, archived, shadowed name)``."""
    return [(os.path.relpath(p, home), a, os.path.basename(z) if z else None) for p, a, z in walk.rollouts(home, **kw)]


@pytest.fixture
def home(tmp_path):
    return tmp_path / ".codex"


# ---- the walker's rules ---------------------------------------------------------------------

def test_both_roots_are_walked_at_any_depth_and_archived_is_the_root(home):
    for rel in ("sessions/2026/11/29/rollout-a.jsonl", "sessions/odd/deep/rollout-b.jsonl",
                "archived_sessions/rollout-c.jsonl", "archived_sessions/sub/rollout-d.jsonl",
                "archived_sessions/sub/deeper/rollout-e.jsonl.zst"):
        touch(home / rel)
    assert sorted(names(home)) == [
        ("archived_sessions/rollout-c.jsonl", True, None),
        ("archived_sessions/sub/deeper/rollout-e.jsonl.zst", True, None),
        ("archived_sessions/sub/rollout-d.jsonl", True, None),
        ("sessions/2026/11/29/rollout-a.jsonl", False, None),
        ("sessions/odd/deep/rollout-b.jsonl", False, None)]
    assert all(not a for _p, a, _z in walk.rollouts(home, archived=False))
    assert len(list(walk.rollouts(home, archived=False))) == 2


def test_only_rollout_files_count_and_symlinked_folders_are_not_entered(home):
    day = home / "sessions/2026/11/29"
    touch(day / "rollout-a.jsonl")
    for other in ("notes.jsonl", "rollout-x.json", "rollout-y.jsonl.gz", "xrollout-z.jsonl"):
        touch(day / other)
    (day / "rollout-folder.jsonl").mkdir()                       # a folder is not a rollout
    touch(home / "elsewhere/rollout-far.jsonl")
    (home / "sessions/linked").symlink_to(home / "elsewhere")     # not entered
    (day / "rollout-link.jsonl").symlink_to(day / "rollout-a.jsonl")   # yielded: the verb decides
    assert names(home) == [("sessions/2026/11/29/rollout-link.jsonl", False, None),
                                          ("sessions/2026/11/29/rollout-a.jsonl", False, None)]


def test_a_zst_beside_its_existing_plain_twin_comes_with_it(home):
    day = home / "sessions/2026/11/29"
    for n in ("a.jsonl", "a.jsonl.zst", "lone.jsonl.zst", "dir.jsonl.zst", "dangling.jsonl.zst"):
        touch(day / f"rollout-{n}")
    (day / "rollout-dir.jsonl").mkdir()                          # exists (Codex's Path::exists): shadows
    (day / "rollout-dangling.jsonl").symlink_to(day / "missing")   # does not exist: no shadow
    assert names(home, newest_first=False) == [
        ("sessions/2026/11/29/rollout-a.jsonl", False, "rollout-a.jsonl.zst"),
        ("sessions/2026/11/29/rollout-dangling.jsonl", False, None),
        ("sessions/2026/11/29/rollout-dangling.jsonl.zst", False, None),
        ("sessions/2026/11/29/rollout-lone.jsonl.zst", False, None)]


def test_order_is_stable_newest_first_or_oldest_first_files_before_subfolders(home):
    for rel in ("sessions/2026/11/29/rollout-2.jsonl", "sessions/2026/11/29/rollout-1.jsonl",
                "sessions/2026/11/30/rollout-3.jsonl", "sessions/2025/01/01/rollout-0.jsonl",
                "archived_sessions/rollout-9.jsonl", "archived_sessions/sub/rollout-8.jsonl",
                "archived_sessions/rollout-7.jsonl"):
        touch(home / rel)
    newest = [os.path.basename(p) for p, _a, _z in walk.rollouts(home)]
    oldest = [os.path.basename(p) for p, _a, _z in walk.rollouts(home, newest_first=False)]
    assert newest == [f"rollout-{n}.jsonl" for n in (3, 2, 1, 0, 9, 7, 8)]
    assert oldest == [f"rollout-{n}.jsonl" for n in (0, 1, 2, 3, 7, 9, 8)]
    assert [os.path.basename(p) for p, _a, _z in walk.rollouts(str(home))] == newest   # str or Path, same walk


def test_the_walk_reads_no_file_contents(home, monkeypatch):
    touch(home / "sessions/2026/11/29/rollout-a.jsonl")
    touch(home / "sessions/2026/11/29/rollout-a.jsonl.zst")
    touch(home / "archived_sessions/sub/rollout-b.jsonl")

    def refuse(*a, **kw):
        raise AssertionError("the walker opened a file")
    for mod, name in ((builtins, "open"), (io, "open"), (os, "open")):
        monkeypatch.setattr(mod, name, refuse)
    assert len(list(walk.rollouts(home))) == 2


def test_a_missing_home_or_an_unreadable_folder_gives_nothing_from_there(home):
    assert list(walk.rollouts(home)) == []
    touch(home / "sessions/2026/11/29/rollout-a.jsonl")
    locked = home / "sessions/2026/11/30"
    touch(locked / "rollout-b.jsonl")
    locked.chmod(0)
    try:
        found = names(home)
    finally:
        locked.chmod(0o755)
    if os.geteuid() != 0:                                           # root reads it anyway
        assert found == [("sessions/2026/11/29/rollout-a.jsonl", False, None)]


# ---- archived_sessions/<subfolder> in scan, flip, move and doctor --------------------------

def sub_home(tmp_path, old: str) -> tuple[object, dict[str, str]]:
    """One rollout in sessions/, one flat in archived_sessions/, one in archived_sessions/old/
    (the case decided in walk.py), all recorded under provider ``openai`` in ``old``; a state
    database with a row for the first two only."""
    h = resolve_homes()
    paths = {tid(1): h.codex / f"sessions/2026/11/29/{STAMP}{tid(1)}.jsonl",
             tid(2): h.codex / f"archived_sessions/{STAMP}{tid(2)}.jsonl",
             tid(3): h.codex / f"archived_sessions/old/{STAMP}{tid(3)}.jsonl"}
    for t, p in paths.items():
        touch(p, rollout(t, "openai", cwd=old))
    state_db(h.codex / "state_5.sqlite", [{"id": t, "rollout_path": str(paths[t]), "model_provider": "openai",
                                           "cwd": old, "archived": int(t == tid(2))} for t in (tid(1), tid(2))])
    return h, {t: str(p) for t, p in paths.items()}


def file_ops(plan) -> set[str]:
    return {op.path for op in plan.operations if isinstance(op, WriteFile)}


def test_a_rollout_in_an_archived_subfolder_is_seen_by_all_four_verbs_as_archived(tmp_path):
    old, new = str(tmp_path / "W/app"), str(tmp_path / "W/app2")
    (tmp_path / "W/app2").mkdir(parents=True)
    h, paths = sub_home(tmp_path, old)
    everything, nested = set(paths.values()), paths[tid(3)]

    result = CliRunner().invoke(cli, ["scan", "--json"], catch_exceptions=False)          # scan lists it
    listed = {s["path"]: s["archived"] for s in json.loads(result.stdout)["sessions"] if s["tool"] == "codex"}
    assert set(listed) == everything and listed[nested] is True

    flip = plan_flip(h, "openai", "my-provider")                                            # flip plans it
    assert file_ops(flip) == everything and flip.summary["sessions"] == 3 and not flip.skips
    assert plan_flip(h, "openai", "my-provider", exact=False).summary["sessions"] == 3      # its dry run too
    assert file_ops(plan_flip(h, "openai", "my-provider", archived=False)) == {paths[tid(1)]}

    assert file_ops(plan_move(h, old, new, tools=["codex"])) == everything                  # move rewrites it

    seen = doctor_data.load(h)                                                              # doctor reads it
    assert {str(r.path): r.archived for r in seen.rollouts} == {p: p != paths[tid(1)] for p in everything}
    report = diagnose(h, tools=["codex"])                                                   # and reports it
    no_row = [f for f in report.findings if f.code == "codex.rollout-no-row"]
    assert [f.data["ids"] for f in no_row] == [[tid(3)]]


def test_every_verb_lists_the_walkers_rollouts_in_a_mixed_tree(tmp_path):
    """The same set, whatever the shape: deep sessions/ folders, a compressed one, a shadowed .zst,
    archived flat and nested."""
    old = str(tmp_path / "W/app")
    h, paths = sub_home(tmp_path, old)
    deep = h.codex / f"sessions/odd/place/{STAMP}{tid(4)}.jsonl"
    touch(deep, rollout(tid(4), "openai", cwd=old))
    touch(Path(paths[tid(1)] + ".zst"), b"shadowed, never read")
    walked = {p for p, _a, _z in walk.rollouts(h.codex)}
    assert walked == set(paths.values()) | {str(deep)}
    result = CliRunner().invoke(cli, ["scan", "--json"], catch_exceptions=False)
    assert {s["path"] for s in json.loads(result.stdout)["sessions"] if s["tool"] == "codex"} == walked
    assert file_ops(plan_flip(h, "openai", "my-provider")) == walked
    (tmp_path / "W/app2").mkdir(parents=True)
    assert file_ops(plan_move(h, old, str(tmp_path / "W/app2"), tools=["codex"])) == walked
    assert {str(r.path) for r in doctor_data.load(h).rollouts} == walked
