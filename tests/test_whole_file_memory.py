"""Bounded memory for the manifest layout's listing and the whole-file JSON readers (Cline, Gemini's older
``.json``): "read only what you use" (README.md).

- The manifest listing read a session's transcript whole, five times over (a count, the broken lines,
  the title, the tail, the checkpoints' bound): two 20 MiB lines made ``scan`` peak at 248 MB (100 MB
  of small lines took 17 s). It now reads the transcript once, parsing lines up to 1 MiB, and tells a
  longer line's role and title from its first bytes (tools/manifest/adapter.py ``survey``): 21 MB.
- Whole-file readers had no record limit: a Cline message or a Gemini ``.json`` message of 20 MiB was
  loaded (``show`` 245 MB). One over 16 MiB is now refused as a JSONL line over it is
  (``jsonl.record_too_big``: the file and the message's place), never held (jsonio/jsonpull.py
  ``limit``); a Cline manifest holding a prompt of 20 MiB (twice: ``prompt`` and the title) is listed
  member by member (139 MB -> 21 MB); a Gemini ``.json`` is listed in one pass (79 MB -> 21 MB).
- Below the limit, ``show``/``export`` of one session hold one copy of a long text at a time: the pull
  reader lets go of its buffer and the message's bytes before the record is made, and the JSON and
  Markdown writers encode a long text alone (jsonstream.spread), not inside its record's text and
  again indented (a 15 MiB Cline message: ``show --format native`` 189 -> 111 MB, ``json`` 174 -> 96,
  ``--format markdown`` 189 -> 112, ``export --to html`` 158 -> 112)."""
from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import orjson
import pytest

from memgen import peak_rss
from test_cline_memory import SID, big_cline_session

MANIFEST_ID = "3f9c2a1e-5b7d-4c1a-9e2f-8a6b0c4d1e7f"
GEMINI_ID = "1962fdfc-0000-4000-8000-000000000001"
LOREM = "lorem ipsum dolor sit amet "


