"""histmig convert: each direction writes a correct new native session, reports its losses, is
idempotent, undoable, and refuses hostile input."""
from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path

import orjson
import pytest

from histmig import tools as registry
from histmig.tools.codex.adapter import parse_name
from histmig.tools import resolve_homes
from histmig.core.model import core
from histmig.verbs.convert import ConvertOptions
from histmig.verbs.convert.batches import plan_convert

from convert_fixtures import (cli, homes, proj, CLAUDE_ID, CODEX_ID, make_state_db, write_claude, write_codex,  # noqa: F401 (fixtures)
                              write_manifest, write_mini)

UUID_LEN = 36




def lines_of(path: str | Path) -> list[dict]:
    return [orjson.loads(x) for x in Path(path).read_bytes().splitlines()]


def refs_of(homes, tool):
    return list(registry.adapter(tool).discover(homes))


def created_paths(plan) -> list[str]:
    return [op.path for op in plan.operations if op.kind == "create"]


# ---- Codex -> Claude Code ----------------------------------------------------------------------

def test_codex_to_claude_writes_exact_envelope_chain_and_claude_tools(homes, proj):
    write_codex(homes.codex, proj)
    plan, outs = plan_convert(homes, refs_of(homes, "codex"), ConvertOptions("claude-code", seed=7))
    [path] = created_paths(plan)
    new_id = outs[0].new_id
    assert new_id != CODEX_ID and Path(path).name == f"{new_id}.jsonl"
    assert Path(path).parent.name == "-" + proj.strip("/").replace("/", "-").replace(" ", "-")
    recs = orjson.loads(b"[" + b",".join(plan.operations[0].data.splitlines()) + b"]")
    assert recs[0]["type"] == "histmig-provenance" and recs[0]["sourceSession"] == CODEX_ID
    chain = recs[1:]
    parent = None
    for r in chain:
        keys = list(r)
        assert keys[:2] == ["parentUuid", "isSidechain"] and keys[keys.index("uuid") + 1] == "timestamp"
        assert keys[-6:] == ["userType", "entrypoint", "cwd", "sessionId", "version", "gitBranch"]
        assert r["parentUuid"] == parent and len(r["uuid"]) == UUID_LEN
        assert (r["entrypoint"], r["sessionId"], r["cwd"], r["gitBranch"]) == ("cli", new_id, os.path.realpath(proj), "main")
        parent = r["uuid"]
    blocks = [(r["type"], b) for r in chain for b in (r["message"]["content"] if isinstance(r["message"]["content"], list)
                                                      else [{"type": "text", "text": r["message"]["content"]}])]
    assert ("user", {"type": "text", "text": "list the files please"}) == blocks[0]
    uses = [b for t, b in blocks if b["type"] == "tool_use"]
    assert uses[0]["name"] == "Bash" and uses[0]["input"] == {"command": "ls -la"}
    assert [u["name"] for u in uses[1:]] == ["Edit", "Write"]
    assert uses[1]["input"] == {"file_path": f"{os.path.realpath(proj)}/src/app.py",
                                "old_string": "    x = 1\n    y = 2", "new_string": "    x = 1\n    y = 3"}
    assert uses[2]["input"] == {"file_path": f"{os.path.realpath(proj)}/NOTES.md", "content": "hello\nworld\n"}
    assert not any(b["type"] in ("thinking", "redacted_thinking") for _, b in blocks)
    bash_result = next(r for r in chain if r.get("toolUseResult"))
    assert bash_result["toolUseResult"]["stdout"] == "README.md\nsrc\n"
    assert chain[1]["message"]["usage"]["cache_read_input_tokens"] == 1000
    # blocks of one assistant message share message.id (Edit + Write)
    edit_recs = [r for r in chain if r["type"] == "assistant" and r["message"]["content"][0].get("name") in ("Edit", "Write")]
    assert len({r["message"]["id"] for r in edit_recs}) == 1


def test_codex_to_claude_reports_dropped_reasoning_and_left_out_context(homes, proj):
    write_codex(homes.codex, proj)
    _, [out] = plan_convert(homes, refs_of(homes, "codex"), ConvertOptions("claude-code", seed=1))
    loss = out.loss.to_dict()
    assert loss["dropped"] == {"reasoning (codex: encrypted, bound to its provider)": 1}
    assert loss["left-out"] == {"developer message": 1, "injected context": 1}
    assert out.loss.lossy


