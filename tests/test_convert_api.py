"""histmig.api: one function per verb, each loading its verb only when called; convert's batching and
--strict are the library's (the CLI only renders what it is handed)."""
from __future__ import annotations

import subprocess
import sys

import pytest

from histmig import api
from histmig.verbs.convert import ConvertOptions
from histmig.verbs.convert.batches import plan_convert
from histmig.verbs.convert import batches

from convert_fixtures import homes, proj, write_claude, write_codex  # noqa: F401 (fixtures)


def test_importing_the_api_loads_no_verb_and_no_tool():
    probe = "import sys, histmig.api\nprint(sorted(m for m in sys.modules if m.startswith('histmig')))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['histmig', 'histmig.api']", out


def test_one_function_per_verb():
    for name in ("scan", "show", "find", "plan_flip", "plan_move", "convert_sessions", "plan_convert", "convert",
                 "diagnose", "plan_repair", "apply", "load_plan", "undo", "recover", "transactions", "gc"):
        assert callable(getattr(api, name)), name
    assert api.ConvertOptions is ConvertOptions and issubclass(api.LossyError, Exception)
    with pytest.raises(AttributeError):
        _ = api.no_such_thing


def test_a_streamed_dry_run_sums_up_like_the_whole_plan(homes, proj):
    write_codex(homes.codex, proj)
    write_claude(homes.claude, proj)
    refs = api.convert_sessions(homes, "mini-cc", all_=True)
    seen = []
    done = api.convert(homes, refs, ConvertOptions("mini-cc", seed=1), on_outcome=seen.append)
    whole, outcomes = plan_convert(homes, refs, ConvertOptions("mini-cc", seed=1))
    assert done.total.summary == whole.summary and done.total.operations == []
    assert [o.to_dict() for o in seen] == [o.to_dict() for o in outcomes]
    assert done.exit_code == 0 and done.transactions == []
    assert not list(homes.mini_cc.rglob("*.jsonl"))         # a dry run writes nothing


def test_an_apply_runs_in_batches_each_its_own_transaction(homes, proj, monkeypatch):
    write_codex(homes.codex, proj)
    write_claude(homes.claude, proj)
    monkeypatch.setattr(batches, "BATCH_BYTES", 1)         # every session fills a batch
    refs = api.convert_sessions(homes, "mini-cc", all_=True)
    done = api.convert(homes, refs, ConvertOptions("mini-cc"), apply=True)
    assert done.total.summary["converted"] == 2 and len(done.transactions) == 2
    assert len({t["txid"] for t in done.transactions}) == 2
    assert len(list(homes.mini_cc.rglob("*.jsonl"))) >= 2


def test_strict_is_the_library_s(homes, proj):
    write_codex(homes.codex, proj)
    refs = api.convert_sessions(homes, "claude-code", from_tool="codex")
    with pytest.raises(api.LossyError, match="--strict: 1 conversion") as e:
        api.refuse_lossy(homes, refs, ConvertOptions("claude-code"))
    assert [o.source_id for o in e.value.lossy] == [refs[0].id]


@pytest.mark.parametrize("kw, msg", [({}, "name sessions"), ({"cwd": "/x", "sessions": ["x"]}, "--cwd needs"),
                                     ({"sessions": ["x"], "all_": True, "from_tool": "claude-code"}, "do not mix")])
def test_choosing_sessions_refuses_what_does_not_mix(homes, kw, msg):
    from histmig.core.diagnostics import UsageError
    with pytest.raises(UsageError, match=msg):
        api.convert_sessions(homes, "codex", **kw)


def test_without_cwd_each_codex_session_is_read_once_with_the_listing_s_skips(homes, proj, monkeypatch):
    """--all / --from without --cwd: the rollouts are taken as found (nothing listed), read once when
    converted, and a file the listing would flag is skipped for the listing's reason."""
    from histmig.tools.codex import listread
    from histmig.verbs.convert import select
    good = write_codex(homes.codex, proj)
    (good.parent / "rollout-2026-06-05T04-58-21-019e9625-802f-7e91-840a-00000000000e.jsonl").write_bytes(b"")
    not_meta = good.parent / "rollout-2026-06-05T04-58-22-019e9625-802f-7e91-840a-00000000000f.jsonl"
    not_meta.write_bytes(b"".join(good.read_bytes().splitlines(keepends=True)[1:]))
    listed = list(select.discover(homes, ["codex"]))
    opts = ConvertOptions("claude-code", seed=1)
    want = [o.to_dict() for o in plan_convert(homes, listed, opts)[1]]
    monkeypatch.setattr(listread, "read", lambda *a, **k: pytest.fail("listed"))
    refs = api.convert_sessions(homes, "claude-code", from_tool="codex")
    assert [r.path for r in refs] == [r.path for r in listed]
    got = [o.to_dict() for o in plan_convert(homes, refs, opts)[1]]
    assert got == want
    assert sorted(o["reason"] for o in got if o["status"] == "skip") == [
        "empty file", "no session_meta at the start of the file"]


def test_without_cwd_each_claude_session_is_read_once(homes, proj, monkeypatch):
    from histmig.tools.claude_code import listing
    from histmig.verbs.convert import select
    write_claude(homes.claude, proj)
    listed = list(select.discover(homes, ["claude-code"]))
    opts = ConvertOptions("codex", seed=1, now=1_780_000_000.0)   # uuid7 ids: a fixed clock
    want = [o.to_dict() for o in plan_convert(homes, listed, opts)[1]]
    monkeypatch.setattr(listing, "ref_for", lambda *a, **k: pytest.fail("listed"))
    refs = api.convert_sessions(homes, "codex", all_=True)
    assert [r.path for r in refs] == [r.path for r in listed] and len(refs) == 1
    assert [o.to_dict() for o in plan_convert(homes, refs, opts)[1]] == want
