"""Make histmig/samples/codex/unhealthy-shadowed-pair from histmig/samples/codex/plain.

A rollout whose plain ``.jsonl`` and ``.jsonl.zst`` both exist: Codex reads the plain file and
ignores the ``.zst`` (it is "shadowed"). The ``.zst`` holds an older prefix of the conversation, as
after an interrupted hand-made decompression. Run: ``python histmig/samples/make_shadowed.py``.
"""
import os
import shutil
from pathlib import Path

import zstandard

here = Path(__file__).resolve().parent
src, dst = here / "codex" / "plain", here / "codex" / "unhealthy-shadowed-pair"
shutil.rmtree(dst, ignore_errors=True)
shutil.copytree(src, dst)
rollout = next(dst.glob("sessions/**/rollout-*.jsonl"))
data = rollout.read_bytes()
older = b"".join(data.splitlines(keepends=True)[:3])
zst = rollout.with_name(rollout.name + ".zst")
zst.write_bytes(zstandard.ZstdCompressor(level=3, write_content_size=True).compress(older))
st = rollout.stat()
os.utime(zst, ns=(st.st_atime_ns, st.st_mtime_ns - 7 * 86400 * 10**9))
