"""Issue 18, ``histmig search``: a phrase typed in a real Codex and a real Claude Code session (the
recorded samples, histmig/samples/README.md) is found in user text, assistant text and tool output;
smart case, regex, filters, -l, --json, JSON-escaped phrases on disk, broken lines (docs/search.md)."""
from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest

from clirun import histmig
from histmig.cli import samples
from histmig.verbs.search import matches
from histmig.verbs.search.query import Query, regex_runs

OLD = "/tmp/histmig-rec/work/app"


@pytest.fixture(scope="module")
def home(tmp_path_factory) -> Path:
    h = tmp_path_factory.mktemp("search") / "h"
    samples.install(h)
    return h


def run(home: Path, *args: str):
    return histmig("--home", home, "--state-dir", home.parent / "state", "search", *args)


def hits(home: Path, *args: str) -> list[dict]:
    r = run(home, *args, "--json")
    assert r.exit_code in (0, 1), r.stderr
    doc = orjson.loads(r.stdout)
    return doc.get("matches", doc.get("sessions"))


# ---- acceptance: real-client sessions ---------------------------------------------------------

@pytest.mark.parametrize("tool", ["codex", "claude-code"])
def test_finds_a_typed_phrase_in_user_assistant_and_tool_output(home, tool):
    user = hits(home, "RUN: echo hello", "--tool", tool)
    assert [(h["role"], h["kind"]) for h in user] == [("user", "text")]
    assert user[0]["snippet"] == "RUN: echo hello from the tool" and user[0]["spans"] == [[0, 15]]
    answer = hits(home, "the tool finished", "--tool", tool)
    assert {(h["role"], h["kind"]) for h in answer} == {("assistant", "text")}
    assert not [h for h in hits(home, "hello from the tool", "--tool", tool) if h["kind"] != "text"]
    with_tools = hits(home, "hello from the tool", "--tool", tool, "--tools")
    kinds = {h["kind"] for h in with_tools}
    assert {"text", "tool_call", "tool_result"} <= kinds
    out = [h for h in with_tools if h["kind"] == "tool_result"]
    assert out and out[0]["role"] == "tool" and out[0]["snippet"] == "hello from the tool"
    assert all(h["tool"] == tool and h["cwd"] == OLD for h in with_tools)


def test_text_output_groups_hits_by_session_and_exit_codes(home):
    r = run(home, "the tool finished", "--tool", "codex")
    assert r.exit_code == 0
    blocks = r.stdout.strip().split("\n\n")
    assert blocks[0].startswith("codex  01a22acf-")
    assert "  assistant    FAKE-ANSWER: the tool finished." in blocks[0]
    assert blocks[-1].startswith("2 matches in 2 of ")
    assert "\x1b[" not in r.stdout                          # not a terminal: no colour
    coloured = run(home, "the tool finished", "--tool", "codex", "--color", "always")
    assert "\x1b[31m\x1b[1mthe tool finished\x1b[0m" in coloured.stdout
    none = run(home, "no such phrase anywhere")
    assert none.exit_code == 1 and none.stdout.startswith("0 matches in 0 of ")
    assert run(home, "").exit_code == 2
    assert run(home, "(", "--regex").exit_code == 2


def test_a_compressed_rollout_is_searched(home):
    found = hits(home, "this rollout gets compressed", "--tool", "codex")
    assert [(h["role"], h["path"].endswith(".jsonl.zst")) for h in found] == [("user", True), ("assistant", True)]


def test_every_tool_is_searched(home):
    tools = {h["tool"] for h in hits(home, "hello from the tool", "-l")}
    assert {"codex", "claude-code", "gemini", "opencode", "cline", "copilot", "qwen", "pi"} <= tools


# ---- case, regex, filters, -l ----------------------------------------------------------------

def test_smart_case(home):
    assert hits(home, "fake-answer: the tool", "--tool", "codex")              # lower case: any case
    assert not hits(home, "Fake-answer: the tool", "--tool", "codex")          # an upper-case letter: exact
    assert hits(home, "Fake-answer: the tool", "--tool", "codex", "-i")
    assert not hits(home, "fake-answer: the tool", "--tool", "codex", "-s")
    assert hits(home, "FAKE-ANSWER: the tool", "--tool", "codex", "-s")


