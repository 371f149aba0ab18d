"""Project folders named by the Claude slug: Claude Code's ``projects/<slug>/`` (which may also hold
manifest ``sessions/``) and mini-cc's ``projects/<slug>/``.

A folder is located by name (its slug starts with the slug of OLD) and *confirmed* by the cwd its
sessions record (slugs collide: ``/a/app``, ``/a-app`` and ``/a.app`` share one). It is renamed as a
whole when nothing in it must stay behind and the target does not exist; otherwise its entries move
one by one into the target ("merge"), and a session id present on both sides refuses the plan.

A folder is one unit (issue 12 case 6): when it holds a live Claude session (or a file open for
writing) nothing in it is planned and it is named as waiting; a folder shared with another path
(slug collision) is skipped and named with the command that splits it (``--split-shared``). Every
operation carries the folder in its ``session`` (``{"folder": path}``), so apply skips the folder
whole when one of its operations cannot run.
"""
from __future__ import annotations

import functools
import os
import re
from dataclasses import field
from pathlib import Path
from typing import Callable

from histmig.jsonio import jsonl
from histmig.core.diagnostics import RefusedError, Skip, Warning
from histmig.core.livewriters import open_writers
from histmig.toolkit.move.common import FileScan, PathMap, ToolPlan, dir_fingerprint, scan_file, scan_json_file
from histmig.toolkit.move.parallel import scan_all
from histmig.core.paths import SLUG_MAX, claude_slug, is_under, rebase, slug_matches
from histmig.core.plan import Fingerprint, Rename, RmDir
from histmig.core.valueclass import FACTORY, value

_SID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")


def slug_prefix_of(path: str) -> str:
    """What every folder of ``path`` or a path below it starts with."""
    s = claude_slug(path)
    return s[:SLUG_MAX] if len(s) > SLUG_MAX else s


@value
class Entry:
    """A group of folder entries that move together: a session (``<sid>.jsonl`` + ``<sid>/``), or
    one other entry (``memory/``, manifest ``sessions/``, ``sessions-index.json``)."""

    key: str
    names: list[str]
    tool: str
    session: bool
    files: list[str] = field(default_factory=list)   # files to scan for edits
    head_cwd: str | None = None
    pinned: str | None = None                         # why it must stay where it is

    def __init__(self, key: str, names: list[str], tool: str, session: bool, files: list[str] = FACTORY,
                 head_cwd: str | None = None, pinned: str | None = None) -> None:
        self.key = key
        self.names = names
        self.tool = tool
        self.session = session
        self.files = [] if files is FACTORY else files
        self.head_cwd = head_cwd
        self.pinned = pinned


@value
class Folder:
    name: str
    path: str
    entries: list[Entry]
    launch: str | None = None
    shared: list[str] = field(default_factory=list)   # other paths whose sessions it holds (slug collision)

    def __init__(self, name: str, path: str, entries: list[Entry], launch: str | None = None,
                 shared: list[str] = FACTORY) -> None:
        self.name = name
        self.path = path
        self.entries = entries
        self.launch = launch
        self.shared = [] if shared is FACTORY else shared


# ---- reading a folder -----------------------------------------------------------------------

def head_cwd(path: str, *, key: str = "cwd") -> str | None:
    """The first string ``cwd`` in the first lines of a session (the launch directory): the lines
    ``jsonl.head_lines(path, max_lines=50)`` would return, read only up to the first that has one
    (it is almost always line 1; reading the whole head read a third of a move's bytes twice)."""
    return _head(path, key)[0]


def head_cwd_line(path: str, *, key: str = "cwd") -> int | None:
    """The line number :func:`head_cwd` found its value on (for a message)."""
    return _head(path, key)[1]


def _head(path: str, key: str) -> tuple[str | None, int | None]:
    try:
        with jsonl.open_stream(path) as fh:
            for n, line in enumerate(jsonl.iter_lines(fh, chunk_size=64 * 1024), 1):
                obj = line.obj
                if isinstance(obj, dict) and isinstance(obj.get(key), str):
                    return obj[key], n
                if n >= 50 or line.offset + (line.length or 0) >= 256 * 1024:
                    break
    except Exception:  # a broken file has no head cwd; the scan reports it properly
        return None, None
    return None, None


def _jsonl_files(folder: str) -> list[str]:
    out = []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames.sort()
        out += [os.path.join(dirpath, f) for f in sorted(filenames)
                if f.endswith(".jsonl") or f.endswith(".meta.json")]
    return out


