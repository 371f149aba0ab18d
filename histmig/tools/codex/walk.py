"""The one walk over a Codex home's rollout files: scan, flip, move and doctor all list rollouts here.

What counts as a rollout is decided once, in this module (docs/formats.md, "Which Codex files are
rollouts"):

- the roots are ``sessions/`` then ``archived_sessions/`` (the second left out with ``archived=False``);
  every file under ``archived_sessions/`` is archived;
- both roots are walked at any depth, ``archived_sessions/<subfolder>/`` included: Codex's own
  listing reads the archive flat, but its look-up by thread id (``codex unarchive``, reading an
  archived thread) and its state-database backfill walk ``archived_sessions/`` recursively
  (docs/specs/codex.md §1), so a rollout in a subfolder is an archived thread Codex still finds;
- a rollout is a file named ``rollout-*.jsonl`` or ``rollout-*.jsonl.zst``; folders are not
  rollouts, symlinked folders are not entered, an unreadable folder is skipped. Symlinked and
  non-regular files are yielded: each verb says what it does with them (flip and move skip them
  unless ``--follow-symlinks``, doctor reads regular files only);
- ``x.jsonl.zst`` beside an existing ``x.jsonl`` is shadowed (Codex reads the plain file,
  docs/specs/codex.md §17): it is not a rollout of its own but comes with its plain twin.

Nothing is read or stat'ed beyond the folder listings (``os.scandir``) and one existence check per
shadowed ``.zst``; paths are ``str`` because a dry run lists thousands of files.
"""
from __future__ import annotations

import os
from typing import Iterator

# (path, archived, shadowed .zst or None): a plain tuple, made once per rollout of a large home
Entry = tuple[str, bool, "str | None"]


def rollouts(codex_home: str | os.PathLike, *, archived: bool = True, newest_first: bool = True) -> Iterator[Entry]:
    """Every logical rollout of a Codex home as ``(path, archived, shadowed_zst)``.

    Order: ``sessions/`` then ``archived_sessions/``; in each folder its rollouts, then its
    subfolders, names sorted descending with ``newest_first`` (Codex's listing order: scan and
    flip) or ascending without it (move and doctor). The order is part of the plans: keep it."""
    home = os.fspath(codex_home)
    roots = [(os.path.join(home, "sessions"), False)]
    if archived:
        roots.append((os.path.join(home, "archived_sessions"), True))
    for root, is_archived in roots:
        if not os.path.isdir(root):
            continue
        for path, name, names in _walk(root, newest_first):
            # one test from both sides: a .zst is shadowed when its plain twin exists, with the
            # follow-symlinks test of Codex's Path::exists (a folder shadows, a dangling link does
            # not). A name missing from the folder listing cannot exist: no stat is made for it.
            if name.endswith(".zst"):
                if name[:-4] in names and os.path.exists(path[:-4]):
                    continue                     # comes with its plain twin
                yield path, is_archived, None
            else:
                zst = path + ".zst"
                shadows = name + ".zst" in names and os.path.exists(zst) and os.path.exists(path)
                yield path, is_archived, zst if shadows else None


def is_rollout_name(name: str) -> bool:
    return name.startswith("rollout-") and (name.endswith(".jsonl") or name.endswith(".jsonl.zst"))


def _walk(top: str, newest_first: bool) -> Iterator[tuple[str, str, set[str]]]:
    """``(path, name, names in its folder)`` of every rollout under ``top``, as ``os.walk`` with
    sorted names would give them (a folder's files first, then its subfolders; symlinked folders
    not entered; an unreadable folder skipped), without a ``Path`` or a stat per name."""
    files: list[str] = []
    dirs: list[tuple[str, bool]] = []
    names: set[str] = set()                      # every entry, folders too (Path.exists is true for them)
    try:
        with os.scandir(top) as it:
            for entry in it:
                names.add(entry.name)
                try:
                    is_dir = entry.is_dir()
                except OSError:
                    is_dir = False
                if not is_dir:
                    files.append(entry.name)
                    continue
                try:
                    link = entry.is_symlink()
                except OSError:
                    link = False
                dirs.append((entry.name, link))
    except OSError:
        return                                   # os.walk(onerror=None) drops the folder too
    prefix = top if top.endswith("/") else top + "/"
    for name in sorted(files, reverse=newest_first):
        if is_rollout_name(name):
            yield prefix + name, name, names
    for name, link in sorted(dirs, reverse=newest_first):
        if not link:
            yield from _walk(prefix + name, newest_first)
