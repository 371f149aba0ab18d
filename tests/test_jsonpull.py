"""histmig/jsonio/jsonpull.py: members and array elements of one JSON object, each with its exact bytes
and offsets, whatever the chunk size; a broken skeleton is a PullError with its offset."""
from __future__ import annotations

import io
import json
import random

import orjson
import pytest

from histmig.jsonio.jsonpull import PullError, pieces

ATOMS = [1, -2.5e3, True, False, None, 'a"b\\', "x\\\\", "é{[]}", "", "\\\""]


def _value(rng: random.Random, depth: int = 0):
    r = rng.random()
    if depth > 3 or r < 0.3:
        return rng.choice(ATOMS)
    if r < 0.6:
        return [_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    return {f'k{i}"': _value(rng, depth + 1) for i in range(rng.randint(0, 4))}


def test_random_documents_split_into_their_members_and_elements():
    rng = random.Random(16)
    for _ in range(1500):
        doc = {"a": _value(rng), "messages": [_value(rng) for _ in range(rng.randint(0, 6))], "z": _value(rng)}
        keys = rng.sample(list(doc), 3)
        doc = {k: doc[k] for k in keys}
        raw = json.dumps(doc, indent=rng.choice([None, 2, "\t"]), ensure_ascii=rng.random() < .5).encode()
        got = list(pieces(io.BytesIO(raw), "messages", chunk=rng.randint(1, 40)))
        assert all(raw[p.start:p.end] == p.raw for p in got)
        assert [orjson.loads(p.raw) for p in got if p.item] == doc["messages"]
        assert {p.key: orjson.loads(p.raw) for p in got if not p.item} == {k: v for k, v in doc.items()
                                                                           if k != "messages"}


@pytest.mark.parametrize("bad", [b"", b"[1]", b'{"a":1', b'{"a" 1}', b'{"messages":[1,2}', b'{"a":1} x',
                                 b'{"a":"x}', b'{1: 2}'])
def test_a_broken_skeleton_is_a_pull_error(bad):
    with pytest.raises(PullError):
        list(pieces(io.BytesIO(bad), "messages", chunk=3))
