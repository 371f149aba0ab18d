"""What a Codex listing parses (docs/scan-show.md, "What a Codex listing reads"): line 1, the head lines
that hold the title and cwd, every line holding the message marker, and a torn last line. Its broken
lines are those among them; ``show`` names every broken line of the session."""
from __future__ import annotations

import json

from clirun import histmig
from codex_fixtures import TS, dumps, rollout, tid, turn, write_rollout
from hypothesis import given, settings
from hypothesis import strategies as st

from histmig.tools.codex import lines

TORN_EVENT = b'{"timestamp":"x","type":"event_msg","payload":{"type":"tok\n'     # no marker: not parsed
TORN_MESSAGE = b'{"timestamp":"x","type":"response_item","payload":{"type":"message","role":"user"\n'
FILLER = dumps({"timestamp": TS, "type": "event_msg", "payload": {"type": "agent_message", "message": "y" * 4000}})


def scan(*extra) -> list[dict]:
    res = histmig("scan", "--json", "--tool", "codex", *extra)
    assert res.exit_code == 0, res.stderr
    return json.loads(res.stdout)["sessions"]


def _damaged(t: str) -> bytes:
    """A torn event in the head, a torn message line past 128 KB and a torn last line."""
    body = rollout(t, turns=1) + TORN_EVENT + FILLER * 40 + TORN_MESSAGE
    body += b"".join(dumps(obj) for obj in turn(5, cwd="/w/later"))
    return body + b'{"timestamp":"' + TS.encode() + b'","type":"event_msg","payload":{"type":"token_count"'


def test_a_listing_names_the_broken_lines_it_parses_and_show_names_them_all(isolated_homes):
    write_rollout(isolated_homes["CODEX_HOME"], tid(1), _damaged(tid(1)))
    [ref] = scan("--no-index")
    assert "2 broken lines" in ref["state"]            # the torn message line and the torn last line
    assert ref["cwd"] == "/w/later" and ref["title"].startswith("fix the bug")
    shown = histmig("show", tid(1), "--format", "text")
    assert "(3 unreadable line(s) kept byte-for-byte)" in shown.stdout      # the torn event in the head too
    named = histmig("-v", "show", tid(1)).stdout
    assert named.count("unreadable, kept as is") == 3


def test_a_grown_rollout_keeps_its_broken_count_when_the_count_resumes(isolated_homes):
    path = write_rollout(isolated_homes["CODEX_HOME"], tid(2), _damaged(tid(2))[:-80] + b"\n")
    first = scan()[0]
    with open(path, "ab") as fh:
        fh.write(TORN_MESSAGE + b"".join(dumps(obj) for obj in turn(6)))
    grown = scan()[0]
    assert grown["state"] != first["state"] and grown == scan("--no-index")[0]
    assert grown["messages"] == first["messages"] + 2


def test_a_compressed_rollout_is_listed_by_the_same_rule(isolated_homes):
    home = isolated_homes["CODEX_HOME"]
    plain = write_rollout(home, tid(3), _damaged(tid(3)))
    packed = write_rollout(home, tid(4), _damaged(tid(3)), compressed=True)
    refs = {r["path"]: r for r in scan("--no-index")}
    a, b = refs[str(plain)], refs[str(packed)]
    assert (a["messages"], a["title"]) == (b["messages"], b["title"])
    assert [s for s in a["state"] if "broken" in s] == [s for s in b["state"] if "broken" in s]


TEXTS = st.text(alphabet=" \t\n<#aAEGIN_evnironmt", max_size=30)
PREFIXED = st.sampled_from(lines.INJECTED_PREFIXES).flatmap(lambda p: TEXTS.map(lambda t: p + t))
PARTS = st.lists(st.one_of(st.fixed_dictionaries({"type": st.just("input_text"), "text": st.one_of(TEXTS, PREFIXED)}),
                           st.just({"type": "input_image"}), st.just("x"), st.just({"text": 5})), max_size=4)


@settings(max_examples=300, deadline=None)
@given(content=st.one_of(PARTS, TEXTS, PREFIXED, st.none()))
def test_the_injected_check_of_a_count_equals_the_joined_texts_check(content):
    item = {"type": "message", "role": "user", "content": content}
    assert lines._opens_injected(item) == lines.is_injected(lines.message_text(item))


def _counted_before(obj) -> bool:
    """``is_conversation_message`` as it read before its fast path for envelope lines."""
    t = lines.line_type(obj)
    item = lines.payload(obj) if t == "response_item" else (obj if t == "legacy:message" else None)
    if not item or item.get("type") != "message" or item.get("role") not in ("user", "assistant"):
        return False
    return not (item.get("role") == "user" and lines.is_injected(lines.message_text(item)))


SCALARS = st.one_of(st.none(), st.integers(), st.sampled_from(["message", "response_item", "user", "assistant",
                                                               "developer", "event_msg", "x"]))
ITEMS = st.fixed_dictionaries({}, optional={"type": SCALARS, "role": SCALARS, "content": st.one_of(PARTS, TEXTS)})
LINES = st.one_of(
    st.fixed_dictionaries({}, optional={"type": SCALARS, "payload": st.one_of(ITEMS, SCALARS), "timestamp": SCALARS,
                                        "role": SCALARS, "content": st.one_of(PARTS, TEXTS), "record_type": SCALARS,
                                        "id": SCALARS}),
    SCALARS, st.lists(SCALARS, max_size=2))


@settings(max_examples=500, deadline=None)
@given(obj=LINES)
def test_a_message_is_counted_as_before_its_fast_path(obj):
    assert lines.is_conversation_message(obj) == _counted_before(obj)


PIECES = st.lists(st.sampled_from([b'"type"', b'"message"', b":", b" ", b"\t", b"\r", b"\n", b'"', b"x",
                                   b'"subtype"', b'"messages"', b"{", b","]), max_size=30).map(b"".join)


@settings(max_examples=500, deadline=None)
@given(data=PIECES, pos=st.integers(0, 10))
def test_the_value_mark_finds_what_the_regex_finds_within_a_line(data, pos):
    """``ValueMark`` is ``"type"[ \\t\\r]*:[ \\t\\r]*"message"`` (no newline inside a match: a line is
    never cut), found from the value: the same spans as that regex."""
    import re
    from histmig.jsonio.marks import ValueMark
    want = [m.span() for m in re.finditer(rb'"type"[ \t\r]*:[ \t\r]*"message"', data[:])
            if m.start() >= pos]
    assert list(ValueMark(b"type", b"message").spans(data, pos, len(data))) == want
    assert list(ValueMark(b"type", b"message").spans(b'"type":"message"', 3, 16)) == []   # starts before pos
