"""Issue #5 acceptance with the real Codex 0.171.0 against the loopback fake API.

A session recorded under ``openai`` (tool call + reasoning whose ``encrypted_content`` the fake API
binds to the issuing provider), config switched to ``my-provider``; after ``histmig flip`` the
session resumes with its earlier turns in the request; undo restores bytes, mtimes and rows.
"""
from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from .clients import client_env, codex_session_id, codex_setup, run, run_codex, write_codex_config

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[2]


def histmig(scratch, *args: str) -> subprocess.CompletedProcess:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(scratch.home),
           "CODEX_HOME": str(scratch.codex_home), "HISTMIG_STATE_DIR": str(scratch.root / "histmig-state"),
           "LANG": "C.UTF-8"}
    return subprocess.run([sys.executable, "-m", "histmig", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)


def snapshot(codex_home: Path) -> dict:
    out = {}
    rollouts = [*codex_home.glob("sessions/**/rollout-*"), *codex_home.glob("archived_sessions/rollout-*")]
    for p in sorted(rollouts):
        st = p.stat()
        out[str(p.relative_to(codex_home))] = (p.read_bytes(), st.st_mtime_ns)
    return out


def rows(codex_home: Path) -> list:
    con = sqlite3.connect(codex_home / "state_5.sqlite")
    h = sqlite3.connect(codex_home / "thread_history_1.sqlite")
    try:
        return [con.execute("SELECT id, model_provider FROM threads ORDER BY id").fetchall(),
                h.execute("SELECT thread_id, turn_id, rollout_byte_offset, rollout_end_byte_offset "
                          "FROM thread_turns ORDER BY 1, 2").fetchall(),
                h.execute("SELECT thread_id, next_rollout_byte_offset FROM thread_history_projection_state").fetchall()]
    finally:
        con.close()
        h.close()


def record_under_openai(clients, scratch, api):
    codex_setup(clients, scratch, api, provider="openai")
    project = scratch.project("app")
    first = run_codex(clients, scratch, api, "RUN: echo flip-marker-7", project,
                      args=("--disable", "responses_websockets")).check()
    write_codex_config(scratch, api, provider="my-provider")
    return project, codex_session_id(first)


def resume(clients, scratch, api, project):
    return run_codex(clients, scratch, api, "Second question after the flip", project, resume="last",
                     args=("--disable", "responses_websockets"))


def carried_history(run, marker: str) -> bool:
    reqs = [e for e in run.model_requests("responses") if e.provider == "my-provider"]
    return bool(reqs) and any(marker in str(e.body) for e in reqs)


def test_without_flip_resume_last_under_the_new_provider_starts_empty(clients, fake_api, scratch):
    project, _ = record_under_openai(clients, scratch, fake_api)
    run = resume(clients, scratch, fake_api, project)
    assert not carried_history(run, "flip-marker-7")


def _compress(scratch):
    """Replace the rollout by ``.jsonl.zst`` the way Codex's compressor does (level 3, same mtime)."""
    import zstandard
    [f] = list(scratch.codex_home.glob("sessions/**/rollout-*.jsonl"))
    st = f.stat()
    z = f.with_name(f.name + ".zst")
    z.write_bytes(zstandard.ZstdCompressor(level=3, write_content_size=True).compress(f.read_bytes()))
    os.utime(z, ns=(st.st_atime_ns, st.st_mtime_ns))
    f.unlink()


def _codex(clients, scratch, api, *args: str):
    """Run a Codex subcommand (``archive`` / ``unarchive``) with the harness environment."""
    return run([str(clients.codex), *args], cwd=scratch.home, env=client_env(scratch, api), api=api).check()


@pytest.mark.parametrize("kind", ["plain", "zst", "archived"])
def test_flip_with_strip_encrypted_resumes_with_the_earlier_turns(clients, fake_api, scratch, kind):
    project, thread_id = record_under_openai(clients, scratch, fake_api)
    if kind == "zst":
        _compress(scratch)
    if kind == "archived":   # Codex's own archive command: file to archived_sessions/, threads.archived=1
        write_codex_config(scratch, fake_api, provider="openai")
        _codex(clients, scratch, fake_api, "archive", thread_id)
        write_codex_config(scratch, fake_api, provider="my-provider")
        assert list(scratch.codex_home.glob("archived_sessions/rollout-*.jsonl"))
    done = histmig(scratch, "flip", "openai", "my-provider", "--apply", "--strip-encrypted")
    assert done.returncode == 0, done.stderr
    assert ("1 compressed" if kind == "zst" else "0 compressed") in done.stdout
    assert ("1 archived" if kind == "archived" else "0 archived") in done.stdout
    if kind == "archived":   # made visible again by Codex's own unarchive, under the new provider
        _codex(clients, scratch, fake_api, "unarchive", thread_id)
        assert not list(scratch.codex_home.glob("archived_sessions/rollout-*.jsonl"))
    run = resume(clients, scratch, fake_api, project)
    assert run.returncode == 0, run.stderr[-3000:]
    assert carried_history(run, "flip-marker-7")
    assert rows(scratch.codex_home)[0] == [(thread_id, "my-provider")]


def test_flip_apply_then_undo_restores_bytes_mtimes_and_rows(clients, fake_api, scratch):
    record_under_openai(clients, scratch, fake_api)
    before, rows_before = snapshot(scratch.codex_home), rows(scratch.codex_home)
    done = histmig(scratch, "flip", "openai", "my-provider", "--apply")
    assert done.returncode == 0, done.stderr
    assert snapshot(scratch.codex_home) != before and rows(scratch.codex_home) != rows_before
    undo = histmig(scratch, "undo")
    assert undo.returncode == 0, undo.stderr
    assert snapshot(scratch.codex_home) == before and rows(scratch.codex_home) == rows_before


def test_flip_without_strip_reaches_the_new_provider_which_rejects_foreign_reasoning(clients, fake_api, scratch):
    """The binding is real: the flipped session is found and resumed, and the request carries the
    history, but the new backend refuses the old backend's encrypted reasoning (what the
    ``encrypted-content-bound`` warning predicts)."""
    project, _ = record_under_openai(clients, scratch, fake_api)
    done = histmig(scratch, "flip", "openai", "my-provider", "--apply")
    assert "encrypted-content-bound" in done.stderr
    run = resume(clients, scratch, fake_api, project)
    reqs = [e for e in run.model_requests("responses") if e.provider == "my-provider"]
    assert reqs and any("flip-marker-7" in str(e.body) for e in reqs)
    assert any(e.status == 400 and "invalid_encrypted_content" in (e.error or "") for e in reqs)


def test_same_length_padded_flip_is_accepted_by_codex(clients, fake_api, scratch):
    """A shorter id is padded with spaces inside the old value's span (line length and inode kept,
    no offset changes); Codex 0.171.0 parses the padded lines and resumes the session."""
    codex_setup(clients, scratch, fake_api, provider="openai")
    project = scratch.project("app")
    run_codex(clients, scratch, fake_api, "Say hello", project, args=("--disable", "responses_websockets")).check()
    cfg = scratch.codex_home / "config.toml"
    cfg.write_text('model_provider = "ab"\n' + cfg.read_text() + "\n[model_providers.ab]\nname = \"AB\"\n"
                   f'base_url = "{fake_api.responses_base("ab")}"\nwire_api = "responses"\nenv_key = "MYKEY"\n')
    [f] = list(scratch.codex_home.glob("sessions/**/rollout-*.jsonl"))
    st, offsets = f.stat(), rows(scratch.codex_home)[1:]
    done = histmig(scratch, "flip", "openai", "ab", "--apply")
    assert done.returncode == 0, done.stderr
    assert f.stat().st_ino == st.st_ino and f.stat().st_size == st.st_size
    assert b'"model_provider":"ab"    ,' in f.read_bytes() and rows(scratch.codex_home)[1:] == offsets
    run = run_codex(clients, scratch, fake_api, "Again", project, resume="last",
                    args=("--disable", "responses_websockets"))
    assert run.returncode == 0, run.stderr[-3000:]
    reqs = [e for e in run.model_requests("responses") if e.provider == "ab"]
    assert reqs and any("Say hello" in str(e.body) for e in reqs)


def test_a_flip_done_without_strip_is_fixed_by_stripping_in_place(clients, fake_api, scratch):
    """``flip X X --strip-encrypted`` after a flip without it: the provider stays, the old backend's
    encrypted reasoning goes, and the session resumes under the new backend with its history."""
    project, thread_id = record_under_openai(clients, scratch, fake_api)
    assert histmig(scratch, "flip", "openai", "my-provider", "--apply").returncode == 0
    refused = histmig(scratch, "flip", "my-provider", "my-provider", "--apply")
    assert refused.returncode == 2 and "add --strip-encrypted" in refused.stderr
    done = histmig(scratch, "flip", "my-provider", "my-provider", "--apply", "--strip-encrypted")
    assert done.returncode == 0, done.stderr
    assert "stripping encrypted items in 1 session" in done.stdout and "encrypted-stripped" in done.stderr
    run = resume(clients, scratch, fake_api, project)
    assert run.returncode == 0, run.stderr[-3000:]
    assert carried_history(run, "flip-marker-7")
    reqs = [e for e in run.model_requests("responses") if e.provider == "my-provider"]
    assert not any("invalid_encrypted_content" in (e.error or "") for e in reqs)
    assert rows(scratch.codex_home)[0] == [(thread_id, "my-provider")]