def test_keep_reasoning_text_carries_the_summary_as_plain_text(homes, proj):
    write_codex(homes.codex, proj)
    plan, [out] = plan_convert(homes, refs_of(homes, "codex"), ConvertOptions("claude-code", seed=1, keep_reasoning_text=True))
    texts = [b["text"] for r in lines_of_bytes(plan.operations[0].data) if r.get("type") == "assistant"
             for b in r["message"]["content"] if b["type"] == "text"]
    assert "**Listing**" in texts
    assert out.loss.to_dict()["approximated"]["reasoning summary carried as plain text"] == 1


def lines_of_bytes(data: bytes) -> list[dict]:
    return [orjson.loads(x) for x in data.splitlines()]


def test_converted_claude_session_reads_back_with_the_conversation_in_order(homes, proj):
    write_codex(homes.codex, proj)
    assert cli("convert", "--to", "claude-code", "--from", "codex", "--apply") == 0
    ref = next(r for r in refs_of(homes, "claude-code"))
    session = registry.adapter("claude-code").read(ref)
    got = core(session)
    assert got[0] == ("text", "user", "list the files please")
    assert got[1][:2] == ("tool_call", "Bash") and got[2][0] == "tool_result"
    assert [c[1] for c in got if c[0] == "tool_call"] == ["Bash", "Edit", "Write"]
    assert got[-1] == ("text", "assistant", "There are two entries.")
    st = os.stat(ref.path)
    assert st.st_mode & 0o777 == 0o600 and abs(st.st_mtime - time.time()) < 60


# ---- Claude Code -> Codex ----------------------------------------------------------------------

def test_claude_to_codex_rollout_meta_provider_and_patch(homes, proj):
    (homes.codex / "config.toml").write_text('model_provider = "my-provider"\nmodel = "gpt-test"\n'
                                             '[model_providers.my-provider]\nname = "x"\nbase_url = "http://127.0.0.1:1/v1"\n')
    write_claude(homes.claude, proj)
    plan, [out] = plan_convert(homes, refs_of(homes, "claude-code"), ConvertOptions("codex", seed=3))
    [path] = created_paths(plan)
    assert parse_name(Path(path).name)[1] == out.new_id and out.new_id != CLAUDE_ID
    import uuid
    assert uuid.UUID(out.new_id).version == 7
    recs = lines_of_bytes(plan.operations[0].data)
    meta = recs[0]["payload"]
    assert recs[0]["type"] == "session_meta" and meta["model_provider"] == "my-provider" and meta["source"] == "cli"
    assert meta["id"] == out.new_id and meta["cwd"] == os.path.realpath(proj) and meta["base_instructions"] is None
    types = [(r["type"], r["payload"].get("type")) for r in recs]
    assert types[1] == ("turn_context", None) and recs[1]["payload"]["model"] == "gpt-test"
    assert ("event_msg", "user_message") in types and ("event_msg", "token_count") in types
    calls = [r["payload"] for r in recs if r["payload"].get("type") in ("function_call", "custom_tool_call")]
    assert calls[0]["name"] == "exec_command" and orjson.loads(calls[0]["arguments"]) == {"cmd": "ls"}
    assert calls[1]["name"] == "apply_patch" and calls[1]["input"] == (
        "*** Begin Patch\n*** Update File: src/app.py\n@@\n-y = 2\n+y = 3\n*** End Patch\n")
    outputs = [r["payload"]["type"] for r in recs if r["payload"].get("type", "").endswith("_output")]
    assert outputs == ["function_call_output", "custom_tool_call_output"]
    assert out.loss.to_dict()["dropped"] == {"thinking (signature bound to Anthropic)": 1}


def test_claude_to_codex_registers_a_threads_row_in_every_state_db(homes, proj):
    db = make_state_db(homes.codex)
    write_claude(homes.claude, proj)
    assert cli("convert", "--to", "codex", "--all", "--apply") == 0
    con = sqlite3.connect(db)
    con.row_factory = sqlite3.Row
    [row] = con.execute("SELECT * FROM threads").fetchall()
    assert row["preview"] == "what is in here?" and row["model_provider"] == "openai" and row["source"] == "cli"
    assert row["cwd"] == os.path.realpath(proj) and Path(row["rollout_path"]).is_file()
    assert row["future_required"] == 0 and row["history_mode"] == "legacy" and row["tokens_used"] > 0
    first = lines_of(row["rollout_path"])[0]
    assert first["payload"]["id"] == row["id"]


