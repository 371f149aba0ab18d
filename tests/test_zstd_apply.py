"""Issue 12 case 9: a ``.jsonl.zst`` rewrite (flip/move ``--apply``) streams in bounded memory
(histmig/apply/zstdfill.py): decompress, patch, recompress into the temp, verify the round trip,
never holding the old or the new content whole. These tests check that the decompressed result is
exactly the patched content (multi-frame, large-window, patches across read and frame boundaries),
that precheck still skips a bad stream, and that a fault or a SIGKILL at every file-system
operation of a zstd rewrite leaves the file old or new (the 200 MB bound itself: test_memory.py)."""
from __future__ import annotations

import errno
import hashlib
import io
import random
import signal
from pathlib import Path

import pytest
import zstandard

from histmig.apply import fsio
from histmig.jsonio import zst
from histmig.apply import ApplyFailedError, apply_plan, check_no_unfinished, recover
from histmig.apply import batch as batch_mod
from histmig.apply import zstdfill
from histmig.apply.journal import read_records, tx_root
from histmig.verbs.undo.run import undo
from histmig.core.plan import Fingerprint, Patch, Plan, WriteFile
from test_apply_fixtures import homes, no_temps, snapshot
from test_crash import _run_killed


def _lines(n: int, seed: int = 1) -> bytes:
    """Lines that compress only about 2:1 (random hex), so the compressed temp takes several writes."""
    rnd = random.Random(seed)
    return b"".join(b'{"cwd":"/a/proj","n":%d,"r":"%s"}\n' % (i, rnd.randbytes(24).hex().encode())
                    for i in range(n))


def _apply_patches(plain: bytes, patches: list[Patch]) -> bytes:
    out, pos = bytearray(), 0
    for p in patches:
        assert plain[p.offset:p.offset + len(p.old)] == p.old
        out += plain[pos:p.offset] + p.new
        pos = p.offset + len(p.old)
    return bytes(out + plain[pos:])


def _cwd_patches(plain: bytes, new: bytes = b"/b/longer/proj") -> list[Patch]:
    old, out, i = b"/a/proj", [], plain.find(b"/a/proj")
    while i >= 0:
        out.append(Patch(i, old, new))
        i = plain.find(old, i + 1)
    return out


def _rollout(h, data: bytes) -> Path:
    day = h.codex / "sessions" / "2026" / "01" / "02"
    day.mkdir(parents=True, exist_ok=True)
    z = day / "rollout-2026-01-02T10-00-00-0199aaaa-0000-7000-8000-000000000000.jsonl.zst"
    z.write_bytes(data)
    return z


def _plan(h, z: Path, patches, **kw) -> Plan:
    op = WriteFile(path=str(z), expect=Fingerprint.of(z), patches=tuple(patches), compression="zstd", **kw)
    return Plan("move", {}, [str(h.codex)], [op])


class _Trickle(io.RawIOBase):
    """A decompressed stream that returns short reads of varying sizes (1 to 97 bytes)."""

    def __init__(self, data: bytes):
        self.data, self.pos, self.rnd = data, 0, random.Random(7)

    def read(self, n: int = -1) -> bytes:
        k = min(n, self.rnd.randint(1, 97))
        out = self.data[self.pos:self.pos + k]
        self.pos += len(out)
        return out


def test_case9_patched_stream_crosses_every_read_boundary():
    plain = _lines(300)
    rnd = random.Random(3)
    for trial in range(200):
        offs = sorted(rnd.sample(range(len(plain) - 20), rnd.randint(0, 12)))
        patches, last = [], -1
        for off in offs:
            if off <= last:
                continue
            n = rnd.randint(0, 20)
            patches.append(Patch(off, plain[off:off + n], bytes(rnd.randint(0, 5)) + b"x"))
            last = off + n - 1 if n else off
        if trial == 0:
            patches = [Patch(0, plain[:5], b""), Patch(len(plain) - 3, plain[-3:], b"END\n")]
        op = WriteFile(path="/x.jsonl.zst", expect=Fingerprint(), patches=tuple(patches), compression="zstd")
        got = b"".join(zstdfill.batched(zstdfill.patched(op, _Trickle(plain), ValueError)))
        assert got == _apply_patches(plain, patches), trial