def read_folder(path: str, *, tool: str, manifest: bool) -> Folder:
    """Group a folder's entries. ``manifest`` says whether ``sessions/`` holds manifest sessions."""
    names = sorted(os.listdir(path))
    stems = {n[:-6] for n in names if n.endswith(".jsonl")}
    entries: list[Entry] = []
    for n in names:
        full = os.path.join(path, n)
        if n.endswith(".jsonl") and os.path.isfile(full):
            sid = n[:-6]
            group = [n] + ([sid] if sid in names and os.path.isdir(os.path.join(path, sid)) else [])
            files = [full] + (_jsonl_files(os.path.join(path, sid)) if len(group) > 1 else [])
            entries.append(Entry(sid, group, tool, True, files, head_cwd(full)))
        elif n in stems:
            continue  # the side folder of a session, grouped above
        elif os.path.isdir(full) and _SID.match(n):
            entries.append(Entry(n, [n], tool, True, _jsonl_files(full)))   # side folder alone
        elif n == "sessions" and manifest and os.path.isdir(full):
            entries.append(Entry(n, [n], "manifest", False))
        else:
            entries.append(Entry(n, [n], tool, False))
    return Folder(os.path.basename(path), path, entries)


def manifest_cwds(folder: str) -> list[str]:
    """``projectPath`` (else ``cwd``) of each manifest session in ``folder/sessions/``."""
    import orjson
    out = []
    base = os.path.join(folder, "sessions")
    try:
        sids = sorted(os.listdir(base))
    except OSError:
        return out
    for sid in sids:
        try:
            meta = orjson.loads(Path(base, sid, "meta.json").read_bytes())
        except (OSError, orjson.JSONDecodeError):
            continue
        value = meta.get("projectPath") or meta.get("cwd") if isinstance(meta, dict) else None
        if isinstance(value, str):
            out.append(value)
    return out


# ---- deciding -------------------------------------------------------------------------------

def claim(folder: Folder, pm: PathMap, known_paths: list[str], extra_cwds: list[str]) -> str | None:
    """The path this folder is named after if it belongs to the move, else None.

    Sets ``folder.shared`` when the folder also holds sessions of a path outside OLD (a slug
    collision: ``/w/app/sub`` and ``/w/app-sub`` both encode to ``-w-app-sub``)."""
    heads = [(e.files[0] if e.files else None, as_old(e.head_cwd, pm, folder.name))
             for e in folder.entries if e.head_cwd]
    cwds = [c for _, c in heads] + [as_old(c, pm, folder.name) for c in extra_cwds]
    for file, c in heads:
        if file is not None:
            with pm.reading(file, functools.partial(head_cwd_line, file)):   # a refused cwd: named with its file
                pm.covers(c)
    inside = [c for c in cwds if pm.covers(c)]
    outside = sorted({c for c in cwds if not pm.covers(c)})
    if not inside:
        if cwds:
            return None
        named = [p for p in known_paths if slug_matches(folder.name, p)]
        return named[0] if named else None
    folder.shared = outside
    exact = [c for c in inside if slug_matches(folder.name, c)]
    return min(exact or inside, key=len)


def as_old(cwd: str | None, pm: PathMap, name: str) -> str | None:
    """A session already re-pointed to NEW that still lies in OLD's folder (left there by an
    interrupted or partly undone move) counts as OLD's: the move finishes it instead of calling the
    folder shared."""
    if not cwd or pm.covers(cwd) or not is_under(cwd, pm.new):
        return cwd
    for old in pm.olds:
        back = rebase(cwd, pm.new, old)
        if back is not None and slug_matches(name, back):
            return back
    return cwd


def belongs(entry: Entry, folder: Folder, pm: PathMap) -> bool:
    """In a shared folder: the entry is a session of OLD (others, and entries that name no cwd, stay)."""
    if entry.tool == "manifest" and not entry.session:
        return all(pm.covers(as_old(c, pm, folder.name)) for c in manifest_cwds(folder.path))
    return entry.session and pm.covers(as_old(entry.head_cwd, pm, folder.name))


def find_target(root: str, new_launch: str, existing: set[str]) -> str:
    """Folder name for ``new_launch``; for a long path an existing sibling with the same 200-char
    prefix whose sessions record exactly ``new_launch`` is reused (another build's hash)."""
    name = claude_slug(new_launch)
    if len(name) <= SLUG_MAX or name in existing:
        return name
    for other in sorted(existing):
        if other[:SLUG_MAX + 1] == name[:SLUG_MAX + 1] and other != name:
            cwds = {head_cwd(os.path.join(root, other, f)) for f in os.listdir(os.path.join(root, other))
                    if f.endswith(".jsonl")}
            if new_launch in cwds:
                return other
    return name


