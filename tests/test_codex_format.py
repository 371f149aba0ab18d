"""The Codex adapter: byte-identical round trips, damaged lines kept, listing from heads only."""
from __future__ import annotations

from pathlib import Path

import pytest

from histmig.jsonio import zst
from histmig.tools.codex import adapter as codex
from histmig.tools.codex import lines
from histmig.tools import resolve_homes

from codex_fixtures import TS, dumps, rollout, session_meta, tid, write_rollout

SAMPLES = Path(__file__).resolve().parent.parent / "histmig" / "samples" / "codex"

LEGACY_PRE_ENVELOPE = (
    b'{"id":"5973b6c0-94b8-487b-a530-2aeb6098ae0e","timestamp":"2025-08-11T16:19:51.140Z","instructions":null,"git":{"commit_hash":"abc"}}\n'
    b'{"record_type":"state"}\n'
    b'{"type":"message","id":null,"role":"user","content":[{"type":"input_text","text":"map the repo"}]}\n'
    b'{"type":"function_call","id":"fc_1","name":"update_plan","arguments":"{\\"plan\\":[]}","call_id":"call_PK"}\n'
    b'{"type":"function_call_output","call_id":"call_PK","output":"Plan updated"}\n'
    b'{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"**Exploring**"}],"encrypted_content":"gAAAAABo"}\n'
)


def _damaged() -> bytes:
    t = tid(7)
    good = rollout(t, turns=1)
    return (b"\xef\xbb\xbf" + good
            + b'{"timestamp":"x","type":"event_msg","payload":{"type":"tok\n'          # truncated record
            + b"\x00" * 64 + b"\n"                                                     # NUL run
            + b'{"a":"\xff\xfe"}\n'                                                    # invalid UTF-8
            + b'{"cwd":"/a","cwd":"/b"}\r\n'                                           # duplicate key, CRLF
            + b"[" * 5000 + b"]" * 5000 + b"\n"                                        # deep nesting
            + b"\n"                                                                    # blank
            + b'{"timestamp":"' + TS.encode() + b'","type":"event_msg","payload":{"type":"token_count"')  # no final \n


def fixture_files(tmp: Path) -> dict[str, Path]:
    """Every shape the adapter must round-trip."""
    t1, t2, t3, parent = tid(1), tid(2), tid(3), tid(99)
    files = {
        "paginated": write_rollout(tmp, t1, rollout(t1)),
        "legacy-mode": write_rollout(tmp, t2, rollout(t2, paginated=False)),
        # a fork: own session_meta first, then the parent's copied session_meta with another id
        "two-metas": write_rollout(tmp, t3, rollout(t3, turns=1, extra_lines=[session_meta(parent, "other")])),
        "compressed": write_rollout(tmp, tid(4), rollout(tid(4)), compressed=True),
        "archived": write_rollout(tmp, tid(5), rollout(tid(5)), archived=True),
        "damaged": write_rollout(tmp, tid(7), _damaged()),
    }
    legacy = tmp / "sessions/2025/08/11/rollout-2025-08-11T16-19-51-5973b6c0-94b8-487b-a530-2aeb6098ae0e.jsonl"
    legacy.parent.mkdir(parents=True)
    legacy.write_bytes(LEGACY_PRE_ENVELOPE)
    files["pre-envelope"] = legacy
    return files


def _bytes_of(path: Path) -> bytes:
    return zst.decompress_all(path) if path.name.endswith(".zst") else path.read_bytes()


@pytest.mark.parametrize("case", ["paginated", "legacy-mode", "two-metas", "compressed", "archived",
                                  "damaged", "pre-envelope"])
def test_serialize_of_read_is_byte_identical(tmp_path, case):
    path = fixture_files(tmp_path)[case]
    assert codex.ADAPTER.serialize(codex.ADAPTER.read(path)) == _bytes_of(path)


def _sample_files():
    if not SAMPLES.is_dir():
        return []
    return sorted(p for p in SAMPLES.rglob("rollout-*.jsonl*") if p.is_file())


@pytest.mark.parametrize("path", _sample_files(), ids=lambda p: str(p.relative_to(SAMPLES)))
def test_every_sample_round_trips_byte_for_byte(path):
    assert codex.ADAPTER.serialize(codex.ADAPTER.read(path)) == _bytes_of(path)


def test_damaged_lines_are_counted_and_kept_without_exception(tmp_path):
    path = fixture_files(tmp_path)["damaged"]
    session = codex.read(path)
    opaque = [r for r in session.records if r.opaque]
    # truncated, NUL, bad UTF-8, duplicate key, deep nesting, blank, unterminated last line
    assert len(opaque) == 7
    assert all(r.raw is not None for r in opaque)
    assert session.provider == "openai" and session.id == tid(7)


def test_unknown_line_types_are_kept_as_other_records(tmp_path):
    session = codex.read(fixture_files(tmp_path)["paginated"])
    kinds = {r.source_type for r in session.records}
    assert "token_usage_record" in kinds and "world_state" in kinds
    rec = next(r for r in session.records if r.source_type == "token_usage_record")
    assert rec.kind == "other" and rec.raw.startswith(b'{"timestamp"')


