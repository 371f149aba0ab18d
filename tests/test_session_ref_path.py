"""A SessionRef given its path as text (a warm listing's walk: histmig/core/model.py) is the ref given
a Path: ``path`` is a Path when asked, its JSON and equality are the same."""
from __future__ import annotations

import pickle
from pathlib import Path

from histmig.core.model import SessionRef


def test_a_path_given_as_text_reads_as_a_path():
    text = "/h/.codex/sessions/2026/12/04/rollout-x.jsonl"
    lazy, made = SessionRef(format="codex", id="x", path=text), SessionRef(format="codex", id="x", path=Path(text))
    assert lazy.to_dict() == made.to_dict() and lazy.to_dict()["path"] == text
    assert pickle.loads(pickle.dumps(lazy)) == made
    assert isinstance(lazy.path, Path) and lazy.path == Path(text) and lazy.path is lazy.path   # made once
    assert lazy == made
    lazy.path = "/elsewhere.jsonl"
    assert lazy.path == Path("/elsewhere.jsonl")