# ---- planning ------------------------------------------------------------------------------

@value
class FolderJob:
    """One folder of one root, with everything needed to plan its move."""

    folder: Folder
    target: str
    waits: str | None = None        # why the whole folder waits (a live session in it)

    def __init__(self, folder: Folder, target: str, waits: str | None = None) -> None:
        self.folder = folder
        self.target = target
        self.waits = waits


@value(frozen=True)
class FolderRules:
    """How one tool's folders are planned (the keyword arguments of :func:`plan_folders`)."""

    tool: str
    selected: set[str]
    merge: bool
    fields_fn: Callable
    manifest: bool
    known_paths: list[str]
    live_ids: dict[str, tuple[int, str | None]]    # Claude's live registry: sessionId -> (pid, cwd)
    rewrite_content: bool
    by_name: bool
    split_shared: bool = False
    rerun: str = "histmig move OLD NEW --apply"

    def __init__(self, tool: str, selected: set[str], merge: bool, fields_fn: Callable, manifest: bool,
                 known_paths: list[str], live_ids: dict[str, tuple[int, str | None]], rewrite_content: bool,
                 by_name: bool, split_shared: bool = False, rerun: str = 'histmig move OLD NEW --apply') -> None:
        object.__setattr__(self, "tool", tool)
        object.__setattr__(self, "selected", selected)
        object.__setattr__(self, "merge", merge)
        object.__setattr__(self, "fields_fn", fields_fn)
        object.__setattr__(self, "manifest", manifest)
        object.__setattr__(self, "known_paths", known_paths)
        object.__setattr__(self, "live_ids", live_ids)
        object.__setattr__(self, "rewrite_content", rewrite_content)
        object.__setattr__(self, "by_name", by_name)
        object.__setattr__(self, "split_shared", split_shared)
        object.__setattr__(self, "rerun", rerun)


def plan_folders(root: Path, pm: PathMap, plans: dict[str, ToolPlan], **kw) -> None:
    """Plan edits and renames for every folder of ``root`` that belongs to the move."""
    rules = FolderRules(**kw)
    if not root.is_dir():
        return
    existing = {e.name for e in os.scandir(root) if e.is_dir(follow_symlinks=False)}
    jobs: list[FolderJob] = []
    for name in sorted(existing):
        if rules.by_name and not any(name.startswith(slug_prefix_of(o)) for o in pm.olds):
            continue  # (mini-cc's own slug rule is unpublished: there every folder is read)
        path = str(root / name)
        folder = read_folder(path, tool=rules.tool, manifest=rules.manifest)
        launch = claim(folder, pm, rules.known_paths, manifest_cwds(path) if rules.manifest else [])
        if launch is None:
            continue
        folder.launch = launch
        if folder.shared and not rules.split_shared:
            _wait(plans[rules.tool], Skip(folder.path, _shared_reason(folder, rules), code="slug-collision"))
            continue
        jobs.append(FolderJob(folder, find_target(str(root), pm.rebase(launch), existing)))
    targets: dict[str, str] = {}
    for job in jobs:
        if job.target != job.folder.name and job.target not in existing and job.target in targets:
            raise RefusedError(f"{targets[job.target]} and {job.folder.path} would both become "
                               f"{root / job.target}; refusing, nothing moved")
        targets[job.target] = job.folder.path
    live = _live_check(jobs, rules.live_ids)
    for job in jobs:
        job.waits = (next((why for e in job.folder.entries if (why := live(e))), None)
                     or _live_cwd(job.folder, rules.live_ids))
        if job.waits:
            why = (f"{job.waits}; the folder and every session in it wait (nothing in it is changed); "
                   f"when it ends, re-run: {rules.rerun}")
            _wait(plans[rules.tool], Skip(job.folder.path, why, code="live-folder"))
    jobs = [j for j in jobs if not j.waits]
    scans = _scan_ahead(jobs, pm, rules, live)
    for job in jobs:
        _plan_job(job, root, pm, plans, rules, existing=existing, live=live, scans=scans)


def _wait(tplan: ToolPlan, skip: Skip) -> None:
    """The whole folder stays as it is, named once (the manifest planner skips what lies in it)."""
    tplan.skips.append(skip)
    tplan.waiting[skip.path] = skip.code


