"""Path rules shared by every tool: the Claude project slug and prefix matching on boundaries."""
from __future__ import annotations

import functools
import os

SLUG_MAX = 200
_BASE36 = "0123456789abcdefghijklmnopqrstuvwxyz"


def _utf16_units(path: str) -> list[int]:
    raw = path.encode("utf-16-le", "surrogatepass")
    return [int.from_bytes(raw[i:i + 2], "little") for i in range(0, len(raw), 2)]


def _java_hash(units: list[int]) -> int:
    h = 0
    for u in units:
        h = (h * 31 + u) & 0xFFFFFFFF
    return h - 2**32 if h >= 2**31 else h


def _base36(n: int) -> str:
    digits = ""
    while True:
        n, r = divmod(n, 36)
        digits = _BASE36[r] + digits
        if n == 0:
            return digits


@functools.lru_cache(maxsize=1024)     # convert asks once per session, for a few folders
def claude_slug(path: str) -> str:
    """Claude Code's project-folder name for an absolute path (builds >= 2.1.105).

    Every UTF-16 code unit that is not [A-Za-z0-9] becomes '-' (an emoji gives two dashes); names
    over 200 characters are cut to 200 and get '-' + base36(|Java String.hashCode|).
    """
    units = _utf16_units(path)
    slug = "".join(chr(u) if u < 128 and chr(u).isalnum() else "-" for u in units)
    if len(slug) <= SLUG_MAX:
        return slug
    return slug[:SLUG_MAX] + "-" + _base36(abs(_java_hash(units)))


def slug_prefix(path: str) -> str:
    """The part of a long slug every build agrees on (Bun-hash era folders differ after it)."""
    return claude_slug(path)[:SLUG_MAX]


def is_under(path: str, root: str) -> bool:
    """True when ``path`` is ``root`` or lies below it on a component boundary
    (``/a/app`` covers ``/a/app/sub`` but not ``/a/app2``)."""
    root = root.rstrip("/") or "/"
    if path == root:
        return True
    prefix = root if root.endswith("/") else root + "/"
    return path.startswith(prefix)


def rebase(path: str, old: str, new: str) -> str | None:
    """``path`` with the prefix ``old`` replaced by ``new`` on a component boundary, else None."""
    old = old.rstrip("/") or "/"
    new = new.rstrip("/") or "/"
    if path == old:
        return new
    if is_under(path, old):
        rest = path[len(old):].lstrip("/")
        return new.rstrip("/") + "/" + rest
    return None


def spellings(path: str) -> list[str]:
    """The given spelling and its realpath, without duplicates (both are matched on a move)."""
    out = [os.path.normpath(path)]
    real = os.path.realpath(path)
    if real not in out:
        out.append(real)
    return out


def safe_component(name: str, *, max_bytes: int = 255) -> bool:
    """One path component that cannot escape its folder."""
    return (bool(name) and name not in (".", "..") and "/" not in name and "\\" not in name
            and "\x00" not in name and len(name.encode("utf-8", "surrogatepass")) <= max_bytes)


def valid_cwd(cwd: str) -> bool:
    """An absolute path without NUL or newline and of sane length."""
    return (isinstance(cwd, str) and cwd.startswith("/") and "\x00" not in cwd and "\n" not in cwd
            and len(cwd.encode("utf-8", "surrogatepass")) <= 4096)


def slug_matches(name: str, path: str) -> bool:
    """``name`` is the Claude project folder of ``path``: exactly, or (long paths) same 200-char
    prefix plus a hash suffix from another build (Bun-hash era, docs/specs/claude-code.md §2.3)."""
    s = claude_slug(path)
    if name == s:
        return True
    return len(s) > SLUG_MAX and len(name) > SLUG_MAX and name[:SLUG_MAX + 1] == s[:SLUG_MAX + 1]
