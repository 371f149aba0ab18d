"""The apply's report (``<state>/reports/<txid>.json``) is written in pieces (histmig/apply/engine.py
``report_chunks``): the same bytes as encoding it at once, whatever it holds."""
from __future__ import annotations

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from histmig.apply.engine import report_chunks

_scalars = st.none() | st.booleans() | st.integers(-2**63, 2**63 - 1) | st.text()
_values = st.recursive(_scalars, lambda inner: st.lists(inner, max_size=4)
                       | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=12)


@settings(max_examples=200, deadline=None)
@given(done=st.lists(st.text(), max_size=2100) | st.sampled_from([[], ["a"] * 1000, ["b"] * 1001]),
       rest=st.dictionaries(st.text(max_size=8).filter(lambda k: k != "done"), _values, max_size=5),
       first=st.booleans())
def test_report_in_pieces_is_the_report_encoded_at_once(done, rest, first):
    report = {"done": done, **rest} if first else {**rest, "done": done}
    assert b"".join(report_chunks(report)) == orjson.dumps(report, option=orjson.OPT_INDENT_2)


def test_an_empty_report_and_one_without_done():
    for report in ({}, {"txid": "t", "skips": [{"path": "p", "reason": "line\nbreak"}], "exit_code": 0}):
        assert b"".join(report_chunks(report)) == orjson.dumps(report, option=orjson.OPT_INDENT_2)
