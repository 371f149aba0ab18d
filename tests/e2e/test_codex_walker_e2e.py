"""A rollout in a subfolder of ``archived_sessions/`` is an archived thread to the real Codex 0.171.0, so
histmig's one walker (histmig/tools/codex/walk.py) lists it: flip, move, scan and doctor see it.

Codex's look-up by thread id walks ``archived_sessions/`` recursively (docs/specs/codex.md §1):
``codex unarchive`` finds the nested file and brings it back to ``sessions/YYYY/MM/DD/``. A flip
that left it out would leave that thread under the old provider.
"""
from __future__ import annotations

import json

import pytest

from .clients import (CUSTOM_PROVIDER, carried, client_env, codex_session_id, codex_setup, run, run_codex,
                      write_codex_config)
from .histmig_run import codex_rows, histmig, ok, shown

pytestmark = pytest.mark.e2e


def test_codex_unarchives_a_rollout_from_an_archived_subfolder_and_histmig_flipped_it(clients, scratch, fake_api):
    codex_setup(clients, scratch, fake_api, provider="openai")
    app = scratch.project("app")
    env = client_env(scratch, fake_api)
    codex_cmd = lambda *a: run([str(clients.codex), *a], cwd=scratch.home, env=env, api=fake_api).check()  # noqa: E731
    tid = codex_session_id(run_codex(clients, scratch, fake_api, "RUN: echo nested-earlier", app).check())
    codex_cmd("archive", tid)
    [flat] = (scratch.codex_home / "archived_sessions").glob(f"rollout-*{tid}.jsonl")
    nested = flat.parent / "kept" / flat.name              # put away in a subfolder by the user
    nested.parent.mkdir()
    flat.rename(nested)

    # doctor finds the moved file (its row still names the flat path) and re-points the row at it
    report = json.loads(ok(histmig(scratch, "doctor", "--tool", "codex", "--json"), 1).stdout)
    assert "codex.db-rollout-missing" in {f["code"] for f in report["tools"]["codex"]}, report
    ok(histmig(scratch, "doctor", "--tool", "codex", "--repair", "--apply"))
    assert codex_rows(scratch.codex_home)["threads"][tid]["rollout_path"] == str(nested)

    listed = json.loads(ok(histmig(scratch, "scan", "--json", "--tool", "codex")).stdout)["sessions"]
    assert [(s["path"], s["archived"]) for s in listed] == [(str(nested), True)]
    write_codex_config(scratch, fake_api, CUSTOM_PROVIDER)
    flipped = ok(histmig(scratch, "flip", "openai", CUSTOM_PROVIDER, "--apply", "--strip-encrypted"))
    assert b'"model_provider":"my-provider"' in nested.read_bytes(), shown(flipped)

    codex_cmd("unarchive", tid)                            # Codex finds it by id in the subfolder
    assert not nested.exists()
    [back] = (scratch.codex_home / "sessions").glob(f"*/*/*/rollout-*{tid}.jsonl")
    assert codex_rows(scratch.codex_home)["threads"][tid]["provider"] == CUSTOM_PROVIDER
    resumed = run_codex(clients, scratch, fake_api, "after unarchive", app, resume="last").check()
    reqs = resumed.model_requests()
    assert reqs and all(e.status == 200 for e in reqs), [(e.status, e.error) for e in reqs]
    assert any(carried(e, "nested-earlier") for e in reqs), back
