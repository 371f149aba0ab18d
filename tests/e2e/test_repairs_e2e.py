"""Issue 12 case 8 against the real Codex: a `doctor --repair` of the naive flip script's state lasts
when Codex rebuilds its databases from the rollouts (state_5.sqlite deleted, startup backfill)."""
from __future__ import annotations

import sqlite3

import pytest


from .clients import CUSTOM_PROVIDER, carried, codex_setup, run_codex, write_codex_config
from .test_doctor_e2e import histmig, naive_flipped

pytestmark = pytest.mark.e2e




def _rebuild(codex_home) -> None:
    """What a reset database amounts to: Codex re-extracts every row from the files at startup."""
    for name in ("state_5.sqlite", "thread_history_1.sqlite"):
        for suffix in ("", "-wal", "-shm"):
            (codex_home / (name + suffix)).unlink(missing_ok=True)


def test_case8_repair_survives_a_codex_database_rebuild(clients, scratch, fake_api):
    proj = naive_flipped(clients, scratch, fake_api)
    fixed = histmig(scratch, "doctor", "--tool", "codex", "--repair", "--apply")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    _rebuild(scratch.codex_home)

    after = run_codex(clients, scratch, fake_api, "after the rebuild", proj, resume="last").check()
    [req] = after.model_requests("responses")
    assert req.provider == CUSTOM_PROVIDER and req.status == 200
    assert carried(req, "made-under-openai")
    con = sqlite3.connect(scratch.codex_home / "state_5.sqlite")
    try:
        assert {p for (p,) in con.execute("SELECT model_provider FROM threads")} == {CUSTOM_PROVIDER}
    finally:
        con.close()


def test_case8_a_row_only_repair_breaks_again_after_the_rebuild(clients, scratch, fake_api):
    """The repair as it was before (rows and offsets only: the split check ignored) is undone by the
    rebuild: the thread_settings_applied line still says openai."""
    proj = naive_flipped(clients, scratch, fake_api)
    fixed = histmig(scratch, "doctor", "--tool", "codex", "--repair", "--apply",
                    "--ignore", "codex.rollout-provider-split")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    _rebuild(scratch.codex_home)
    failed = run_codex(clients, scratch, fake_api, "after the rebuild", proj, resume="last")
    assert failed.returncode != 0
    assert "Cannot change this thread's model provider from `openai`" in failed.stdout + failed.stderr


def test_case8_move_of_a_renamed_home_makes_codex_find_the_rollout(clients, scratch, fake_api, tmp_path):
    """The whole tree (HOME with its .codex, and the project) renamed: without re-pointing
    threads.rollout_path, `codex exec resume <id>` fails with "no rollout found for thread id"."""
    import json as _json

    from .clients import Scratch
    codex_setup(clients, scratch, fake_api)
    run_codex(clients, scratch, fake_api, "made-in-the-old-home", scratch.project("app")).check()
    thread = _thread_id(scratch.codex_home)
    moved = Scratch(tmp_path / "renamed")
    scratch.root.rename(moved.root)
    write_codex_config(moved, fake_api)            # the config names the fake API only: no paths
    lost = run_codex(clients, moved, fake_api, "before histmig move", moved.project("app"), resume=thread)
    assert lost.returncode != 0 and "no rollout found for thread id" in lost.stdout + lost.stderr

    res = histmig(moved, "move", str(scratch.root), str(moved.root), "--apply")
    assert res.returncode == 0, res.stdout + res.stderr
    doctor = histmig(moved, "doctor", "--tool", "codex", "--json")
    assert _json.loads(doctor.stdout)["tools"]["codex"] == [], doctor.stdout
    for resume in (thread, "last"):
        after = run_codex(clients, moved, fake_api, f"after move ({resume})", moved.project("app"), resume=resume).check()
        [req] = after.model_requests("responses")
        assert carried(req, "made-in-the-old-home")


def _thread_id(codex_home) -> str:
    con = sqlite3.connect(codex_home / "state_5.sqlite")
    try:
        [(tid,)] = con.execute("SELECT id FROM threads").fetchall()
        return tid
    finally:
        con.close()


def test_case8_symlinked_project_claude_records_the_target_and_move_follows(clients, scratch, fake_api):
    """Claude started in a symlink records the target's path. `move LINK NEWLINK` before the rename
    is refused (nothing written); after `mv LINK NEWLINK` it has nothing to do, and `claude -c` in
    NEWLINK continues the session."""
    from histmig.core.paths import claude_slug

    from .clients import claude_setup, claude_transcripts, run_claude
    claude_setup(scratch)
    real = scratch.project("real", "app")
    link = scratch.root / "work" / "link"
    link.symlink_to(real)
    run_claude(clients, scratch, fake_api, "RUN: echo made-through-the-link", link).check()
    [t] = claude_transcripts(scratch)
    assert t.parent.name == claude_slug(str(real))           # the realpath, not the link

    newlink = scratch.root / "work" / "newlink"
    refused = histmig(scratch, "move", str(link), str(newlink), "--apply")
    assert refused.returncode == 1 and "no move is needed" in refused.stderr
    link.rename(newlink)
    res = histmig(scratch, "move", str(link), str(newlink), "--apply")
    assert res.returncode == 0 and "nothing to do" in res.stdout, res.stdout + res.stderr
    after = run_claude(clients, scratch, fake_api, "after renaming the link", newlink, continue_=True).check()
    [req] = after.model_requests()
    assert carried(req, "made-through-the-link")
    assert claude_transcripts(scratch) == [t]                 # continued, not a new session
