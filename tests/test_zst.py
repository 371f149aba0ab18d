"""Bounded zstd reading: bombs, huge windows, truncation and garbage are refused with the file named."""
from __future__ import annotations

import subprocess
import sys

import pytest
import zstandard

from histmig.core.diagnostics import HistmigInputError
from histmig.jsonio.jsonl import read_lines
from histmig.jsonio.zst import compress, decompress_all

DATA = b"".join(b'{"n":%d,"t":"line"}\n' % i for i in range(2000))


def test_zst_rollout_reads_the_same_lines_as_the_plain_file(tmp_path):
    plain = tmp_path / "rollout-x.jsonl"
    plain.write_bytes(DATA)
    z = tmp_path / "rollout-y.jsonl.zst"
    z.write_bytes(compress(DATA))
    assert [ln.raw for ln in read_lines(z)] == [ln.raw for ln in read_lines(plain)]


def test_multi_frame_file_is_read_across_frames(tmp_path):
    z = tmp_path / "m.jsonl.zst"
    half = len(DATA) // 2
    cut = DATA.rfind(b"\n", 0, half) + 1
    z.write_bytes(compress(DATA[:cut]) + compress(DATA[cut:]))
    assert decompress_all(z) == DATA


def test_truncated_frame_is_refused_naming_the_file(tmp_path):
    z = tmp_path / "t.jsonl.zst"
    z.write_bytes(compress(DATA)[:-5])
    with pytest.raises(HistmigInputError, match="truncated zstd frame") as e:
        list(read_lines(z))
    assert str(z) in e.value.describe()


def test_garbage_is_refused(tmp_path):
    z = tmp_path / "g.jsonl.zst"
    z.write_bytes(b"this is not zstd at all")
    with pytest.raises(HistmigInputError, match="not a zstd stream"):
        list(read_lines(z))


def _stream_compress(path, size, **params):
    cctx = zstandard.ZstdCompressor(compression_params=zstandard.ZstdCompressionParameters(**params)) \
        if params else zstandard.ZstdCompressor(level=3)
    with open(path, "wb") as fh, cctx.stream_writer(fh) as w:   # no content size in the header
        chunk = b"\0" * (1 << 20)
        for _ in range(size // len(chunk)):
            w.write(chunk)


BOMB_CHILD = r"""
import resource, sys
from histmig.jsonio.jsonl import read_lines
from histmig.core.diagnostics import HistmigInputError
try:
    for _ in read_lines(sys.argv[1], max_decompressed=64 * 1024 * 1024):
        pass
    print("READ")
except HistmigInputError as e:
    print("REFUSED", e.describe())
print("RSS_KB", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def test_zstd_bomb_is_refused_within_bounded_memory(tmp_path):
    bomb = tmp_path / "rollout-bomb.jsonl.zst"
    _stream_compress(bomb, 1 << 30)                       # 1 GiB of zeros
    assert bomb.stat().st_size < 64 * 1024
    out = subprocess.run([sys.executable, "-c", BOMB_CHILD, str(bomb)], capture_output=True, text=True,
                         timeout=120).stdout
    assert "REFUSED" in out and "exceeds limit" in out and str(bomb) in out
    rss_kb = int(out.split("RSS_KB")[1])
    assert rss_kb < 512 * 1024, f"peak RSS {rss_kb} KB"


def test_default_cap_refuses_a_bomb_without_declared_size(tmp_path):
    bomb = tmp_path / "rollout-bomb2.jsonl.zst"
    _stream_compress(bomb, 512 << 20)
    with pytest.raises(HistmigInputError, match="exceeds limit"):
        for _ in read_lines(bomb):
            pass


def test_huge_window_is_refused_before_allocation(tmp_path):
    z = tmp_path / "w.jsonl.zst"
    _stream_compress(z, 1 << 20, window_log=28)
    with pytest.raises(HistmigInputError, match="too much memory"):
        list(read_lines(z))
