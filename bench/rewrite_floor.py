"""A floor for `flip --apply` that does the necessary work of a safe rewrite (docs/bench.md, "Write path,
third pass"): each listed file read once, the sha256 of its old and of its new bytes (recover and undo rely
on both, docs/safety.md), the bytes written to a temp in a staging folder, one ``syncfs``, each temp renamed
over its file. Two threads, as histmig's fill (hashlib and I/O release the GIL). The edit itself is left out:
the same bytes are written back.

With ``--kernel`` it is the least any temp-and-rename rewrite does: no hash, the bytes copied in the kernel
(``copy_file_range``, as ``cp`` does), the temp synced and renamed. It shows the share of the hashes that
the write protocol keeps (docs/bench.md, "The issues' targets").

    python bench/rewrite_floor.py [--kernel] LISTING STAGING_DIR     # LISTING: one path a line
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import sys
from concurrent.futures import ThreadPoolExecutor


def rewrite(task: tuple[int, str], stage: str) -> tuple[str, str]:
    i, path = task
    tmp = os.path.join(stage, str(i))
    src, dst = os.open(path, os.O_RDONLY), os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    pre, post, buf = hashlib.sha256(), hashlib.sha256(), memoryview(bytearray(1 << 20))
    pos = 0
    while n := os.preadv(src, [buf], pos):
        pre.update(buf[:n])
        post.update(buf[:n])
        os.write(dst, buf[:n])
        pos += n
    os.close(src)
    os.close(dst)
    return tmp, path


def copy(task: tuple[int, str], stage: str) -> tuple[str, str]:
    i, path = task
    tmp = os.path.join(stage, str(i))
    src, dst = os.open(path, os.O_RDONLY), os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    left = os.fstat(src).st_size
    while left > 0:
        n = os.copy_file_range(src, dst, left)
        if n == 0:
            break
        left -= n
    os.close(src)
    os.close(dst)
    return tmp, path


def main() -> None:
    args = sys.argv[1:]
    kernel = args[0] == "--kernel"
    listing, stage = args[kernel:kernel + 2]
    os.makedirs(stage)
    with open(listing) as f:
        paths = f.read().splitlines()
    work = copy if kernel else rewrite
    with ThreadPoolExecutor(2) as ex:
        done = list(ex.map(lambda t: work(t, stage), enumerate(paths)))
    fd = os.open(stage, os.O_RDONLY)
    ctypes.CDLL(None).syncfs(fd)
    os.close(fd)
    for tmp, path in done:
        os.rename(tmp, path)


if __name__ == "__main__":
    main()