def _shared_reason(folder: Folder, rules: FolderRules) -> str:
    ours = sorted({e.head_cwd for e in folder.entries if e.head_cwd} - set(folder.shared))
    return (f"holds sessions of {folder.launch} and of {', '.join(folder.shared)} (the paths encode to the same "
            f"folder name); left in place, everything else moves. To move only the sessions of "
            f"{', '.join(ours) or folder.launch} out of it, run: {rules.rerun.replace(' --apply', ' --split-shared --apply')}")


def _live_cwd(folder: Folder, live_ids: dict[str, tuple[int, str | None]]) -> str | None:
    """A live session started in a path whose history goes to this folder (its transcript may not
    exist yet: Claude creates it at the first message, in the folder of its cwd)."""
    for sid, (pid, cwd) in sorted(live_ids.items()):
        if cwd and slug_matches(folder.name, cwd):
            return f"live Claude Code session {sid} (pid {pid}) runs in {cwd}, whose history goes to this folder"
    return None


def _live_check(jobs: list[FolderJob], live_ids: dict[str, tuple[int, str | None]]) -> Callable[[Entry], str | None]:
    """Why an entry must not be touched now: a live session (registry) or a file open for writing."""
    stats = {}
    for job in jobs:
        for entry in job.folder.entries:
            for f in entry.files:
                try:
                    st = os.stat(f)
                    stats[(st.st_dev, st.st_ino)] = f
                except OSError:
                    pass
    holders = {stats[k]: v for k, v in open_writers(stats).items()}

    def check(entry: Entry) -> str | None:
        if entry.session and entry.key in live_ids:
            return f"live Claude Code session {entry.key} (pid {live_ids[entry.key][0]})"
        for f in entry.files:
            if f in holders:
                return f"{f} is open for writing by {holders[f][0].describe()}"
        return None
    return check


def _scan_ahead(jobs, pm, rules: FolderRules, live) -> dict[str, FileScan]:
    """Every file ``_scan_entry`` will read, scanned up front on all CPUs (``move_parallel``).
    A file after one that makes its entry skip is scanned too and then not used."""
    tasks = []
    for job in jobs:
        for entry in job.folder.entries:
            if entry.tool in rules.selected and entry.tool == rules.tool and not live(entry):
                tasks += [(scan_json_file if f.endswith(".json") else scan_file, (f, pm, rules.fields_fn),
                           {"rewrite_content": rules.rewrite_content}) for f in entry.files]
    return {t[1][0]: s for t, s in zip(tasks, scan_all(tasks))}


def _plan_job(job: FolderJob, root: Path, pm, plans, rules: FolderRules, *, existing, live,
              scans: dict[str, FileScan]) -> None:
    folder, tool = job.folder, rules.tool
    tplan = plans[tool]
    for entry in folder.entries:
        if entry.tool not in rules.selected:
            entry.pinned = f"belongs to {entry.tool}, not selected"
        elif folder.shared and not belongs(entry, folder, pm):
            entry.pinned = f"not a session of {folder.launch} (--split-shared leaves it in the shared folder)"
            if entry.tool == "manifest":     # its meta.json edits must not run either
                tplan.waiting[folder.path] = "split"
        if entry.pinned or entry.tool != tool:
            continue  # manifest sessions: their meta.json edits are planned by the manifest planner
        _scan_entry(entry, pm, tplan, rules, live, scans, folder.path)
    if job.target == folder.name:
        return
    target = str(root / job.target)
    movable = [e for e in folder.entries if not e.pinned]
    if not movable:
        return
    whole = job.target not in existing and len(movable) == len(folder.entries)
    if whole:
        tplan.renames.append(Rename(src=folder.path, dst=target, expect=dir_fingerprint(folder.path),
                                    session=unit(tool, folder.path), reason=f"project folder of {folder.launch}"))
        tplan.count("folders")
        tplan.count("sessions", sum(1 for e in movable if e.session))
        return
    if job.target in existing and not rules.merge:
        raise RefusedError(f"target folder exists: {target}; refusing to merge {tool} folders, nothing moved")
    if folder.shared:
        tplan.warnings.append(Warning("folder-split", f"sessions of {folder.launch} move out of the shared folder "
                                      f"into {target}; entries left in it: {len(folder.entries) - len(movable)}",
                                      path=folder.path))
    _merge(folder, movable, target, plans, tool, emptied=len(movable) == len(folder.entries))


