"""Surgical edits: only the value's bytes change, and the result is verified."""
from __future__ import annotations

import json

import pytest
from hypothesis import given, settings, strategies as st

from histmig.jsonio.jsonedit import EditError, find_span
from histmig.jsonio.lineedit import pad_to, replace_values


def test_only_the_value_span_changes_and_odd_number_formats_survive():
    body = b'{"n":1.0e0,"f":0.10000000000000001,"s":"\\/","payload":{"cwd":"/a","z":[1,{"cwd":"/a/b"}]}}'
    new = replace_values(body, [(["payload", "cwd"], "/new path/é")])
    s, e = find_span(body, ["payload", "cwd"])
    assert new[:s] == body[:s] and new[-(len(body) - e):] == body[e:]
    assert json.loads(new)["payload"]["cwd"] == "/new path/é"
    assert b"1.0e0" in new and b"0.10000000000000001" in new and b'"\\/"' in new


def test_duplicate_or_missing_key_refuses_the_edit():
    with pytest.raises(EditError):
        replace_values(b'{"cwd":"/a"}', [(["nope"], 1)])
    with pytest.raises(EditError):
        find_span(b'{"cwd":"/a","cwd":"/b"}', ["cwd"])


def test_padding_keeps_length_and_stays_valid_json():
    body = b'{"model_provider":"openai-long"}'
    new = replace_values(body, [(["model_provider"], "short")])
    padded = pad_to(new, len(body))
    assert len(padded) == len(body) and json.loads(padded) == {"model_provider": "short"}
    assert pad_to(body, 3) is None


json_values = st.recursive(st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.text(max_size=8),
                           lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=4), c, max_size=3),
                           max_leaves=10)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(min_size=1, max_size=5), json_values, min_size=1, max_size=5), st.data(),
       st.sampled_from([(",", ":"), (", ", ": ")]))
def test_replacing_any_top_level_value_changes_only_that_value(obj, data, seps):
    body = json.dumps(obj, separators=seps, ensure_ascii=False).encode()
    key = data.draw(st.sampled_from(sorted(obj)))
    new_value = data.draw(json_values)
    new = replace_values(body, [([key], new_value)])
    expected = dict(obj)
    expected[key] = new_value
    assert json.loads(new) == expected
    s, e = find_span(body, [key])
    assert new.startswith(body[:s]) and new.endswith(body[e:])