# ---- mini-cc and manifest ----------------------------------------------------------------------

def test_mini_cc_to_claude_keeps_signed_thinking_and_usage(homes, proj):
    write_mini(homes.mini_cc, proj)
    plan, [out] = plan_convert(homes, refs_of(homes, "mini-cc"), ConvertOptions("claude-code", seed=2))
    recs = lines_of_bytes(plan.operations[0].data)[1:]
    blocks = [r["message"]["content"][0] for r in recs if r["type"] == "assistant"]
    assert blocks[0] == {"type": "thinking", "thinking": "note it", "signature": "sigM"}
    assert recs[1]["message"]["usage"]["input_tokens"] == 100
    assert not out.loss.lossy


def test_claude_to_mini_cc_one_record_per_message_with_top_level_usage(homes, proj):
    write_claude(homes.claude, proj)
    plan, [out] = plan_convert(homes, refs_of(homes, "claude-code"), ConvertOptions("mini-cc", seed=2))
    [path] = created_paths(plan)
    assert path.startswith(str(homes.mini_cc / "projects")) and Path(path).stem == out.new_id
    recs = lines_of_bytes(plan.operations[0].data)[1:]
    assert [r["type"] for r in recs] == ["user", "assistant", "user", "assistant", "user", "assistant"]
    assert list(recs[0])[:6] == ["type", "uuid", "parentUuid", "sessionId", "timestamp", "cwd"]
    assert recs[0]["timestamp"].endswith("+00:00") and recs[1]["usage"]["cache_read_input_tokens"] == 900
    assert [b["type"] for b in recs[1]["message"]["content"]] == ["thinking", "text", "tool_use"]


def test_manifest_to_claude_and_claude_to_manifest(homes, proj):
    write_manifest(homes.claude, proj)
    plan, [out] = plan_convert(homes, refs_of(homes, "manifest"), ConvertOptions("claude-code", seed=4))
    recs = lines_of_bytes(plan.operations[0].data)[1:]
    assert [r["type"] for r in recs] == ["user", "assistant", "user", "assistant"]
    write_claude(homes.claude, proj)
    plan, [out] = plan_convert(homes, [r for r in refs_of(homes, "claude-code")], ConvertOptions("manifest", seed=4))
    names = sorted(Path(p).name for p in created_paths(plan))
    assert names == ["meta.json", "transcript.jsonl"]
    meta = orjson.loads(next(op.data for op in plan.operations if op.path.endswith("meta.json")))
    assert meta["sessionId"] == out.new_id and meta["updatedAt"] == "2026-03-20T19:06:55.000Z"
    assert meta["histmigSource"]["id"] == CLAUDE_ID


# ---- idempotence, undo, times --------------------------------------------------------------

def test_second_run_says_already_converted_unless_again(homes, proj, capsys):
    write_codex(homes.codex, proj)
    assert cli("convert", "--to", "claude-code", "--from", "codex", "--apply") == 0
    capsys.readouterr()
    assert cli("convert", "--to", "claude-code", "--from", "codex") == 0
    assert "already converted: codex " + CODEX_ID in capsys.readouterr().out
    plan, outs = plan_convert(homes, refs_of(homes, "codex"), ConvertOptions("claude-code", again=True))
    assert outs[0].status == "convert" and len(created_paths(plan)) == 1


def test_second_run_to_codex_finds_the_rollout_it_wrote(homes, proj, capsys):
    """The Codex target's provenance index lists rollouts with the one walker (tools/codex/walk.py)."""
    write_claude(homes.claude, proj)
    assert cli("convert", "--to", "codex", "--from", "claude-code", "--apply") == 0
    capsys.readouterr()
    assert cli("convert", "--to", "codex", "--from", "claude-code") == 0
    assert "already converted: claude-code " + CLAUDE_ID in capsys.readouterr().out


def test_a_conversion_is_not_converted_again_by_all(homes, proj):
    write_codex(homes.codex, proj)
    assert cli("convert", "--to", "claude-code", "--all", "--apply") == 0
    plan, outs = plan_convert(homes, refs_of(homes, "claude-code"), ConvertOptions("codex"))
    assert [o.code for o in outs] == ["is-conversion"] and plan.empty