def test_case9_patched_stream_refuses_a_changed_or_missing_old_span():
    plain = _lines(10)
    for bad in (Patch(5, b"nope", b""), Patch(len(plain) - 2, b"xyz", b"")):
        op = WriteFile(path="/x.jsonl.zst", expect=Fingerprint(), patches=(bad,), compression="zstd")
        with pytest.raises(ValueError):
            b"".join(zstdfill.patched(op, _Trickle(plain), ValueError))


def _multi_frame(parts: list[bytes]) -> bytes:
    """Frame 1 declares its size; a skippable frame; frame 2 has a 64 MiB window (allowed: the
    limit is 128 MiB) and no declared size; frame 3 is level 19."""
    out = io.BytesIO()
    out.write(zstandard.ZstdCompressor(level=3, write_content_size=True).compress(parts[0]))
    out.write((0x184D2A50).to_bytes(4, "little") + (5).to_bytes(4, "little") + b"skip!")
    params = zstandard.ZstdCompressionParameters.from_level(3, window_log=26)
    with zstandard.ZstdCompressor(compression_params=params).stream_writer(out, closefd=False) as w:
        w.write(parts[1])
    out.write(zstandard.ZstdCompressor(level=19).compress(parts[2]))
    return out.getvalue()


def test_case9_streamed_zstd_rewrite_of_a_multi_frame_large_window_file_is_exactly_the_patched_content():
    h = homes()
    plain = _lines(40000)                       # ~2.7 MiB: several 1 MiB chunks
    cut1, cut2 = len(plain) // 3 + 11, 2 * len(plain) // 3 + 5
    data = _multi_frame([plain[:cut1], plain[cut1:cut2], plain[cut2:]])
    info = zst.inspect_frames(_fh(data), "x")
    assert info.frames == 3 and info.window_max == 1 << 26 and info.content_size is None
    z = _rollout(h, data)
    patches = _cwd_patches(plain)
    patches.append(Patch(cut1 - 4, plain[cut1 - 4:cut1 + 4], b"ACROSS-FRAMES"))   # spans frames 1 and 2
    patches.sort(key=lambda p: p.offset)
    patches = [p for i, p in enumerate(patches)
               if i == 0 or p.offset >= patches[i - 1].offset + len(patches[i - 1].old)]
    want = _apply_patches(plain, patches)
    res = apply_plan(_plan(h, z, patches), h)
    assert res.exit_code == 0 and res.done == [str(z)]
    new = z.read_bytes()
    assert zst.decompress_all(z) == want
    assert zstandard.get_frame_parameters(new).content_size == len(want)   # one frame, size declared
    recs = read_records(tx_root(h.state) / res.txid)
    intent = next(r for r in recs if r["kind"] == "intent")
    ready = next(r for r in recs if r["kind"] == "ready")
    assert intent["pre"]["sha256"] == hashlib.sha256(data).hexdigest() == ready["pre_sha256"]
    assert ready["post"] == {"sha256": hashlib.sha256(new).hexdigest(), "size": len(new)}
    assert no_temps(h.home)
    undo(h, res.txid)
    assert z.read_bytes() == data


def _fh(data: bytes):
    import tempfile
    fh = tempfile.TemporaryFile()
    fh.write(data)
    fh.seek(0)
    return fh


def test_case9_zstd_whole_content_write_is_recompressed():
    h = homes()
    z = _rollout(h, zst.compress(_lines(50)))
    res = apply_plan(_plan(h, z, (), new_bytes=b"replaced\n", level=5), h)
    assert res.exit_code == 0 and zst.decompress_all(z) == b"replaced\n"


def test_case9_zstd_patch_that_no_longer_matches_is_skipped_by_precheck():
    h = homes()
    plain = _lines(50)
    z = _rollout(h, zst.compress(plain))
    before = z.read_bytes()
    res = apply_plan(_plan(h, z, [Patch(3, b"nope", b"x")]), h)
    assert res.exit_code == 3 and res.txid is None and z.read_bytes() == before
    assert [(s.code, s.reason) for s in res.skips] == [("bad-zstd", "content changed since plan (decompressed bytes differ)")]


def test_case9_zstd_window_over_the_limit_is_skipped_by_precheck():
    h = homes()
    params = zstandard.ZstdCompressionParameters.from_level(3, window_log=28)
    out = io.BytesIO()           # streamed, no declared size: the frame header carries the 256 MiB window
    with zstandard.ZstdCompressor(compression_params=params).stream_writer(out, closefd=False) as w:
        w.write(_lines(5))
    z = _rollout(h, out.getvalue())
    res = apply_plan(_plan(h, z, [Patch(0, b"{", b"{")]), h)
    assert res.exit_code == 3 and res.skips[0].code == "bad-zstd" and "window" in res.skips[0].reason


