"""Properties of THE line editor (histmig/jsonio/lineedit.py), for generated JSON texts and edits:
the patched line parses to the intended object, every byte outside the edited values is identical
(each patch covers exactly one value's bytes, or nothing for an insert), and padding keeps the length.

Keys come from a small alphabet that includes the ones the fast paths search for, quotes and
backslashes, so the same key at several depths and a key's text inside a string value (the cases
where a byte search is ambiguous and the scanner must take over) are generated often.
"""
from __future__ import annotations

import json

import orjson
import pytest
from hypothesis import assume, given, settings, strategies as st

from histmig.jsonio.jsonedit import EditError, find_span
from histmig.jsonio.lineedit import INSERT, PAD, REPLACE, Edit, edit_line, edit_strings, intended, splice

KEYS = st.sampled_from(["a", "b", "cwd", "model_provider", "type", 'q"k', "back\\slash", "é", "a:"]) | st.text(max_size=4)
STRINGS = st.sampled_from(["/a/app", "openai", '"model_provider":', "\\", "x\"y", "é/ü", ""]) | st.text(max_size=8)
SCALARS = (st.none() | st.booleans() | st.integers(-2**63, 2**63 - 1)
           | st.floats(allow_nan=False, allow_infinity=False) | STRINGS)
VALUES = st.recursive(SCALARS, lambda c: st.lists(c, max_size=3) | st.dictionaries(KEYS, c, max_size=4),
                      max_leaves=12)
OBJECTS = st.dictionaries(KEYS, VALUES, min_size=1, max_size=5)
STYLES = st.sampled_from([{"separators": (",", ":")}, {"separators": (", ", ": ")}, {"indent": 2},
                          {"separators": (",", ":"), "ensure_ascii": False}])
BASES = st.sampled_from([0, 7, 1 << 20])


def text_of(obj, style) -> bytes:
    kw = {"ensure_ascii": True, **style}
    return json.dumps(obj, **kw).encode()


def paths(value, prefix=()):
    """Every non-empty path to a value inside ``value``."""
    if isinstance(value, dict):
        items = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        return
    for k, v in items:
        yield prefix + (k,)
        yield from paths(v, prefix + (k,))


def at(obj, path):
    for step in path:
        obj = obj[step]
    return obj


def disjoint(chosen) -> bool:
    """No path is a prefix of another (the edits touch separate values)."""
    return not any(p != q and q[:len(p)] == p for p in chosen for q in chosen)


def assert_only_values_changed(body, base, patches, olds):
    """Each patch replaces exactly the bytes of one old value (or inserts at one place); the
    patches do not overlap; nothing else differs."""
    last = -1
    for p, old in sorted(zip(patches, olds), key=lambda po: po[0].offset):
        rel = p.offset - base
        assert rel >= last and body[rel:rel + len(p.old)] == p.old
        if old is not INSERTED:
            assert orjson.loads(p.old) == old             # the span is the old value, whole
        last = rel + len(p.old)


INSERTED = object()


@settings(max_examples=300, deadline=None)
@given(OBJECTS, STYLES, BASES, st.data())
def test_replace_and_pad_change_only_the_values(obj, style, base, data):
    body = text_of(obj, style)
    all_paths = sorted(set(paths(obj)), key=repr)
    chosen = data.draw(st.lists(st.sampled_from(all_paths), min_size=1, max_size=3, unique=True))
    assume(disjoint(chosen))
    how = data.draw(st.sampled_from([REPLACE, PAD]))
    edits = [Edit(list(p), data.draw(VALUES), how) for p in chosen]
    patches = edit_line(body, obj, edits, base=base)
    new = splice(body, patches, base)
    assert orjson.loads(new) == intended(obj, edits)
    assert_only_values_changed(body, base, patches, [at(obj, p) for p in chosen])
    if how == PAD and all(len(p.new.rstrip(b" ")) <= len(p.old) for p in patches):
        assert len(new) == len(body)          # padding keeps the length: no offset moves
    for p, e in zip(patches, edits):          # patches come in the order of the edits
        assert orjson.loads(p.new) == e.value