def test_undo_removes_the_converted_session(homes, proj, capsys):
    write_codex(homes.codex, proj)
    assert cli("convert", "--to", "claude-code", "--all", "--apply") == 0
    [ref] = refs_of(homes, "claude-code")
    assert cli("undo") == 0
    assert not Path(ref.path).exists()
    assert cli("convert", "--to", "claude-code", "--all") == 0
    assert "would convert codex" in capsys.readouterr().out


def test_keep_times_sets_mtime_to_the_last_record_and_warns(homes, proj, capsys):
    write_codex(homes.codex, proj)
    assert cli("convert", "--to", "claude-code", "--all", "--apply", "--keep-times") == 0
    [ref] = refs_of(homes, "claude-code")
    # the last record is the final assistant message (Codex line at 04:58:24.001Z)
    last = lines_of(ref.path)[-1]["timestamp"]
    assert last == "2026-06-05T04:58:24.001Z"
    assert os.stat(ref.path).st_mtime_ns == 1780635504_001_000_000
    assert "old-mtime" in capsys.readouterr().err


def test_source_is_never_modified(homes, proj):
    src = write_codex(homes.codex, proj)
    before = (src.read_bytes(), os.stat(src).st_mtime_ns)
    assert cli("convert", "--to", "claude-code", "--all", "--apply") == 0
    assert (src.read_bytes(), os.stat(src).st_mtime_ns) == before


# ---- strict, hostile input -----------------------------------------------------------------------

def test_strict_refuses_a_lossy_conversion_and_writes_nothing(homes, proj):
    write_codex(homes.codex, proj)
    assert cli("convert", "--to", "claude-code", "--all", "--apply", "--strict") == 1
    assert refs_of(homes, "claude-code") == []


def test_strict_allows_a_lossless_conversion(homes, proj):
    write_manifest(homes.claude, proj)
    assert cli("convert", "--to", "mini-cc", "--from", "manifest", "--apply", "--strict") == 0
    assert len(refs_of(homes, "mini-cc")) == 1


@pytest.mark.parametrize("cwd", ["relative/dir", "/a/../../etc", "/x\nnewline", "/" + "a" * 5000])
def test_hostile_cwd_is_refused_per_session_exit_3(homes, cwd, isolated_homes):
    from convert_fixtures import codex_lines
    lines = codex_lines(cwd)
    write_codex(homes.codex, "/unused", lines=lines)
    assert cli("convert", "--to", "claude-code", "--all", "--apply") == 3
    assert not (homes.claude / "projects").exists()


def test_hostile_session_id_is_refused_exit_1(homes, proj):
    from convert_fixtures import codex_lines
    lines = codex_lines(proj, sid="../../x")
    path = write_codex(homes.codex, proj, sid=CODEX_ID, lines=lines)
    assert cli("convert", "--to", "claude-code", str(path), "--apply") == 1
    assert not (homes.claude / "projects").exists()


def test_usage_errors_exit_2(homes):
    assert cli("convert", "--to", "claude-code") == 2
    assert cli("convert", "--to", "nope", "--all") == 2


def test_two_sessions_into_one_new_project_folder_apply_in_one_transaction(homes, proj):
    write_codex(homes.codex, proj)
    write_codex(homes.codex, proj, sid="019e9625-802f-7e91-840a-cfe88d14117b")
    assert cli("convert", "--to", "claude-code", "--all", "--apply") == 0
    assert len(refs_of(homes, "claude-code")) == 2


def test_converting_into_a_claude_home_that_does_not_exist_creates_it_0700_and_undo_removes_it(isolated_homes, proj):
    h = resolve_homes()
    h.codex.mkdir(parents=True)
    write_codex(h.codex, proj)
    assert not h.claude.exists()
    assert cli("convert", "--to", "claude-code", "--from", "codex", "--apply") == 0
    files = list((h.claude / "projects").rglob("*.jsonl"))
    assert len(files) == 1
    assert (files[0].parent.stat().st_mode & 0o777) == 0o700
    assert (files[0].stat().st_mode & 0o777) == 0o600
    assert cli("undo") == 0
    assert not files[0].exists() and not files[0].parent.exists()
