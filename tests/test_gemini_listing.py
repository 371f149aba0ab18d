"""issue 16/15: the Gemini listing of a small ``.jsonl`` reads bytes (histmig/tools/gemini/listing.py) and
gives exactly the row the Line reader gives (``_head_facts`` and ``records.resolve`` in adapter.py): broken,
blank, BOM, CRLF, unterminated, partial and empty files, ``$set``/``$rewindTo`` patches, injected and
command prompts, duplicate keys and lines that are JSON but no object; the scan index stores the same."""
from __future__ import annotations

import orjson
import pytest

from histmig.core.scanindex import ScanIndex
from histmig.tools.gemini import adapter

META = {"sessionId": "b425c916-bfa5-4ab1-8b5c-effa78bc7c31", "projectHash": "9c", "kind": "main",
        "startTime": "2026-12-01T14:03:03.261Z", "lastUpdated": "2026-12-01T14:03:03.261Z"}


def line(o) -> bytes:
    return orjson.dumps(o) + b"\n"


def msg(mid: str, t: str, content, **extra) -> dict:
    return {"id": mid, "timestamp": "2026-12-01T14:03:03.304Z", "type": t, "content": content, **extra}


CTX = [{"text": "<session_context>\nThis is the Gemini CLI.\n</session_context>"}]
PLAIN = (line(META) + line({"$set": {"messages": [msg("c", "user", CTX)]}})
         + line(msg("u1", "user", [{"text": "Say hello."}])) + line({"$set": {"lastUpdated": "2026-12-01T14:04Z"}})
         + line(msg("g1", "gemini", "Hello.", model="gemini-2.5-flash")))
TOOL = (line(META) + line(msg("u1", "user", "  list files  "))
        + line(msg("g1", "gemini", "", toolCalls=[{"id": "t1", "name": "ls", "args": {}, "status": "success",
                                                  "result": [{"functionResponse": {"id": "t1", "response":
                                                             {"output": "a"}}}]}]))
        + line(msg("u2", "user", [{"functionResponse": {"id": "t1", "response": {"output": "a"}}}]))
        + line(msg("g2", "gemini", "done")))

FILES = {
    "plain": PLAIN,
    "tool": TOOL,
    "broken": PLAIN[:150] + b"\n{not json\n\n[1,2]\nnull\n\"s\"\n" + PLAIN,
    "duplicate-key": PLAIN + b'{"id":"d","type":"user","type":"gemini"}\n',
    "spaced": PLAIN + b'{"id" : "s1", "type": "user", "content": "spaced"}\n',
    "nul": PLAIN + b'{"id":"n","content":"a\x00b"}\n',
    "bad-utf8": PLAIN + b'{"id":"n","content":"\xff"}\n',
    "bom": b"\xef\xbb\xbf" + PLAIN,
    "bom-blank": b"\xef\xbb\xbf\n" + PLAIN,
    "crlf": PLAIN.replace(b"\n", b"\r\n"),
    "blank-lines": b"\n  \n" + PLAIN.replace(b"\n", b"\n\n") + b"\t\n",
    "unterminated": PLAIN[:-1],
    "partial": PLAIN + b'{"id":"x","type":"user","cont',
    "empty": b"",
    "only-blank": b"\n\n  \n",
    "meta-only": line(META),
    "no-prompt": line(META) + line(msg("u1", "user", CTX)) + line(msg("u2", "user", "/help"))
                 + line(msg("u3", "user", [{"text": "?"}, {"text": "x", "thought": True}])),
    "late-prompt": line(META) + line(msg("u1", "user", [{"text": "  "}, {"functionCall": {"name": "f"}, "text": "no"},
                                                         {"inlineData": {"mimeType": "image/png"}}, "raw text"])),
    "summary": PLAIN + line({"$set": {"summary": "A summary", "sessionId": "other", "startTime": 5}}),
    "rewind": PLAIN + line(msg("u2", "user", "second")) + line({"$rewindTo": "u1"}) + line(msg("u3", "user", "third")),
    "rewind-missing": PLAIN + line({"$rewindTo": "nope"}),
    "set-replace": PLAIN + line({"$set": {"messages": [msg("a", "user", "replaced"), msg("a", "user", "again"),
                                                       msg("b", "gemini", "x"), {"no": "id"}, 3]}}),
    "set-not-list": PLAIN + line({"$set": {"messages": {"k": 1}}}) + line({"$set": 3}),
    "redefined": PLAIN + line(msg("u1", "user", CTX)) + line(msg("g1", "info", "x")),
    "resumed": PLAIN + line({**META, "startTime": "later"}) + line({"$set": {"messages": [msg("c", "user", CTX)]}})
               + line(msg("u9", "user", "after resume")),
    "deep": PLAIN + b'{"id":"deep","x":' + b"[" * 300 + b"]" * 300 + b"}\n",
    "big-int": PLAIN + b'{"id":"i","n":123456789012345678901234567890}\n',
}


def rows(path, monkeypatch, *, old: bool):
    with monkeypatch.context() as m:
        if old:
            m.setattr(adapter, "_summarize_bytes", lambda *a: False)
        index = ScanIndex(None, {})
        ref = adapter.ref_for(path, "/w/app", index=index)
        return ref, index.records


@pytest.mark.parametrize("name", sorted(FILES))
def test_bytes_row_is_the_line_readers_row(tmp_path, monkeypatch, name):
    path = tmp_path / "tmp" / "app" / "chats" / "session-2026-12-01T14-02-9d6121d7.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(FILES[name])
    new, new_index = rows(path, monkeypatch, old=False)
    old, old_index = rows(path, monkeypatch, old=True)
    assert vars(new) == vars(old)
    assert new_index == old_index