@settings(max_examples=200, deadline=None)
@given(OBJECTS, STYLES, BASES, KEYS, VALUES, st.data())
def test_insert_adds_one_member_and_nothing_else(obj, style, base, key, value, data):
    body = text_of(obj, style)
    objects = [()] + [p for p in paths(obj) if isinstance(at(obj, p), dict)]
    where = data.draw(st.sampled_from(objects))
    assume(key not in at(obj, where))
    edit = Edit(list(where) + [key], value, INSERT)
    [patch] = edit_line(body, obj, [edit], base=base)
    new = splice(body, [patch], base)
    assert orjson.loads(new) == intended(obj, [edit])
    assert patch.old == b""
    assert_only_values_changed(body, base, [patch], [INSERTED])


@settings(max_examples=300, deadline=None)
@given(OBJECTS, STYLES, BASES, st.data())
def test_edit_strings_changes_only_the_strings(obj, style, base, data):
    body = text_of(obj, style)
    strings = sorted({p for p in paths(obj) if isinstance(at(obj, p), str)}, key=repr)
    assume(strings)
    chosen = data.draw(st.lists(st.sampled_from(strings), min_size=1, max_size=4, unique=True))
    # move maps one old value to one new value wherever it occurs (edit_strings relies on it)
    mapping = {at(obj, p): data.draw(STRINGS) for p in chosen}
    edits = [(p, at(obj, p), mapping[at(obj, p)]) for p in chosen]
    patches = edit_strings(body, obj, edits, base)
    new = splice(body, patches, base)
    expected = obj
    for p, _, n in edits:
        expected = intended(expected, [Edit(p, n)])
    assert orjson.loads(new) == expected
    assert [p.offset for p in patches] == sorted(p.offset for p in patches)
    olds = [orjson.loads(p.old) for p in patches]
    assert all(o in mapping and orjson.loads(p.new) == mapping[o] for o, p in zip(olds, patches))
    assert_only_values_changed(body, base, patches, olds)


@settings(max_examples=200, deadline=None)
@given(OBJECTS, STYLES)
def test_the_scanner_finds_every_value(obj, style):
    body = text_of(obj, style)
    for p in paths(obj):
        s, e = find_span(body, p)
        assert orjson.loads(body[s:e]) == at(obj, p)


# ---- edits proven by their bytes (lineedit._proven_spans): the same patches as the verified way ----

PATHLIKE = st.sampled_from(["/a/app", "/a/app/x", 'say "/a/app', "/a/app\\", ",/a", ":x", "é/ü", "/a/app\n"])
PROOF_VALUES = st.recursive(PATHLIKE | st.integers(-2**63, 2**63 - 1) | st.none() | st.text(max_size=4),
                            lambda c: st.lists(c, max_size=3) | st.dictionaries(KEYS | PATHLIKE, c, max_size=4),
                            max_leaves=10)


def verified_only(body, obj, edits, base):
    import histmig.jsonio.lineedit as le
    saved = le._plainly_written, le._last_member
    le._plainly_written = lambda body, obj: False
    le._last_member = lambda body, path, s, e: False
    try:
        return le.edit_strings(body, obj, edits, base)
    finally:
        le._plainly_written, le._last_member = saved


def assert_as_verified(body, obj, edits, base):
    """edit_strings gives what the verified-only way gives: the same patches, or the same refusal."""
    def outcome(edit):
        try:
            return edit(body, obj, edits, base)
        except EditError:
            return EditError
    assert outcome(edit_strings) == outcome(verified_only)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(KEYS | PATHLIKE, PROOF_VALUES, min_size=1, max_size=5), BASES, st.booleans(), st.data())
def test_proven_edits_are_the_verified_ones(obj, base, canonical, data):
    body = orjson.dumps(obj) if canonical else text_of(obj, {"separators": (",", ":"), "ensure_ascii": False})
    strings = sorted({p for p in paths(obj) if isinstance(at(obj, p), str)}, key=repr)
    assume(strings)
    chosen = data.draw(st.lists(st.sampled_from(strings), min_size=1, max_size=4, unique=True))
    mapping = {at(obj, p): data.draw(PATHLIKE) for p in chosen}
    edits = [(p, at(obj, p), mapping[at(obj, p)]) for p in chosen]
    assert_as_verified(body, obj, edits, base)