def test_regex(home):
    found = hits(home, r"tool fin\w+\.$", "--regex", "--tool", "claude-code")
    assert found and all(h["snippet"].endswith("the tool finished.") for h in found)
    assert hits(home, r"hello (from|to) the", "-E", "--tool", "codex")
    assert not hits(home, r"hello (to|at) the", "-E", "--tool", "codex")
    assert hits(home, r"\WRUN\W", "-E", "--tool", "codex") == []        # \W is a class, not an upper-case letter


def test_filters_are_scans(home):
    unicode_cwd = "/tmp/histmig-rec/work/my app"
    found = hits(home, "hello", "--cwd", unicode_cwd)
    assert found and all(h["cwd"].startswith(unicode_cwd) for h in found)
    assert not hits(home, "hello", "--since", "2999-01-01")
    assert not hits(home, "hello", "--until", "2000-01-01")
    assert hits(home, "hello", "--until", "2999-01-01", "--since", "3650d")
    assert {h["tool"] for h in hits(home, "hello", "--tool", "claude")} == {"claude-code"}


def test_files_with_matches_lists_sessions_once(home):
    r = run(home, "-l", "hello", "--tool", "codex")
    lines = r.stdout.splitlines()
    assert r.exit_code == 0 and lines and all(ln.startswith("codex  01a22acf-") for ln in lines)
    assert len(lines) == len(set(lines))
    sessions = hits(home, "-l", "hello", "--tool", "codex")
    assert len(sessions) == len(lines) and set(sessions[0]) == {"tool", "id", "short_id", "path", "cwd",
                                                                "updated", "title"}


def test_short_ids_are_unique_across_every_tool(home):
    ids = {h["id"]: h["short_id"] for h in hits(home, "hello", "-l")}
    assert all(full.startswith(short) for full, short in ids.items())
    assert len(set(ids.values())) == len(ids)


# ---- JSON-escaped text, broken lines -----------------------------------------------------------

def _codex_file(home: Path) -> Path:
    return sorted((home / ".codex" / "sessions").rglob("rollout-*01a22acf-1803*.jsonl"))[0]


