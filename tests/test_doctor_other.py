"""mini-cc and manifest-layout doctor checks: the health checks of their specs, on crafted trees."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from histmig.apply import apply_plan
from histmig.tools import resolve_homes
from histmig.verbs.doctor import diagnose, plan_repair
from histmig.core.paths import claude_slug

SID = "b25c2034-1111-4222-8333-444455556666"


def mini_line(kind: str, uuid: str, parent, cwd: str, content, *, sid: str = SID) -> bytes:
    rec = {"type": kind, "uuid": uuid, "parentUuid": parent, "sessionId": sid,
           "timestamp": "2026-10-21T11:44:41.544+00:00", "cwd": cwd, "message": {"role": kind, "content": content}}
    return json.dumps(rec, ensure_ascii=False).encode() + b"\n"   # the Python writer's default separators


@pytest.fixture
def world(isolated_homes):
    homes = resolve_homes()
    proj = Path(isolated_homes["HOME"]) / "code" / "mini"
    proj.mkdir(parents=True)
    return homes, str(proj)


def put_mini(homes, cwd: str, data: bytes, name: str = SID) -> Path:
    p = homes.mini_cc / "projects" / claude_slug(cwd) / f"{name}.jsonl"
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(data)
    return p


def codes(homes, tool) -> list[str]:
    return sorted(f.code for f in diagnose(homes, tools=[tool]).findings)


def test_mini_cc_session_is_healthy(world):
    homes, proj = world
    put_mini(homes, proj, mini_line("user", "u1", None, proj, "记一下") + mini_line("assistant", "a1", "u1", proj, "好"))
    assert codes(homes, "mini-cc") == []


def test_mini_cc_dangling_tool_use_is_answered_in_the_files_own_style(world):
    homes, proj = world
    data = (mini_line("user", "u1", None, proj, "run it")
            + mini_line("assistant", "a1", "u1", proj, [{"type": "tool_use", "id": "t1", "name": "bash", "input": {}}]))
    path = put_mini(homes, proj, data)
    assert codes(homes, "mini-cc") == ["mini-cc.dangling-tool-use"]
    apply_plan(plan_repair(homes, diagnose(homes, tools=["mini-cc"])), homes)
    added = path.read_bytes()[len(data):]
    assert added.startswith(b'{"type": "user", "uuid": ')          # json.dumps default separators, like the file
    rec = json.loads(added)
    assert rec["parentUuid"] == "a1" and rec["sessionId"] == SID and rec["timestamp"].endswith("+00:00")
    assert [b["tool_use_id"] for b in rec["message"]["content"]] == ["t1"]
    assert codes(homes, "mini-cc") == []


def test_mini_cc_broken_line_torn_tail_and_id_mismatch(world):
    homes, proj = world
    put_mini(homes, proj, mini_line("user", "u1", None, proj, "hi") + b"{oops\n"
             + mini_line("assistant", "a1", "u1", proj, "yo") + b'{"type": "us', name="00000000-0000-4000-8000-000000000000")
    assert codes(homes, "mini-cc") == ["mini-cc.broken-lines", "mini-cc.id-mismatch", "mini-cc.truncated-tail"]


def test_mini_cc_missing_cwd_but_relative_cwd_is_opaque(world):
    homes, proj = world
    gone = str(Path(homes.home) / "gone" / "mini")
    put_mini(homes, gone, mini_line("user", "u1", None, gone, "hi"))
    put_mini(homes, "code/mini_cc", mini_line("user", "u1", None, "code/mini_cc", "hi"))
    fs = diagnose(homes, tools=["mini-cc"]).findings
    assert [(f.code, f.data["cwd"], f.data["suggested"]) for f in fs] == [("mini-cc.cwd-missing", gone, proj)]


def test_mini_cc_read_only_folder(world):
    homes, proj = world
    p = put_mini(homes, proj, mini_line("user", "u1", None, proj, "hi"))
    os.chmod(p.parent, 0o555)
    try:
        assert codes(homes, "mini-cc") == ["mini-cc.read-only"]
    finally:
        os.chmod(p.parent, 0o755)


# ---- manifest --------------------------------------------------------------------------------------

def manifest_session(homes, *, meta=b'{"sessionId": "s1"}', lines: int = 3, tail: bytes = b"", cp_index=None) -> Path:
    d = homes.claude / "projects" / "abc" / "sessions" / "s1"
    d.mkdir(parents=True)
    if meta is not None:
        (d / "meta.json").write_bytes(meta)
    (d / "transcript.jsonl").write_bytes(b"".join(b'{"ts":"t","role":"user","payload":{}}\n' for _ in range(lines)) + tail)
    if cp_index is not None:
        (d / "checkpoints").mkdir()
        (d / "checkpoints" / "cp-0001.json").write_text(json.dumps({"id": "1", "atMessageIndex": 0}))
        (d / "checkpoints" / "cp-0002.json").write_text(json.dumps({"id": "2", "atMessageIndex": cp_index}))
    return d


def test_manifest_healthy_session(world):
    homes, _ = world
    manifest_session(homes, cp_index=3)
    assert codes(homes, "manifest") == []


@pytest.mark.parametrize("meta", [None, b"{not json", b"[1]"])
def test_manifest_meta_unreadable(world, meta):
    homes, _ = world
    manifest_session(homes, meta=meta)
    assert codes(homes, "manifest") == ["manifest.meta-unreadable"]


def test_manifest_tail_invalid(world):
    homes, _ = world
    manifest_session(homes, tail=b'{"ts":"t","ro')
    assert codes(homes, "manifest") == ["manifest.tail-invalid"]


def test_manifest_latest_checkpoint_beyond_the_end(world):
    homes, _ = world
    manifest_session(homes, lines=3, cp_index=4)
    [f] = diagnose(homes, tools=["manifest"]).findings
    assert f.code == "manifest.checkpoint-beyond-end" and f.path.endswith("cp-0002.json")


def test_manifest_lock_and_read_only(world):
    homes, _ = world
    d = manifest_session(homes)
    (d / ".lock").write_bytes(b"")
    os.chmod(d, 0o555)
    try:
        assert codes(homes, "manifest") == ["manifest.locked", "manifest.read-only"]
    finally:
        os.chmod(d, 0o755)