# -- the round trip check has teeth -----------------------------------------------------------------
def _tamper(monkeypatch, how):
    real = zstdfill.fill

    def fill(fs, prep, src, tmp, *a):
        out = real(fs, prep, src, tmp, *a)
        how(prep, tmp)
        return out
    monkeypatch.setattr(batch_mod.zstdfill, "fill", fill)


@pytest.mark.parametrize("how", ["content", "bytes"])
def test_case9_zstd_temp_that_does_not_round_trip_is_never_renamed(monkeypatch, how):
    h = homes()
    plain = _lines(2000)
    z = _rollout(h, zst.compress(plain))
    before = snapshot(z.parent)
    if how == "content":    # a valid stream of other content: caught by the decompressed hash
        _tamper(monkeypatch, lambda prep, tmp: setattr(prep, "plain_sha", "0" * 64))
    else:                   # a byte flipped after writing: caught by the compressed hash
        _tamper(monkeypatch, lambda prep, tmp: fsio.os.pwrite(tmp, b"\0", 20))
    with pytest.raises(ApplyFailedError, match="does not read back"):
        apply_plan(_plan(h, z, _cwd_patches(plain)), h)
    assert snapshot(z.parent) == before
    check_no_unfinished(h)


# -- faults and crashes at every file-system operation ------------------------------------------------
def _zstd_case(h):
    """A fresh .zst rollout and its plan: (path, plan, old bytes, new decompressed content)."""
    import shutil
    for d in (h.codex, h.state):
        shutil.rmtree(d, ignore_errors=True)
    plain = _lines(60000)        # ~4 MiB inflated, ~2 MiB compressed: several temp writes
    z = _rollout(h, zst.compress(plain))
    patches = _cwd_patches(plain)
    return z, _plan(h, z, patches), z.read_bytes(), _apply_patches(plain, patches)


def _old_or_new(z: Path, old: bytes, want: bytes) -> str:
    data = z.read_bytes()
    return "old" if data == old else ("new" if zst.decompress_all(z) == want else "torn")


@pytest.mark.slow
def test_case9_zstd_rewrite_fault_at_every_operation_leaves_the_file_old_or_new():
    h = homes()
    _z, plan, _old, _want = _zstd_case(h)
    fs = fsio.FS(skip_fsync=True)
    with fsio.using(fs):
        assert apply_plan(plan, h).exit_code == 0
    n_ops = fs.count
    assert sum(1 for name, _ in fs.log if name == "write") > 2, fs.log
    for k in range(1, n_ops + 2):
        z, plan, old, want = _zstd_case(h)
        before = snapshot(z.parent)
        fs = fsio.FS(faults=[fsio.Fault(k, errno.EIO if k % 2 else errno.ENOSPC)], skip_fsync=True)
        with fsio.using(fs):
            try:
                apply_plan(plan, h)
            except ApplyFailedError:
                pass
        assert fs.fired == (k <= n_ops), k
        state = _old_or_new(z, old, want)
        assert state == ("old" if fs.fired else "new"), f"fault at {k} ({fs.log[k - 1] if fs.fired else ''})"
        if fs.fired:
            assert snapshot(z.parent) == before, f"fault at {k}: rolled back to the old bytes and metadata"
        assert no_temps(h.home)
        check_no_unfinished(h)


@pytest.mark.slow
def test_case9_zstd_rewrite_sigkill_at_every_operation_recovers_old(tmp_path):
    h = homes()
    _z, plan, _old, _want = _zstd_case(h)
    fs = fsio.FS(skip_fsync=True)
    with fsio.using(fs):
        apply_plan(plan, h)
    n_ops = fs.count
    for k in range(1, n_ops + 2):
        z, plan, old, want = _zstd_case(h)
        before = snapshot(z.parent)
        r = _run_killed(h, tmp_path, plan, k)
        assert r.returncode == (-signal.SIGKILL if k <= n_ops else 0), (k, r.stderr)
        assert _old_or_new(z, old, want) != "torn", k
        if k <= n_ops:
            with fsio.using(fsio.FS(skip_fsync=True)):
                recover(h)
            check_no_unfinished(h)
            if _old_or_new(z, old, want) == "old":
                assert snapshot(z.parent) == before, k
            else:         # killed after the commit record: the new content is final
                assert recover(h).nothing
