"""Issue 18, a search without the scan index: the tools' ``locate`` (histmig/toolkit/search.py) gives
the listing's sessions, ids, sizes and times without counting messages, and ``complete`` the
listing's ``cwd`` and ``title`` (docs/search.md, "How it is fast"). Compared with ``discover`` on
the recorded samples and on files shaped to take each branch (big heads and tails, title records)."""
from __future__ import annotations

import json
from pathlib import Path
from clirun import histmig
from histmig.cli import samples
from histmig.core.scanindex import ScanIndex
from histmig.tools import TABLE, adapter, hook, resolve_homes


def _homes(h: Path):
    return resolve_homes(home=h, state_dir=h.parent / "state")


def _same_as_discover(homes, index=None) -> int:
    # completed from the file, and from its bytes as the search hands them (the first block)
    return min(_compared(homes, index, False), _compared(homes, index, True))


def _compared(homes, index, given: bool) -> int:
    n = 0
    for tool in TABLE:
        source = hook(tool, "search")
        if getattr(source, "locate", None) is None:
            continue
        listed = list(adapter(tool).discover(homes))
        located = []
        for ref, complete in source.locate(homes, index):
            if complete is not None:
                complete(ref, Path(ref.path).read_bytes() if given else None)
            located.append(ref)
        fields = ("id", "path", "size", "updated", "cwd", "title", "error")
        assert [[getattr(r, k) for k in fields] for r in located] == [[getattr(r, k) for k in fields] for r in listed]
        n += len(listed)
    return n


def test_located_and_completed_refs_are_the_listings_on_every_sample(tmp_path):
    h = tmp_path / "h"
    samples.install(h)
    homes = _homes(h)
    assert _same_as_discover(homes) > 10
    histmig("--home", h, "--state-dir", h.parent / "state", "scan")          # the index: its hits
    assert _same_as_discover(homes, ScanIndex.load(h.parent / "state")) > 10


def _line(obj: dict) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode() + b"\n"


def test_big_heads_and_tails_and_title_records(tmp_path):
    h = tmp_path / "h"
    samples.install(h, tools=("codex", "claude-code"))
    pad = "x" * 3000
    for f in sorted((h / ".codex" / "sessions").rglob("*.jsonl"))[:2]:
        with open(f, "ab") as fh:        # past the 128 KB head: a turn_context in the tail names the cwd
            for _ in range(60):
                fh.write(_line({"timestamp": "2026-11-30T05:00:00.000Z", "type": "event_msg",
                                "payload": {"type": "agent_message", "message": pad}}))
            fh.write(_line({"timestamp": "2026-11-30T05:00:00.000Z", "type": "turn_context",
                            "payload": {"cwd": "/tail/cwd"}}))
    claude = sorted((h / ".claude" / "projects").rglob("*.jsonl"))
    claude = [f for f in claude if "subagents" not in f.parts and not f.name.startswith("agent-")]
    for i, f in enumerate(claude[:4]):
        body = f.read_bytes()
        first = json.loads(body.splitlines()[0])
        filler = b"".join(_line({"type": "progress", "uuid": f"p{j}", "data": pad, "sessionId": first.get("sessionId")})
                          for j in range(50))
        tail = [b"", _line({"type": "custom-title", "customTitle": "named in the tail"}),
                _line({"type": "last-prompt", "lastPrompt": "the last prompt"}),
                _line({"type": "ai-title", "aiTitle": "an AI title"})][i]
        # no prompt in the head (the title is the tail's), or (the last) a prompt in it and an AI title
        f.write_bytes(filler + body + filler + tail if i < 3 else body + filler + tail)
    assert _same_as_discover(_homes(h)) > 4
    titles = {r.title for r in adapter("claude-code").discover(_homes(h))}
    cwds = {r.cwd for r in adapter("codex").discover(_homes(h))}
    assert {"named in the tail", "the last prompt", "an AI title"} <= titles and "/tail/cwd" in cwds


def test_codex_first_lines_read_by_forked_workers_are_the_listings(tmp_path, monkeypatch):
    from histmig.core import forkmap
    from histmig.tools.codex import search as codex_search
    monkeypatch.setattr(forkmap, "cpus", lambda: 2)
    monkeypatch.setattr(codex_search, "LOCATE_MIN_FORK", 0)
    monkeypatch.setattr(codex_search, "LOCATE_BATCH", 3)             # several batches, each shared
    h = tmp_path / "h"
    samples.install(h)
    assert _same_as_discover(_homes(h)) > 10


def test_codex_heads_counted_only_up_to_the_prompt(tmp_path):
    # a rollout whose last line starts past 128 KB: its head is not counted to its end, only up to the
    # prompt (histmig/tools/codex/search.py _head_fields); the prompt past 200 lines, past 128 KB, inside
    # both, with a turn_context in the tail, and without one (the head's is the cwd)
    h = tmp_path / "h"
    samples.install(h, tools=("codex",))
    ts = "2026-11-30T05:00:00.000Z"
    small = _line({"timestamp": ts, "type": "event_msg", "payload": {"type": "agent_message", "message": "x"}})
    big = _line({"timestamp": ts, "type": "event_msg", "payload": {"type": "token_count", "info": "x" * 3000}})
    body = (_line({"timestamp": ts, "type": "turn_context", "payload": {"cwd": "/head/cwd"}})
            + _line({"timestamp": ts, "type": "response_item", "payload": {"type": "message", "role": "user",
                     "content": [{"type": "input_text", "text": "the prompt"}]}}))
    files = sorted((h / ".codex" / "sessions").rglob("*.jsonl"))
    tail = big * 60 + _line({"timestamp": ts, "type": "turn_context", "payload": {"cwd": "/tail/cwd"}})
    shapes = [(small * 250, tail), (big * 60, tail), (b"", big * 60), (small * 150, tail)]
    for f, (before, after) in zip(files, shapes):
        sid = f.name[-len("00000000-0000-0000-0000-000000000000.jsonl"):-len(".jsonl")]
        meta = _line({"timestamp": ts, "type": "session_meta", "payload": {"id": sid, "cwd": "/meta"}})
        f.write_bytes(meta + before + body + after)
    assert len(files) >= len(shapes)
    assert _same_as_discover(_homes(h)) >= len(shapes)
    titles = [r.title for r in adapter("codex").discover(_homes(h))]
    assert titles.count("the prompt") == 2 and titles.count(None) >= 2


def test_codex_first_lines_around_the_two_reads_are_the_listings(tmp_path):
    # locate reads 32 KB, then the rest of 64 KB when no line ends in it, then leaves it to make_ref
    from histmig.tools.codex.search import FIRST_READ, FIRST_TRY, _first_line_ref
    for at in (FIRST_TRY, FIRST_READ):
        h = tmp_path / str(at)
        samples.install(h, tools=("codex",))
        files = sorted((h / ".codex" / "sessions").rglob("*.jsonl"))
        for f, size in zip(files, (at - 1, at, at + 1)):   # the first line, newline included, ``size`` bytes
            first, rest = f.read_bytes().split(b"\n", 1)
            obj = json.loads(first)
            obj.setdefault("payload", {})["pad"] = ""
            obj["payload"]["pad"] = "p" * (size - len(_line(obj)))
            assert len(_line(obj)) == size
            f.write_bytes(_line(obj) + rest)
        assert _same_as_discover(_homes(h)) >= 3
        fast = [_first_line_ref(f, False, None) for f in files[:3]]           # read here, not by make_ref
        assert [got is not None for got in fast] == [True, True, at == FIRST_TRY]