def unit(tool: str, folder: str, sid: str | None = None) -> dict[str, str]:
    """An operation's ``session``: the session (if any) and the project folder it moves with."""
    return {"tool": tool, **({"id": sid} if sid else {}), "folder": folder}


def _scan_entry(entry: Entry, pm, tplan: ToolPlan, rules: FolderRules, live,
                ahead: dict[str, FileScan], folder: str) -> None:
    scans: list[FileScan] = []
    why = live(entry)
    for f in entry.files if not why else []:
        scanner = scan_json_file if f.endswith(".json") else scan_file
        scan = ahead.pop(f, None) or scanner(f, pm, rules.fields_fn, rewrite_content=rules.rewrite_content)
        if scan.skip:
            why = f"{f}: {scan.skip}"
            break
        scans.append(scan)
    if why:
        entry.pinned = why
        tplan.skips.append(Skip(entry.files[0] if entry.files else entry.key, why, "in-use"))
        return
    for scan in scans:
        tplan.add_scan(scan, session=unit(tplan.tool, folder, entry.key if entry.session else None),
                       reason="project move")


def _merge(folder: Folder, movable: list[Entry], target: str, plans, tool: str, *, emptied: bool) -> None:
    """Move entries one by one into ``target`` (which exists, or something must stay behind).
    When every entry leaves, the emptied folder is removed after the last move (``RmDir``)."""
    tplan = plans[tool]
    for entry in movable:
        for name in entry.names:
            src, dst = os.path.join(folder.path, name), os.path.join(target, name)
            if os.path.lexists(dst):
                if entry.session:
                    raise RefusedError(f"session {entry.key} exists in both {folder.path} and {target}; "
                                       "a session id must live in one folder only; nothing moved")
                emptied = _merge_dir(src, dst, plans[entry.tool], unit(tool, folder.path)) and emptied
                continue
            plans[entry.tool].renames.append(Rename(src=src, dst=dst, expect=_fp(src, plans[entry.tool]),
                                                    session=unit(tool, folder.path, entry.key if entry.session else None),
                                                    reason="merge into existing project folder"))
        if entry.session:
            tplan.count("sessions")
    tplan.count("folders-merged")
    if emptied:
        tplan.cleanup.append(RmDir(path=folder.path, expect=dir_fingerprint(folder.path),
                                   session=unit(tool, folder.path), reason=f"emptied by the merge into {target}"))
    what = "the emptied folder is removed" if emptied else "entries that stay keep the folder"
    if not folder.shared:           # a split is reported as such (folder-split)
        tplan.warnings.append(Warning("folder-merged", f"merged into existing {target}; {what}", path=folder.path))


def _merge_dir(src: str, dst: str, tplan: ToolPlan, session: dict[str, str]) -> bool:
    """``memory/`` or manifest ``sessions/`` present on both sides: move what is missing, refuse
    same-named entries that differ. True when everything moved (then ``src`` is removed too)."""
    if not (os.path.isdir(src) and os.path.isdir(dst)) or os.path.islink(src) or os.path.islink(dst):
        tplan.warnings.append(Warning("left-behind", f"{os.path.basename(src)} exists in the target too; "
                                      "left in place", path=src))
        return False
    everything = True
    for name in sorted(os.listdir(src)):
        s, d = os.path.join(src, name), os.path.join(dst, name)
        if not os.path.lexists(d):
            tplan.renames.append(Rename(src=s, dst=d, expect=_fp(s, tplan), session=session,
                                        reason="merge into existing project folder"))
        elif os.path.isfile(s) and os.path.isfile(d) and Path(s).read_bytes() == Path(d).read_bytes():
            tplan.warnings.append(Warning("left-behind", "identical file already in the target; left in place", path=s))
            everything = False
        else:
            raise RefusedError(f"{s} and {d} both exist and differ; refusing to merge, nothing moved")
    if everything:
        tplan.cleanup.append(RmDir(path=src, expect=dir_fingerprint(src), session=session,
                                   reason=f"emptied by the merge into {dst}"))
    return everything


def _fp(path: str, tplan: ToolPlan) -> Fingerprint:
    """A folder keeps its inode; a file rewritten earlier in the same plan gets a new one, so only
    its device is expected here (the WriteFile before it carries the full fingerprint)."""
    if os.path.isdir(path):
        return dir_fingerprint(path)
    if any(getattr(w, "path", None) == path for w in tplan.writes):
        return Fingerprint(dev=os.lstat(path).st_dev)
    return Fingerprint.of(path, with_hash=False)