def _user_line(text: str) -> bytes:
    # Python's json escapes every non-ASCII character and the quote: the bytes differ from the text
    obj = {"timestamp": "2026-11-30T05:00:00.000Z", "type": "response_item",
           "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}}
    return json.dumps(obj).encode() + b"\n"


@pytest.fixture
def edited(tmp_path) -> Path:
    h = tmp_path / "h"
    samples.install(h, tools=("codex",))
    f = _codex_file(h)
    with open(f, "ab") as fh:
        fh.write(_user_line('a "quoted" café au lait, データ\\path'))
        fh.write(b'{"timestamp":"2026-11-30T05:00:01.000Z","type":"response_item","payload":{"type":"messa'
                 b'ge","role":"user","content":[{"type":"input_text","text":"zebra crossing cut sh\n')
        fh.write(_user_line("the zebra crossing again"))
    return h


@pytest.mark.parametrize("phrase", [('"quoted" café',), ("CAFÉ AU", "-i"), ("Café au",), ("データ\\path",),
                                    ("au lait, デ",)])
def test_json_escaped_phrases_are_found(edited, phrase):
    found = hits(edited, *phrase, "--tool", "codex")
    expected = 0 if phrase == ("Café au",) else 1            # an upper-case letter: case-sensitive
    assert len(found) == expected and all("café au lait" in h["snippet"] for h in found), phrase


def test_a_broken_line_is_counted_and_named_and_the_search_goes_on(edited):
    r = run(edited, "zebra crossing", "--tool", "codex")
    assert r.exit_code == 0 and "the zebra crossing again" in r.stdout
    f = _codex_file(edited)
    n = f.read_bytes().count(b"\n") - 1
    assert f"warning: search-broken-line: {f}:{n}: " in r.stderr
    doc = orjson.loads(run(edited, "zebra crossing", "--json").stdout)
    assert doc["summary"]["broken_lines"] == 1 and doc["summary"]["hits"] == 1
    assert doc["summary"]["warnings"][0]["line"] == n


# ---- the query and the matcher -----------------------------------------------------------------

def test_the_needle_holds_only_bytes_a_json_writer_never_escapes():
    assert Query.make("connection refused").needle == b"connection refused"
    assert Query.make("Say Hello").needle == b"Say Hello" and not Query.make("Say Hello").ignore_case
    assert Query.make("Say Hello", case="ignore").needle == b"say hello"
    assert Query.make('he said "stop right now" twice').needle == b"stop right now"
    assert Query.make("データ").needle is None
    assert Query.make("café au lait").needle == b" au lait"
    assert Query.make("src/app/main.py").needle == b"main.py"
    assert Query.make(r"timeout after \d+s", regex=True).needle == b"timeout after "
    assert Query.make(r"colou?r scheme", regex=True).needle == b"r scheme"
    assert Query.make(r"a|b", regex=True).needle is None


def test_regex_runs_are_conservative():
    assert regex_runs(r"foo(bar)?baz") == ["foo", "baz"]
    assert regex_runs(r"x[abc]+yz") == ["x", "yz"]
    assert regex_runs(r"ab+c") == ["ab", "c"]
    assert regex_runs(r"a\.b{2}c") == ["a.", "c"]
    assert regex_runs(r"(?i)abc") == []


def test_snippets_cut_long_lines_around_the_match_and_mark_every_match():
    text = "x" * 500 + " needle here and needle there " + "y" * 500 + "\nsecond needle line"
    out = list(matches(Query.make("needle").matcher, text))
    assert len(out) == 2
    snippet, spans = out[0]
    assert len(snippet) <= 160 and len(spans) == 2 and all(snippet[a:b] == "needle" for a, b in spans)
    assert out[1] == ("second needle line", [(7, 13)])


# ---- the byte scan: every line holding the needle, nothing else, across block edges ----------

@pytest.mark.parametrize("fold", [False, True])
def test_candidate_lines_are_exactly_the_lines_holding_the_needle(tmp_path, monkeypatch, fold):
    import random

    from histmig.verbs.search import lines as lines_module
    from histmig.verbs.search.finder import Finder
    monkeypatch.setattr(lines_module, "BLOCK", 97)            # lines cross block edges all the time
    rng = random.Random(7)
    words = [b"ok", b"okay", b"Step", b"step", b"7", b"done", b"st", b"ep 7", b"x = 1\\n", b'"', b"DONE"]
    rows = [b" ".join(rng.choice(words) for _ in range(rng.randint(0, 40))) for _ in range(400)]
    data = b"\n".join(rows)                                     # the last line has no newline
    f = tmp_path / "s.jsonl"
    f.write_bytes(data)
    needle = b"step 7 done"
    finder = Finder(needle, fold)
    got = [(ln.offset, ln.raw) for ln in lines_module.candidate_lines(f, finder)]
    want, at = [], 0
    for row in rows:
        if needle in (row.lower() if fold else row):
            want.append((at, row + (b"\n" if at + len(row) < len(data) else b"")))
        at += len(row) + 1
    assert got == want and want
    first = want[-1][0]
    assert lines_module.line_number(f, first) == data[:first].count(b"\n") + 1


def test_a_common_rare_byte_falls_back_to_the_plain_scan():
    from histmig.verbs.search.finder import Finder
    for fold in (False, True):
        f = Finder(b"needle", fold)
        block = b"e" * 100_000 + b"NEEDLE needle"
        f.start_block(block)                                   # tuned on this block: 'n' or 'l' is rarest
        f.budget = 0                                           # as if the rare byte was common
        assert f.first(block, 0, len(block)) == (100_000 if fold else 100_007)


def test_a_byte_that_turns_common_is_chosen_again():
    from histmig.verbs.search.finder import Finder
    for fold in (False, True):
        f = Finder(b"step 7 done", fold)
        f.start_block(b"7" * 1000 + b"step")                  # tuned where ' ' is rare
        assert f.needle[f.at:f.at + 1] == b" "
        block = b" " * 300_000 + b"7" + b"x" * 100 + b"step 7 done"
        f.start_block(block)
        assert f.first(block, 0, len(block)) == len(block) - 11
        assert f.needle[f.at:f.at + 1] != b" " and f.budget > 0 and f.low is None          # no re fallback


# ---- read on every CPU: the same output -------------------------------------------------------

@pytest.mark.parametrize("args", [("hello",), ("hello", "--tools"), ("-l", "hello"), ("-s", "the tool finished"),
                                  ("--regex", "h.llo", "--tools", "--tool", "codex"), ("-i", "RUN: ECHO"),
                                  ("--no-index", "hello"), ("--no-index", "-l", "the tool finished")])
def test_a_search_shared_with_a_worker_prints_what_one_process_prints(home, monkeypatch, args):
    from histmig.core import forkmap
    import histmig.verbs.search as search
    alone = [run(home, *args, *extra) for extra in ((), ("--json",))]
    monkeypatch.setattr(search, "MIN_FORK", 0)
    monkeypatch.setattr(forkmap, "cpus", lambda: 2)
    kills, reap = [], forkmap._reap
    monkeypatch.setattr(forkmap, "_reap", lambda pid, fd, *, kill: (kills.append(kill), reap(pid, fd, kill=kill)))
    shared = [run(home, *args, *extra) for extra in ((), ("--json",))]
    for a, b in zip(alone, shared):
        assert (a.exit_code, a.stdout, a.stderr) == (b.exit_code, b.stdout, b.stderr)
    assert alone[0].stdout.strip()
    assert kills and not any(kills)          # each worker waited for at the stream's end, never killed


def test_broken_lines_read_by_a_worker_are_named_as_one_process_names_them(edited, monkeypatch):
    from histmig.core import forkmap
    import histmig.verbs.search as search
    alone = run(edited, "zebra crossing")
    monkeypatch.setattr(search, "MIN_FORK", 0)
    monkeypatch.setattr(forkmap, "cpus", lambda: 2)
    shared = run(edited, "zebra crossing")
    assert (alone.exit_code, alone.stdout, alone.stderr) == (shared.exit_code, shared.stdout, shared.stderr)
    assert "search-broken-line" in shared.stderr


def test_a_finder_paused_in_one_block_finds_right_after_another_one():
    from histmig.verbs.search.finder import Finder
    f = Finder(b"needle", True)
    a = b"e" * 100_000 + b"NEEDLE x needle"
    b = b"n" * 50_000 + b"no match here"
    f.start_block(a)
    f.budget = 0                                               # a's rest scanned in a lower-cased copy
    assert f.first(a, 0, len(a)) == 100_000
    f.start_block(b)                                           # another file read meanwhile (a worker's item redone)
    f.budget = 0
    assert f.first(b, 0, len(b)) == -1
    assert f.first(a, 100_001, len(a)) == 100_009              # back in a: its own copy, not b's


# ---- printing: a match's time, converted once per timestamp text ------------------------------

def test_a_match_time_is_printed_as_its_conversion_whatever_was_printed_before(monkeypatch):
    # cli/search.py keeps each timestamp's printed minute (``local_minute``, an lru_cache): the line is
    # the one a fresh conversion gives, for repeated, new, offset, odd and missing times
    import time
    from types import SimpleNamespace
    from histmig.cli import search as cli_search
    monkeypatch.setenv("TZ", "Asia/Kolkata")
    time.tzset()
    cli_search.local_minute.cache_clear()
    try:
        stamps = ["2026-11-29T10:00:00.000Z", "2026-11-29T10:00:59.999Z", "2026-11-29T10:00:00.000Z",
                  "2026-03-08T01:59:30+05:00", "not a time", None, "", "2026-11-29T23:59:59Z",
                  "2026-11-29T10:00:00.000Z", "1850-01-01T00:00:00Z"]
        for ts in stamps:
            hit = SimpleNamespace(timestamp=ts, kind="text", role="assistant", snippet="step 7 done", spans=[(0, 4)])
            when = cli_search.local_minute.__wrapped__(ts)
            assert cli_search.match_line(hit, False) == f"  {when}  assistant    step 7 done"
            info = cli_search.local_minute.cache_info()
            assert info.currsize <= info.maxsize == 4096
        assert cli_search.local_minute("2026-11-29T10:00:00.000Z") == "2026-11-29 15:30"
        assert cli_search.local_minute(None) == "-"
    finally:
        monkeypatch.undo()
        time.tzset()
        cli_search.local_minute.cache_clear()
