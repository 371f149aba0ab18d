"""Bounded memory for the whole-file JSON sessions (a Gemini CLI legacy ``.json``, a Cline
``<sid>.messages.json``): ``stream`` and the listing and doctor reads hold one message at a time
(histmig/jsonio/jsonpull.py), so their peak allocation (tracemalloc) is the same for a session of 1,000
and of 20,000 messages, while reading the document whole grows with it (the check that the
measure sees the difference)."""
from __future__ import annotations

import json
import tracemalloc
from pathlib import Path
from typing import Callable

import pytest

from histmig.jsonio import jsonpull
from histmig.tools.cline import adapter as cline
from histmig.tools.cline import doctor as cline_doctor
from histmig.tools.gemini import adapter as gem

SMALL, BIG = 1_000, 20_000
TEXT = "lorem ipsum dolor sit amet, \"quoted\" {braces} [brackets] " * 2
CHUNK = 64 << 10        # the reader's chunk, smaller than the small session (so both sizes read many)


def gemini_legacy(folder: Path, n: int) -> Path:
    chats = folder / "tmp" / "proj" / "chats"
    chats.mkdir(parents=True)
    msgs = [{"id": f"m{i}", "timestamp": "2026-01-02T03:04:06Z", "type": "user" if i % 2 == 0 else "gemini",
             "content": [{"text": f"{i} {TEXT}"}] if i % 2 == 0 else f"{i} {TEXT}"} for i in range(n)]
    p = chats / "session-2026-01-02T03-04-abcdef12.json"
    p.write_text(json.dumps({"sessionId": "abcdef12-0000-4000-8000-000000000000", "startTime": "2026-01-02T03:04:05Z",
                             "messages": msgs, "lastUpdated": "2026-01-02T03:04:09Z"}, indent=2))
    return p


def cline_messages(folder: Path, n: int) -> Path:
    sid = "1796137236898_abcde"
    (folder / sid).mkdir(parents=True)
    msgs = [{"id": f"m{i}", "role": "user" if i % 2 == 0 else "assistant",
             "content": [{"type": "text", "text": f"{i} {TEXT}"}]} for i in range(n)]
    p = folder / sid / f"{sid}.messages.json"
    p.write_text(json.dumps({"version": 1, "sessionId": sid, "messages": msgs, "system_prompt": "x"}, indent=2) + "\n")
    return p


def peak(fn: Callable[[], object]) -> int:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def drain(session) -> int:
    return sum(1 for _ in session.records)


READS = {
    "gemini stream": (gemini_legacy, lambda p: drain(gem.stream(p))),
    "gemini listing": (gemini_legacy, lambda p: gem.ref_for(p)),
    "cline stream": (cline_messages, lambda p: drain(cline.stream(p))),
    "cline doctor": (cline_messages, lambda p: cline_doctor._messages(p)),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(READS))
def test_a_whole_file_json_session_is_read_in_flat_memory(tmp_path, name, monkeypatch):
    monkeypatch.setattr(jsonpull, "CHUNK", CHUNK)
    make, read = READS[name]
    small, big = make(tmp_path / "small", SMALL), make(tmp_path / "big", BIG)
    assert small.stat().st_size > 2 * CHUNK and big.stat().st_size > 3 << 20
    flat, grown = peak(lambda: read(small)), peak(lambda: read(big))
    whole = peak(lambda: json.loads(big.read_bytes()))
    # the slack is garbage the cyclic collector has not reached yet (json.dumps(indent=) closures)
    assert grown < flat * 1.5 + (128 << 10), f"{name}: {flat >> 10} KiB at {SMALL}, {grown >> 10} KiB at {BIG}"
    assert grown * 4 < whole, f"{name}: {grown >> 10} KiB streamed, {whole >> 10} KiB whole"