def text_of(size: int, first: str = "") -> str:
    return first + (LOREM * (size // len(LOREM) + 1))[:size]


def peak_mb(args: list, env: dict, ok: tuple[int, ...] = (0,)) -> tuple[int, str]:
    res = peak_rss([str(a) for a in args], env)
    assert res["rc"] in ok, (args, res["stderr"])
    return res["maxrss_kb"] // 1024, res["stderr"]


def env_of(isolated_homes: dict) -> dict[str, str]:
    import os
    return {**os.environ, **{k: str(v) for k, v in isolated_homes.items()}}


# ---- the manifest layout ---------------------------------------------------------------------------

def manifest_session(claude: Path, lines: list[dict | bytes]) -> Path:
    d = claude / "projects" / "-w-app" / "sessions" / MANIFEST_ID
    d.mkdir(parents=True, exist_ok=True)
    (d / "meta.json").write_text(json.dumps({"sessionId": MANIFEST_ID, "projectPath": "/w/app", "cwd": "/w/app",
                                             "createdAt": "2026-10-20T08:00:00.000Z",
                                             "updatedAt": "2026-10-20T08:05:12.000Z"}, indent=2) + "\n")
    with open(d / "transcript.jsonl", "wb") as fh:
        for line in lines:
            fh.write(line if isinstance(line, bytes) else orjson.dumps(line) + b"\n")
    return d / "transcript.jsonl"


def turn(role: str, text: str) -> dict:
    content = text if role == "user" else [{"type": "text", "text": text}]
    return {"ts": "2026-10-20T08:00:01.000Z", "role": role, "payload": {"message": {"role": role, "content": content}}}


def test_a_manifest_listing_reads_long_lines_by_their_first_bytes(isolated_homes, monkeypatch):
    """``survey`` says of lines over its parse limit what a full parse says: the same count, title and
    health; a torn long last line is a torn tail; only a line over the 64 MiB line limit is broken."""
    from histmig.tools.manifest import adapter as mf
    claude = Path(isolated_homes["CLAUDE_CONFIG_DIR"])
    samples = [
        [turn("system", "started"), turn("user", "  <command-name>x</command-name>"), turn("user", 'é "long" ask\n'),
         turn("assistant", "answer"), {"ts": "t", "role": "tool", "payload": {"toolUseId": "a", "output": "o"}}, b"\n",
         b"[1]\n", {"role": "other", "payload": {}}, turn("user", "later")],
        [turn("assistant", "first"), turn("user", "x" * 300), b'{"ts":"t","role":"user","payload":{"message":{"ro'],
    ]
    for lines in samples:
        path = manifest_session(claude, lines)
        whole = mf.stream(path.parent, strict=False)
        count, broken, title = mf.message_count(whole.records), sum(r.opaque for r in whole.records), whole.title
        for limit in (1 << 20, 60):
            monkeypatch.setattr(mf, "LIST_LINE_MAX", limit)
            found, ref = mf.survey(path), mf.ref_for(path.parent)
            assert (found.messages, found.title, ref.messages, ref.title) == (count, title, count, title[:200])
            if limit > 60:       # (a long line is not judged: broken only past the 64 MiB line limit)
                assert found.broken == broken
    torn = manifest_session(claude, [turn("user", "q"), b'{"ts":"t","role":"assistant","payload":{"text":"' + b"a" * 200])
    monkeypatch.setattr(mf, "LIST_LINE_MAX", 60)
    assert mf.survey(torn).torn_tail and "transcript tail is not valid JSON" in mf.ref_for(torn.parent).state


def test_scan_of_a_manifest_session_of_two_20_mib_lines_stays_flat(isolated_homes):
    """Before: 248 MB (the transcript parsed whole five times); after: ~21 MB, as for an empty one."""
    manifest_session(Path(isolated_homes["CLAUDE_CONFIG_DIR"]),
                     [turn("user", text_of(20 << 20, "  the question ")), turn("assistant", text_of(20 << 20))])
    env = env_of(isolated_homes)
    mb, _ = peak_mb(["scan", "--tool", "manifest", "--no-index"], env)
    assert mb < 50, f"scan: peak RSS {mb} MB"
    res = orjson.loads(__import__("subprocess").run(
        [__import__("sys").executable, "-m", "histmig", "scan", "--tool", "manifest", "--json", "--no-index"],
        env=env, capture_output=True, check=True).stdout)["sessions"][0]
    assert res["messages"] == 2 and res["title"].startswith("the question lorem") and res["state"] == "ok"


def test_a_manifest_file_over_the_record_limit_is_named_not_read(isolated_homes):
    from histmig.tools.manifest import adapter as mf
    path = manifest_session(Path(isolated_homes["CLAUDE_CONFIG_DIR"]), [turn("user", "q")])
    cps = path.parent / "checkpoints"
    cps.mkdir()
    with open(cps / "cp-0001.json", "wb") as fh:
        fh.truncate(mf.RECORD_MAX_BYTES + 1)                     # sparse: no 16 MiB written
    raw, value, err = mf.read_json_file(cps / "cp-0001.json")
    assert raw is None and value is None and "over the 16 MiB limit" in err
    assert any("cp-0001.json is over the 16 MiB limit" in s for s in mf.ref_for(path.parent).state)


# ---- Cline -------------------------------------------------------------------------------------------

def test_a_cline_message_over_16_mib_is_refused_without_being_read(isolated_homes):
    """``show`` names the file and the message (exit 1), ``convert`` skips the session (exit 3), as for a
    JSONL line over the limit; neither holds the message (before: show 245 MB)."""
    data = Path(isolated_homes["CLINE_DIR"]) / "data"
    big_cline_session(data, "/w/app", size=21 << 20, huge_bytes=20 << 20)
    env = env_of(isolated_homes)
    mb, err = peak_mb(["show", SID], env, (1,))
    assert ".messages.json:3: record of 2097" in err and "over the 16 MiB limit" in err, err
    assert mb < 60, f"show: peak RSS {mb} MB"
    mb, err = peak_mb(["convert", "--to", "codex", SID], env, (3,))
    assert "over the 16 MiB limit" in err and mb < 60, (mb, err)
    mb, _ = peak_mb(["scan", "--tool", "cline", "--no-index"], env)
    assert mb < 50, f"scan: peak RSS {mb} MB"


def test_show_and_export_of_a_15_mib_cline_message_hold_few_copies(isolated_homes, tmp_path):
    """Under the limit: the message's text is held by its record and written a copy at a time."""
    data = Path(isolated_homes["CLINE_DIR"]) / "data"
    big_cline_session(data, "/w/app", size=16 << 20, huge_bytes=15 << 20)
    env = env_of(isolated_homes)
    for args in (["show", SID, "--format", "native"], ["show", SID, "--format", "json"],
                 ["show", SID, "--format", "markdown"], ["export", "--to", "html", SID, "--out", tmp_path / "h"]):
        mb, _ = peak_mb(args, env)
        assert mb < 150, f"{args}: peak RSS {mb} MB"       # before: 158 to 189 MB


def test_a_cline_manifest_holding_a_20_mib_prompt_is_listed_member_by_member(isolated_homes):
    data = Path(isolated_homes["CLINE_DIR"]) / "data"
    path = big_cline_session(data, "/w/app", size=1 << 20, huge_bytes=1000)
    manifest = path.with_name(f"{SID}.json")
    m = json.loads(manifest.read_text())
    m["prompt"] = m["metadata"]["title"] = text_of(20 << 20, "é ")
    manifest.write_text(json.dumps(m, ensure_ascii=False, indent=2) + "\n")
    env = env_of(isolated_homes)
    mb, _ = peak_mb(["scan", "--tool", "cline", "--no-index"], env)
    assert mb < 50, f"scan: peak RSS {mb} MB"                # before: 139 MB
    from histmig.tools.cline import adapter as cline
    ref = cline.ref_for(path)
    assert ref.title.startswith("é lorem ipsum") and len(ref.title) == 200 and ref.cwd == "/w/app"
    assert ref.provider == "openai-compatible" and ref.state == []


# ---- Gemini's older whole-file .json -----------------------------------------------------------------

def gemini_legacy(home: Path, huge: int, first_prompt: str = "first question") -> Path:
    from histmig.cli.samples import samples_root
    gemini = home / ".gemini"
    shutil.copytree(samples_root() / "gemini" / "plain", gemini)
    chats = next(gemini.glob("tmp/*/chats"))
    for p in chats.iterdir():
        p.unlink()
    ts = "2026-12-01T14:03:20.000Z"
    msgs = [{"id": "u0", "timestamp": ts, "type": "user", "content": [{"text": first_prompt}]},
            {"id": "a0", "timestamp": ts, "type": "gemini", "content": text_of(huge), "model": "gemini-2.5-flash"},
            {"id": "u1", "timestamp": ts, "type": "user", "content": [{"text": "next"}]}]
    doc = {"sessionId": GEMINI_ID, "projectHash": "x", "startTime": ts, "lastUpdated": ts, "messages": msgs}
    path = chats / "session-2026-12-01T14-03-1962fdfc.json"
    path.write_text(json.dumps(doc, indent=2))
    return path


def test_a_gemini_json_is_listed_in_one_bounded_pass(isolated_homes, monkeypatch):
    from histmig.tools.gemini import adapter as gem, legacy
    path = gemini_legacy(Path(isolated_homes["GEMINI_CLI_HOME"]), 2000, "  a long first question " * 100)
    want = gem.ref_for(path).to_dict()
    monkeypatch.setattr(legacy, "LIST_MAX", 200)          # every message read by its first bytes
    got = gem.ref_for(path).to_dict()
    assert got == want and want["messages"] == 3 and want["title"].startswith("a long first question")


def test_a_gemini_json_message_over_16_mib_is_refused_and_the_listing_stays_flat(isolated_homes):
    gemini_legacy(Path(isolated_homes["GEMINI_CLI_HOME"]), 20 << 20)
    env = env_of(isolated_homes)
    mb, _ = peak_mb(["scan", "--tool", "gemini", "--no-index"], env)
    assert mb < 50, f"scan: peak RSS {mb} MB"                # before: ~100 MB
    mb, err = peak_mb(["show", "1962fdfc"], env, (1,))
    assert ".json:2: record of 2097" in err and "over the 16 MiB limit" in err, err
    assert mb < 60, f"show: peak RSS {mb} MB"


# ---- the writers' long texts ---------------------------------------------------------------------------

def test_spread_values_are_written_to_the_same_bytes():
    from histmig.jsonio.jsonstream import OPTIONS, Lazy, spread, write_json
    rnd = random.Random(3)

    def value(d: int = 0):
        r = rnd.random()
        if d > 3 or r < 0.3:
            return rnd.choice(["x" * rnd.randint(0, 40), 12, None, "é\n" * rnd.randint(0, 30), 3.5, True, [], {}])
        if r < 0.65:
            return [value(d + 1) for _ in range(rnd.randint(0, 5))]
        return {f"k{i}": value(d + 1) for i in range(rnd.randint(0, 5))}
    for _ in range(500):
        items = [value() for _ in range(3)]
        out: list[str] = []
        write_json({"x": Lazy([spread(i, rnd.randint(1, 30)) for i in items]), "y": 1}, out.append)
        assert "".join(out) == orjson.dumps({"x": items, "y": 1}, option=OPTIONS).decode()
    assert spread({"a": "short"}) == {"a": "short"} and spread("x" * 70000) == "x" * 70000


@pytest.mark.parametrize("chunk", [1, 7, 64])
def test_pull_pieces_over_the_limit_are_measured_not_held(chunk):
    import io
    from histmig.jsonio.jsonpull import pieces
    rnd = random.Random(chunk)

    def value(d: int = 0):
        r = rnd.random()
        if d > 3 or r < 0.3:
            return rnd.choice(['a\\"b\\\\', 'x"y', "\\", 12, None, "é" * rnd.randint(0, 50), 3.5, True, "{[", "]}"])
        if r < 0.65:
            return [value(d + 1) for _ in range(rnd.randint(0, 5))]
        return {f'k{i}"': value(d + 1) for i in range(rnd.randint(0, 5))}
    for _ in range(300):
        doc = {"a": value(), "messages": [value() for _ in range(rnd.randint(0, 8))], "z": value()}
        data = json.dumps(doc, indent=rnd.choice([None, 2]), ensure_ascii=False).encode()
        full = list(pieces(io.BytesIO(data), "messages"))
        limit = rnd.randint(1, 60)
        limited = list(pieces(io.BytesIO(data), "messages", chunk=chunk, limit=limit))
        assert [(p.key, p.start, p.end, p.item) for p in full] == [(p.key, p.start, p.end, p.item) for p in limited]
        for a, b in zip(full, limited):
            assert a.raw == data[a.start:a.end]
            assert b.oversize == (a.size > limit) and (b.oversize or b.raw == a.raw)