def test_read_maps_messages_tools_and_reasoning(tmp_path):
    session = codex.read(fixture_files(tmp_path)["paginated"])
    kinds = [r.kind for r in session.messages()]
    assert kinds.count("tool_call") == 2 and kinds.count("tool_result") == 2 and kinds.count("reasoning") == 2
    call = next(r for r in session.records if r.kind == "tool_call").parts[0]
    assert call.name == "exec_command" and call.arguments == {"cmd": "ls"}
    assert session.title == "fix the bug #1 – ünïcode"
    assert session.cwd == "/w/proj" and session.meta["history_mode"] == "paginated"


def test_two_session_meta_lines_keep_the_first_id(tmp_path):
    session = codex.read(fixture_files(tmp_path)["two-metas"])
    metas = [r for r in session.records if r.source_type == "session_meta"]
    assert len(metas) == 2 and session.id == tid(3) and session.provider == "openai"


def test_discover_lists_sessions_archived_compressed_and_pre_envelope(tmp_path):
    home = tmp_path / ".codex"
    files = fixture_files(home)
    refs = {r.path: r for r in codex.ADAPTER.discover(resolve_homes(codex_home=home))}
    assert set(refs) == set(files.values())
    assert refs[files["archived"]].archived and "archived" in refs[files["archived"]].state
    assert refs[files["compressed"]].compressed and refs[files["compressed"]].provider == "openai"
    pre = refs[files["pre-envelope"]]
    assert pre.provider is None and any("pre-envelope" in s for s in pre.state)
    assert refs[files["paginated"]].title == "fix the bug #1 – ünïcode"
    assert refs[files["paginated"]].messages == 4          # 2 real prompts + 2 answers, injected ones excluded
    assert refs[files["damaged"]].error is None and "broken" in refs[files["damaged"]].state_text()


def test_discover_with_a_shadowed_zst_lists_the_plain_file_once(tmp_path):
    home = tmp_path / ".codex"
    t = tid(11)
    plain = write_rollout(home, t, rollout(t, "plain-wins"))
    write_rollout(home, t, rollout(t, "stale"), compressed=True)
    refs = list(codex.ADAPTER.discover(resolve_homes(codex_home=home)))
    assert [r.path for r in refs] == [plain]
    assert refs[0].provider == "plain-wins"
    assert refs[0].extra["shadowed_zst"].endswith(".jsonl.zst") and "shadows" in refs[0].state_text()


def test_discover_takes_cwd_from_the_latest_turn_context_in_the_tail(tmp_path):
    home = tmp_path / ".codex"
    t = tid(12)
    filler = [{"timestamp": TS, "type": "event_msg", "payload": {"type": "agent_message", "message": "y" * 4000}}] * 80
    last = {"timestamp": TS, "type": "turn_context", "payload": {"cwd": "/w/moved", "model": "m"}}
    write_rollout(home, t, rollout(t, turns=1, extra_lines=filler + [last]))
    ref = next(codex.ADAPTER.discover(resolve_homes(codex_home=home)))
    assert ref.cwd == "/w/moved" and ref.messages == 2   # past the head: counted by a byte search (issue 15)


def test_discover_of_an_unreadable_file_gives_an_error_ref(tmp_path):
    home = tmp_path / ".codex"
    bad = home / "sessions/2026/11/29" / f"rollout-2026-11-29T10-00-00-{tid(13)}.jsonl.zst"
    bad.parent.mkdir(parents=True)
    bad.write_bytes(zst.compress(b'{"a":1}\n')[:-5])            # truncated frame
    ref = next(codex.ADAPTER.discover(resolve_homes(codex_home=home)))
    assert ref.error and "truncated" in ref.error and ref.id == tid(13)


def test_title_skips_injected_context_and_agents_md(tmp_path):
    t = tid(14)
    item = lambda text: {"timestamp": TS, "type": "response_item", "payload": {  # noqa: E731
        "type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}}
    data = dumps(session_meta(t)) + b"".join(dumps(item(x)) for x in (
        "# AGENTS.md instructions for /w\n\nbe nice", "<user_instructions>u</user_instructions>",
        "<environment_context><cwd>/w</cwd></environment_context>", "real question"))
    path = write_rollout(tmp_path, t, data)
    assert codex.make_ref(path).title == "real question"


def test_head_meta_reads_only_line_one_of_a_compressed_rollout(tmp_path):
    t = tid(15)
    path = write_rollout(tmp_path, t, rollout(t, "zz"), compressed=True)
    meta, err = lines.head_meta(path)
    assert err is None and meta["model_provider"] == "zz" and meta["id"] == t


def test_parse_name_handles_revert_suffix_and_zst():
    ts, thread, rid = codex.parse_name(f"rollout-2026-11-29T10-00-00-{tid(1)}_{tid(2)}.jsonl.zst")
    assert (ts, thread, rid) == ("2026-11-29T10-00-00", tid(1), tid(2))
    assert codex.parse_name("notes.jsonl") is None


def test_detect_accepts_rollouts_and_rejects_other_jsonl(tmp_path):
    other = tmp_path / "x.jsonl"
    other.write_bytes(b'{"type":"user","message":{}}\n')
    meta_only = tmp_path / "y.jsonl"
    meta_only.write_bytes(dumps(session_meta(tid(1))))
    assert not codex.detect(other) and codex.detect(meta_only)