def test_bytes_path_is_taken(tmp_path, monkeypatch):
    path = tmp_path / "session-2026-12-01T14-02-9d6121d7.jsonl"
    path.write_bytes(FILES["broken"])
    m = monkeypatch
    m.setattr(adapter, "_head_facts", lambda *a: pytest.fail("the Line reader ran"))
    ref = adapter.ref_for(path, None)
    assert ref.messages == 2 and ref.title == "Say hello." and ref.state == ["2 broken lines"]    # [1,2], null, "s": JSON


def test_a_file_that_grew_past_its_stat_goes_to_the_line_reader(tmp_path):
    from histmig.tools.gemini.listing import small_facts
    path = tmp_path / "session-2026-12-01T14-02-9d6121d7.jsonl"
    path.write_bytes(PLAIN)
    assert small_facts(path, len(PLAIN) - 1) is None
    assert small_facts(path, len(PLAIN)).messages == 2


def test_grown_and_perturbed_sessions_give_the_line_readers_row(tmp_path, monkeypatch):
    """Sessions grown from the recorded samples (fresh ids per turn, as bench/scan_bench.build_gemini
    grows them), then perturbed: a record written again with the same id, a rewind to an earlier id,
    a new $set list, a broken line, a cut line joined to the next, a truncated last line."""
    import random
    import re
    from pathlib import Path
    rng = random.Random(16)
    samples = sorted((Path(adapter.__file__).resolve().parents[2] / "samples" / "gemini").glob("*/tmp/*/chats/*.jsonl"))
    path = tmp_path / "tmp" / "app" / "chats" / "session-2026-12-01T14-02-9d6121d7.jsonl"
    path.parent.mkdir(parents=True)
    for round_ in range(40):
        data = samples[round_ % len(samples)].read_bytes()
        head, turn = data.split(b"\n", 2)[:2], data.split(b"\n", 2)[2]
        ids = sorted(set(re.findall(rb'^\{"id":"([0-9a-f-]{36})"', turn, re.M)))
        turns = []
        for k in range(6):
            fresh = turn
            for old in ids:
                fresh = fresh.replace(old, f"{old[:30].decode()}{round_:02x}{k:04x}".encode())
            turns.append(fresh)
        lines = b"\n".join(head).split(b"\n") + b"".join(turns).splitlines()
        records = [ln for ln in lines if ln.startswith(b'{"id":')]
        for _ in range(rng.randrange(1, 4)):
            i = rng.randrange(2, len(lines))
            what = rng.choice(("again", "rewind", "set", "broken", "joined", "blank"))
            if what == "again":
                lines.insert(i, rng.choice(records))
            elif what == "rewind":
                lines.insert(i, line({"$rewindTo": orjson.loads(rng.choice(records))["id"]}).rstrip(b"\n"))
            elif what == "set":
                lines.insert(i, line({"$set": {"messages": [orjson.loads(r) for r in records[:2]]}}).rstrip(b"\n"))
            elif what == "broken":
                lines.insert(i, b'{"id":"x","type":"gemini"')
            elif what == "joined" and i + 1 < len(lines):
                lines[i:i + 2] = [lines[i][:rng.randrange(1, len(lines[i]))] + lines[i + 1]]
            else:
                lines.insert(i, b"  ")
        data = b"\n".join(lines) + b"\n"
        if round_ % 3 == 0:
            data = data[:-rng.randrange(2, 40)]
        path.write_bytes(data)
        new, _ = rows(path, monkeypatch, old=False)
        old, _ = rows(path, monkeypatch, old=True)
        assert vars(new) == vars(old), (round_, data[-300:])


def test_a_session_up_to_one_mib_is_read_whole_with_an_exact_count(tmp_path):
    """Past 128 KB the row used to come from the file's two 64 KB ends, with no message count; up to
    ``listing.WHOLE_READ`` it is now the whole file's (docs/gemini.md "scan and show"), the count the one
    ``records.resolve`` gives and a broken line in the middle counted; a longer file keeps its ends."""
    from histmig.jsonio.jsonl import read_lines
    from histmig.tools.gemini import listing
    from histmig.tools.gemini.records import resolve
    turns = [line(msg(f"u{i}", "user", f"question {i} " + "q" * 200)) + line({"$set": {"lastUpdated": f"t{i}"}})
             + line(msg(f"g{i}", "gemini", "answer " + "a" * 1200)) for i in range(400)]
    body = PLAIN + b"".join(turns[:200]) + b"{broken\n" + b"".join(turns[200:]) + line({"$rewindTo": "u390"})
    path = tmp_path / "session-2026-12-01T14-03-b425c916.jsonl"
    path.write_bytes(body)
    assert 128 << 10 < len(body) < listing.WHOLE_READ
    ref = adapter.ref_for(path, "/w/app")
    assert ref.messages == resolve(list(read_lines(path))).counted() == 390 * 2   # (u1, g1 redefine PLAIN's)
    assert ref.title == "Say hello." and "1 broken line" in ref.state
    big = tmp_path / "session-2026-12-01T14-04-c425c916.jsonl"
    big.write_bytes(PLAIN + b"".join(turns) * 4)
    assert big.stat().st_size > listing.WHOLE_READ
    assert adapter.ref_for(big, "/w/app").messages is None        # its two ends only, as before
