"""The window-by-window rewrite (histmig/apply/content.py ``_stream_patched``) writes the same
bytes and hashes as the segment walk it short-cuts, and reports a changed span the same way."""
from __future__ import annotations

import hashlib
import random
import types

import pytest

from histmig.apply import content, fsio
from histmig.apply.options import ApplyOptions
from histmig.core.plan import Patch, PatchList

MIB = 1 << 20


def _prep(size: int, patches: list[Patch]):
    return types.SimpleNamespace(content=None, base_size=size, patches=PatchList(patches),
                                 op=types.SimpleNamespace(paths=lambda: ["f.jsonl"]))


def _run(tmp_path, data: bytes, patches: list[Patch], *, windowed: bool, monkeypatch):
    src, out = tmp_path / "src", tmp_path / f"out{int(windowed)}"
    src.write_bytes(data)
    if not windowed:
        monkeypatch.setattr(content, "_patches_inside", lambda *_: False)
    with open(src, "rb") as s, open(out, "wb") as t:
        hashes = content.stream_segments(fsio.FS(), _prep(len(data), patches), s.fileno(), t.fileno(),
                                         len(data), ApplyOptions(), "f.jsonl")
    monkeypatch.undo()
    return hashes, out.read_bytes()


def _patches(rnd: random.Random, data: bytes) -> list[Patch]:
    out, pos = [], 0
    while True:
        pos += rnd.choice([0, 1, 50, 4000, 300_000, MIB - 5])
        if pos >= len(data):
            return out
        n = min(rnd.choice([0, 1, 20, 3000, MIB + 100]), len(data) - pos)
        out.append(Patch(pos, data[pos:pos + n], rnd.randbytes(rnd.choice([0, 5, 40]))))
        pos += n


@pytest.mark.parametrize("seed", range(40))
def test_same_bytes_and_hashes_as_the_segment_walk(tmp_path, monkeypatch, seed):
    rnd = random.Random(seed)
    size = rnd.choice([1, 10, 5000, MIB - 3, MIB, MIB + 7, 3 * MIB])
    data = (rnd.randbytes(4096) * (size // 4096 + 1))[:size]
    patches = _patches(rnd, data)
    windowed = _run(tmp_path, data, patches, windowed=True, monkeypatch=monkeypatch)
    assert windowed == _run(tmp_path, data, patches, windowed=False, monkeypatch=monkeypatch)
    assert windowed[0][0] == hashlib.sha256(data).hexdigest()


def test_a_changed_span_is_refused_with_the_segment_walks_words(tmp_path, monkeypatch):
    data = b'{"cwd":"/a/app"}\n' * 100_000
    patches = [Patch(17 * 70_000 + 8, b"/a/aXp", b"/b/app")]
    for windowed in (True, False):
        with pytest.raises(OSError, match=r"content changed since plan \(bytes at offset 1190008\)"):
            _run(tmp_path, data, patches, windowed=windowed, monkeypatch=monkeypatch)
