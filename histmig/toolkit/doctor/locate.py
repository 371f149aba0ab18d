"""Where did a missing project folder go? A bounded walk of the home that finds folders with the same
name, or git checkouts with the same remote, so doctor can print a concrete `histmig move` command."""
from __future__ import annotations

import os
import re
import shlex
from collections import defaultdict
from pathlib import Path

MAX_DEPTH = 6
MAX_DIRS = 20000
SKIP = {"node_modules", "__pycache__", "venv", "site-packages", "target", "dist", "build"}
_URL = re.compile(r"^\s*url\s*=\s*(\S+)\s*$", re.M)


def normalize_remote(url: str) -> str:
    """``git@host:o/r.git`` and ``https://host/o/r`` both become ``host/o/r``."""
    u = url.strip().rstrip("/")
    u = re.sub(r"\.git$", "", u)
    u = re.sub(r"^[a-z+]+://", "", u)
    u = re.sub(r"^[^@/]+@", "", u)
    return u.replace(":", "/", 1).lower()


class HomeIndex:
    """Folders under the home by name and by git remote; built once, on first use."""

    def __init__(self, home: Path, exclude: list[Path]):
        self.home = home
        self.exclude = {os.path.realpath(p) for p in exclude}
        self._by_name: dict[str, list[str]] | None = None
        self._by_remote: dict[str, list[str]] = defaultdict(list)

    def _build(self) -> None:
        self._by_name = defaultdict(list)
        stack, seen = [(str(self.home), 0)], 0
        while stack and seen < MAX_DIRS:
            folder, depth = stack.pop()
            seen += 1
            try:
                entries = list(os.scandir(folder))
            except OSError:
                continue
            for e in entries:
                if not e.is_dir(follow_symlinks=False):
                    continue
                if e.name == ".git":
                    self._add_remotes(folder, e.path)
                    continue
                if e.name.startswith(".") or e.name in SKIP or os.path.realpath(e.path) in self.exclude:
                    continue
                self._by_name[e.name].append(e.path)
                if depth + 1 < MAX_DEPTH:
                    stack.append((e.path, depth + 1))

    def _add_remotes(self, checkout: str, git_dir: str) -> None:
        try:
            text = Path(git_dir, "config").read_text(errors="replace")
        except OSError:
            return
        for url in _URL.findall(text):
            self._by_remote[normalize_remote(url)].append(checkout)

    def suggest(self, old: str, git_url: str | None = None) -> str | None:
        """A likely new location of ``old``: a checkout with the same remote, else the only folder
        with the same name. None when nothing (or nothing unambiguous) is found."""
        if self._by_name is None:
            self._build()
        if git_url:
            hits = sorted(set(self._by_remote.get(normalize_remote(git_url), [])) - {old})
            if len(hits) == 1:
                return hits[0]
        name = os.path.basename(old.rstrip("/"))
        hits = sorted(set(self._by_name.get(name, [])) - {old})
        return hits[0] if len(hits) == 1 else None


def move_fix(old: str, new: str | None) -> str:
    if new:
        return f"histmig move {shlex.quote(old)} {shlex.quote(new)} --apply"
    return f"restore {old}, or run `histmig move {shlex.quote(old)} <new folder> --apply` if the project moved"
