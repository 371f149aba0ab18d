"""``flip X X --strip-encrypted``: strip encrypted reasoning in place, no provider change (issue 14,
"Help and messages"). Without ``--strip-encrypted`` OLD == NEW stays a usage error that says how."""
from __future__ import annotations

import orjson
import pytest
from clirun import histmig
from codex_fixtures import home_with, rollout, tid
from test_flip import _rows, _snapshot, content, homes, providers_in, row_provider

from histmig.core.diagnostics import UsageError
from histmig.core.plan import SqlUpdate, WriteFile
from histmig.tools.codex import state as codex_state
from histmig.verbs.flip import plan_flip, tail_transform


def _home(tmp_path):
    """tid(1), tid(3) (no recorded provider: Codex's default, openai) carry encrypted reasoning;
    tid(2) has none; tid(4) is another provider's."""
    sessions = {tid(1): rollout(tid(1)), tid(2): rollout(tid(2), turns=0), tid(3): rollout(tid(3), omit_provider=True),
                tid(4): rollout(tid(4), "zz")}
    return home_with(tmp_path / ".codex", sessions, provider_rows={tid(4): "zz"}, compressed={tid(3)}), sessions


def test_same_provider_without_strip_is_a_usage_error_that_says_how():
    with pytest.raises(UsageError, match="add --strip-encrypted to strip"):
        plan_flip(None, "openai", "openai")


def test_strip_in_place_plans_only_the_strips_and_no_provider_change(tmp_path):
    paths, sessions = _home(tmp_path)
    plan = plan_flip(homes(tmp_path), "openai", "openai", strip_encrypted=True, exact=False)
    s = plan.summary
    assert s["strip_only"] and s["sessions"] == 2 and s["provider_sessions"] == 3 and plan.args["exact"]
    writes = [o for o in plan.operations if isinstance(o, WriteFile)]
    assert sorted(o.path for o in writes) == sorted(str(paths[t]) for t in (tid(1), tid(3)))
    assert not [o for o in plan.operations if isinstance(o, SqlUpdate) and o.table == "threads"]
    assert {w.code for w in plan.warnings} == {"encrypted-stripped"}
    from test_flip import execute
    execute(plan)
    for t in (tid(1), tid(3)):
        after = content(paths[t])
        assert b"gAAAA" not in after and b"histmig_stripped_reasoning" in after
        assert providers_in(after, t) == providers_in(sessions[t], t)     # the provider values untouched
        assert len(after.splitlines()) == len(sessions[t].splitlines())
    assert b'"model_provider"' not in content(paths[tid(3)]).splitlines()[0]   # nothing inserted either
    assert codex_state.offsets_for(homes(tmp_path), tid(1))["next"] == len(content(paths[tid(1)]))
    assert paths[tid(2)].read_bytes() == sessions[tid(2)] and paths[tid(4)].read_bytes() == sessions[tid(4)]
    again = plan_flip(homes(tmp_path), "openai", "openai", strip_encrypted=True)
    assert again.operations == [] and again.summary["sessions"] == 0 and again.summary["provider_sessions"] == 3


def test_appended_lines_are_stripped_without_a_provider_edit():
    from types import SimpleNamespace
    line = rollout(tid(1)).splitlines(keepends=True)
    reasoning = next(x for x in line if b'"encrypted_content"' in x)
    meta = line[0]
    edit = tail_transform({"old": "openai", "new": "openai", "strip_encrypted": True})
    op = SimpleNamespace(session={"tool": "codex", "id": tid(1)}, paths=lambda: ["/x/rollout.jsonl"])
    out = edit(op, meta + reasoning)
    assert out.startswith(meta) and b"histmig_stripped_reasoning" in out and b"gAAAA" not in out
    assert orjson.loads(out.splitlines()[1])["payload"]["encrypted_content"] is None


def test_cli_strip_in_place_apply_and_undo_restore_every_byte(tmp_path):
    paths, _ = _home(tmp_path)
    codex_home = tmp_path / ".codex"
    before, rows_before = _snapshot(codex_home), _rows(codex_home)
    base = ["--codex-home", codex_home, "--state-dir", tmp_path / "state"]
    refused = histmig(*base, "flip", "openai", "openai")
    assert refused.exit_code == 2 and "add --strip-encrypted to strip" in refused.stderr
    dry = histmig(*base, "flip", "openai", "openai", "--strip-encrypted")
    assert dry.exit_code == 0, dry.stderr
    assert "would strip encrypted items in 2 sessions (1 compressed, 0 archived) of 3 recorded under 'openai'" \
        in dry.stdout and "state db" not in dry.stdout and "config-provider-differs" not in dry.stderr
    assert _snapshot(codex_home) == before
    done = histmig(*base, "flip", "openai", "openai", "--strip-encrypted", "--apply")
    assert done.exit_code == 0, done.stderr
    assert "stripping encrypted items in 2 sessions" in done.stdout
    assert b"gAAAA" not in paths[tid(1)].read_bytes() and row_provider(codex_home / "state_5.sqlite", tid(1)) == "openai"
    assert _rows(codex_home)[0] == rows_before[0]                   # the threads rows never changed
    undone = histmig(*base, "undo")
    assert undone.exit_code == 0, undone.stderr
    assert _snapshot(codex_home) == before and _rows(codex_home) == rows_before
