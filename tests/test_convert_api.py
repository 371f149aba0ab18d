"""histmig.api: one function per verb, each loading its verb only when called; convert's batching and
--strict are the library's (the CLI only renders what it is handed)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from histmig import api
from histmig.verbs.convert import ConvertOptions
from histmig.verbs.convert.batches import plan_convert
from histmig.verbs.convert import batches

from convert_fixtures import CODEX_ID, claude_lines, homes, proj, write_claude, write_codex  # noqa: F401 (fixtures)


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


def _odd_rollouts(homes, proj) -> list:
    """A good rollout and the files whose outcome the listing decides: empty, line 1 not a
    session_meta, line 1 a session_meta only to a lenient reader (a duplicate key), an id not a string."""
    good = write_codex(homes.codex, proj)
    lines = good.read_bytes().splitlines(keepends=True)
    odd = {"e": b"", "f": b"".join(lines[1:]), "a": lines[0].replace(b'"session_meta"', b'"session_meta","x":1,"x":2', 1)
           + b"".join(lines[1:]), "b": lines[0].replace(CODEX_ID.encode(), b"5", 1).replace(b'"5"', b"5")
           + b"".join(lines[1:])}
    made = [good]
    for k, data in odd.items():
        made.append(good.parent / f"rollout-2026-06-05T04-58-2{len(made)}-019e9625-802f-7e91-840a-00000000000{k}.jsonl")
        made[-1].write_bytes(data)
    return made


def test_without_cwd_each_codex_session_is_read_once_and_listed_where_the_listing_decides(homes, proj, monkeypatch):
    """--all / --from without --cwd: the rollouts are taken as found (nothing listed) and read once when
    converted; only a file whose outcome the listing decides is listed too, so every outcome is the
    listed run's."""
    from histmig.tools.codex import listread
    from histmig.verbs.convert import select
    made = _odd_rollouts(homes, proj)
    listed = list(select.discover(homes, ["codex"]))
    assert len(listed) == len(made) == 5
    opts = ConvertOptions("claude-code", seed=1)
    want = [o.to_dict() for o in plan_convert(homes, listed, opts)[1]]
    seen, real = [], listread.read
    monkeypatch.setattr(listread, "read", lambda path, *a, **k: seen.append(path) or real(path, *a, **k))
    refs = api.convert_sessions(homes, "claude-code", from_tool="codex")
    assert [r.path for r in refs] == [r.path for r in listed] and not seen
    got = [o.to_dict() for o in plan_convert(homes, refs, opts)[1]]
    assert got == want
    assert sorted(Path(p).name[-7:-6] for p in seen) == ["a", "e", "f"]      # not the good one, nor the id 5
    assert sorted((o["status"], o.get("reason")) for o in got) == [
        ("convert", None), ("convert", None), ("skip", "empty file"), ("skip", "invalid session id"),
        ("skip", "no session_meta at the start of the file")]


def test_without_cwd_each_claude_session_is_read_once_and_listed_where_the_listing_decides(homes, proj, monkeypatch):
    from histmig.tools.claude_code import listing
    from histmig.verbs.convert import select
    write_claude(homes.claude, proj)
    bare = [{k: v for k, v in rec.items() if k != "cwd"} for rec in claude_lines(proj)]
    broken = write_claude(homes.claude, proj, "4a7770b4-aba3-46dd-b677-8fc2d71d4e06", bare)
    with broken.open("ab") as f:       # its only cwd in a broken line: the listing's reader finds it
        f.write(b'{"type":"user","cwd":"' + proj.encode() + b'", broken\n')
    listed = list(select.discover(homes, ["claude-code"]))
    opts = ConvertOptions("codex", seed=1, now=1_780_000_000.0)   # uuid7 ids: a fixed clock
    want = [o.to_dict() for o in plan_convert(homes, listed, opts)[1]]
    seen, real = [], listing.ref_for
    monkeypatch.setattr(listing, "ref_for", lambda path, *a, **k: seen.append(path) or real(path, *a, **k))
    refs = api.convert_sessions(homes, "codex", all_=True)
    assert [r.path for r in refs] == [r.path for r in listed] and len(refs) == 2 and not seen
    got = [o.to_dict() for o in plan_convert(homes, refs, opts)[1]]
    assert got == want and [o["status"] for o in got] == ["convert", "convert"]
    assert [Path(p) for p in seen] == [broken]