def test_a_lone_match_inside_a_string_is_not_taken_for_the_value():
    # '"/a/app"' occurs once, as the end of the message; the cwd is written with escaped slashes
    body = b'{"m":"say \\"/a/app","cwd":"\\/a\\/app"}'
    obj = orjson.loads(body)
    [patch] = edit_strings(body, obj, [(("cwd",), "/a/app", "/b")], 0)
    assert body[patch.offset:patch.offset + len(patch.old)] == b'"\\/a\\/app"'
    body = b'{"cwd":"/a/app","cwd":"\\/a/app"}'           # a shadowed duplicate holds the only match
    with pytest.raises(EditError):
        edit_strings(body, orjson.loads(body), [(("cwd",), "/a/app", "/b")], 0)


# ---- a top-level member proven by the bytes around it (lineedit._last_member) ----------------------
#
# Texts written by hand, member by member, so that they hold what no serializer writes: duplicate keys,
# ``\/`` and ``\u`` escapes, spaces around ``:``, a ``cwd`` in a nested object, the old path inside
# another string (``say \"/a/app"``), as a prefix of a longer path and as a key.

MEMBER_KEYS = st.sampled_from(["cwd", "project", "type", "x", "/a/app", 'c"wd', "é"])
TEXTS = st.sampled_from(["/a/app", "/a/app/x", "/a/appx", 'say "/a/app', "/a/app\\", "/a/\u00e9", "é/ü", "",
                         "}", "{", "]", "\"cwd\":", ",/a/app"]) | st.text(max_size=5)


@st.composite
def written(draw, depth=0):
    """``(JSON text, is an object)`` in a random style."""
    kind = draw(st.sampled_from(["str", "str", "num", "obj", "list"] if depth < 2 else ["str", "num"]))
    if kind == "str":
        return _string(draw, draw(TEXTS)), False
    if kind == "num":
        return draw(st.sampled_from(["1", "-2.5e3", "null", "true"])), False
    if kind == "list":
        return "[" + ",".join(draw(written(depth + 1))[0] for _ in range(draw(st.integers(0, 2)))) + "]", False
    return _object(draw, depth + 1), True


def _string(draw, value: str) -> str:
    text = json.dumps(value, ensure_ascii=draw(st.booleans()))
    return text.replace("/", "\\/") if draw(st.booleans()) else text


def _object(draw, depth: int) -> str:
    members = []
    for _ in range(draw(st.integers(0 if depth else 1, 4))):
        ws = draw(st.sampled_from(["", "", " "]))
        members.append(_string(draw, draw(MEMBER_KEYS)) + ws + ":" + ws + draw(written(depth))[0])
    return "{" + ",".join(members) + "}"


@settings(max_examples=500, deadline=None)
@given(st.data(), BASES, st.sampled_from(["", " ", "\t "]))
def test_a_proven_member_is_the_verified_edit(data, base, trailing):
    body = (_object(data.draw, 0) + trailing).encode()
    obj = orjson.loads(body)
    keys = [k for k, v in obj.items() if isinstance(v, str)]
    assume(keys)
    key = data.draw(st.sampled_from(keys))
    edits = [((key,), obj[key], data.draw(PATHLIKE))]
    assert_as_verified(body, obj, edits, base)


def test_what_the_member_proof_refuses():
    import histmig.jsonio.lineedit as le

    def proven(body, key="cwd", old="/a/app"):
        assert isinstance(orjson.loads(body), dict)
        enc = orjson.dumps(old)
        s = body.find(enc)
        return le._last_member(body, (key,), s, s + len(enc))
    assert proven(b'{"m":"x\\n","cwd":"/a/app","v":"1"}')               # escapes before it do not matter
    assert not proven(b'{"cwd":"/a/app","m":"x\\n"}')                     # a backslash after it
    assert not proven(b'{"n":{"cwd":"/a/app"},"v":1}')                      # nested: two closers after it
    assert not proven(b'{"cwd":"/a/app","cwd":"/b"}')                       # a later duplicate wins
    assert not proven(b'{"m":"\\"cwd\\":\\"/a/app","cwd":"/a/app"}')      # first found inside a string
    assert not proven(b'{"x":"/a/app"}')                                    # another key
